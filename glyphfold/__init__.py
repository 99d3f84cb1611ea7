"""glyphfold: keep long LLM-agent conversations inside the model's context window.

Public names are resolved lazily from the explicit table below, so that
``import glyphfold`` stays cheap (history-only users never import numba).
"""

from __future__ import annotations

import importlib
from typing import Any

from glyphfold.errors import (
    ConflictError,
    ContextOverflowError,
    EncodeError,
    FontNotFoundError,
    GlyphfoldError,
    HistoryFormatError,
    InputError,
    LayoutError,
    NotFoundError,
    StoreError,
    UnknownProfileError,
    UnknownShapeError,
)

__version__ = "0.1.0"

# public name -> module that defines it (explicit registry, no import side effects)
_LAZY: dict[str, str] = {
    "render_text": "glyphfold.render.api",
    "RenderResult": "glyphfold.render.api",
    "Profile": "glyphfold.render.profiles",
    "get_profile": "glyphfold.render.profiles",
    "profile_names": "glyphfold.render.profiles",
    # history core (compaction/: messages, turns, validate, events, ...)
    "History": "glyphfold.compaction.history.messages",
    "to_canonical": "glyphfold.compaction.history.messages",
    "to_wire": "glyphfold.compaction.history.messages",
    "segment_turns": "glyphfold.compaction.history.turns",
    "sweep_orphans": "glyphfold.compaction.history.turns",
    "validate_history": "glyphfold.compaction.history.validate",
    "HistoryTrimmed": "glyphfold.compaction.history.events",
    "EventBus": "glyphfold.compaction.history.events",
    "subscribe": "glyphfold.compaction.history.events",
    "estimate_history_tokens": "glyphfold.compaction.history.tokens",
    "TokenCounter": "glyphfold.compaction.history.tokens",
    "HeuristicCounter": "glyphfold.compaction.history.tokens",
    "TiktokenCounter": "glyphfold.compaction.history.tokens",
    "BpeCounter": "glyphfold.compaction.history.tokens",
    "effective_context_budget": "glyphfold.compaction.history.budget",
    "BudgetConfig": "glyphfold.compaction.history.budget",
    "check_fits": "glyphfold.compaction.history.budget",
    "trim_history": "glyphfold.compaction.history.trim",
    "trim_to_recent_turns": "glyphfold.compaction.history.trim",
    "trim_to_recent_turn_count": "glyphfold.compaction.history.trim",
    "trim_conversation_to_recent_turns": "glyphfold.compaction.history.trim",
    "recover_from_overflow": "glyphfold.compaction.history.trim",
    "is_context_overflow_error": "glyphfold.compaction.history.overflow",
    "EvictingHistory": "glyphfold.compaction.history.evict",
    "LoopGuard": "glyphfold.compaction.history.loop",
    "bound_tool_result": "glyphfold.compaction.history.turns",
    "convert_history": "glyphfold.compaction.history.convert",
    "prepare_request": "glyphfold.compaction.history.request",
    "open_store": "glyphfold.compaction.store",
    "compact": "glyphfold.compaction.ladder.api",
    "recover": "glyphfold.compaction.ladder.api",
    "shake": "glyphfold.compaction.ladder.api",
    "CompactionResult": "glyphfold.compaction.ladder.result",
    "LadderConfig": "glyphfold.compaction.ladder.registry",
    "provider_messages": "glyphfold.compaction.ladder.provider",
    "acompact": "glyphfold.compaction.ladder.aio",
    "arecover": "glyphfold.compaction.ladder.aio",
    "ashake": "glyphfold.compaction.ladder.aio",
    "RequestCounter": "glyphfold.compaction.history.counters",
    "EstimateRequestCounter": "glyphfold.compaction.history.counters",
    "AnthropicRequestCounter": "glyphfold.compaction.history.counters",
    "OpenAIRequestCounter": "glyphfold.compaction.history.counters",
    "GeminiRequestCounter": "glyphfold.compaction.history.counters",
    "BedrockRequestCounter": "glyphfold.compaction.history.counters",
    "calibrated_budget": "glyphfold.compaction.history.counters",
    "detect_format": "glyphfold.compaction.history.messages",
    "FORMATS": "glyphfold.compaction.history.messages",
    # named glyph shapes and the bundled pixel fonts
    "Shape": "glyphfold.render.shapes",
    "get_shape": "glyphfold.render.shapes",
    "shape_names": "glyphfold.render.shapes",
    "bundled_fonts": "glyphfold.fonts.pixel",
    "warm_up": "glyphfold.render.warm",
}

__all__ = [
    "ConflictError",
    "ContextOverflowError",
    "EncodeError",
    "FontNotFoundError",
    "GlyphfoldError",
    "HistoryFormatError",
    "InputError",
    "LayoutError",
    "NotFoundError",
    "StoreError",
    "UnknownProfileError",
    "UnknownShapeError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        msg = f"module 'glyphfold' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
