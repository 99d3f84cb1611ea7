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
    "History": "glyphfold.compaction.messages",
    "to_canonical": "glyphfold.compaction.messages",
    "to_wire": "glyphfold.compaction.messages",
    "segment_turns": "glyphfold.compaction.turns",
    "sweep_orphans": "glyphfold.compaction.turns",
    "validate_history": "glyphfold.compaction.validate",
    "HistoryTrimmed": "glyphfold.compaction.events",
    "EventBus": "glyphfold.compaction.events",
    "subscribe": "glyphfold.compaction.events",
    "estimate_history_tokens": "glyphfold.compaction.tokens",
    "TokenCounter": "glyphfold.compaction.tokens",
    "HeuristicCounter": "glyphfold.compaction.tokens",
    "TiktokenCounter": "glyphfold.compaction.tokens",
    "BpeCounter": "glyphfold.compaction.tokens",
    "effective_context_budget": "glyphfold.compaction.budget",
    "BudgetConfig": "glyphfold.compaction.budget",
    "check_fits": "glyphfold.compaction.budget",
    "trim_history": "glyphfold.compaction.trim",
    "trim_to_recent_turns": "glyphfold.compaction.trim",
    "trim_to_recent_turn_count": "glyphfold.compaction.trim",
    "trim_conversation_to_recent_turns": "glyphfold.compaction.trim",
    "recover_from_overflow": "glyphfold.compaction.trim",
    "is_context_overflow_error": "glyphfold.compaction.overflow",
    "EvictingHistory": "glyphfold.compaction.evict",
    "LoopGuard": "glyphfold.compaction.loop",
    "bound_tool_result": "glyphfold.compaction.turns",
    "convert_history": "glyphfold.compaction.convert",
    "prepare_request": "glyphfold.compaction.request",
    "open_store": "glyphfold.compaction.store",
    "compact": "glyphfold.compaction.ladder",
    "recover": "glyphfold.compaction.ladder",
    "shake": "glyphfold.compaction.ladder",
    "CompactionResult": "glyphfold.compaction.ladder",
    "LadderConfig": "glyphfold.compaction.ladder",
    "provider_messages": "glyphfold.compaction.ladder",
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
