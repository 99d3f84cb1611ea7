"""glyphfold: keep long LLM-agent conversations inside the model's context window.

Public names are resolved lazily from the explicit table below, so that
``import glyphfold`` stays cheap (history-only users never import numba).
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from glyphfold.errors import (
    AmbiguousFormatError,
    ConflictError,
    ContextOverflowError,
    CorruptStoreError,
    EncodeError,
    FontNotFoundError,
    GlyphfoldError,
    HistoryFormatError,
    InputError,
    LayoutError,
    LockTimeoutError,
    NotFoundError,
    StoreError,
    SummarizerError,
    TokenizerUnavailableError,
    UnknownProfileError,
    UnknownShapeError,
)

if TYPE_CHECKING:  # the real names for type checkers; at run time they load lazily
    from glyphfold.compaction.history.breakdown import (
        RoleTokens,
        TokenBreakdown,
        token_breakdown,
    )
    from glyphfold.compaction.history.budget import (
        BudgetConfig,
        check_fits,
        effective_context_budget,
        recovery_target,
    )
    from glyphfold.compaction.history.convert import convert_history
    from glyphfold.compaction.history.counters import (
        AnthropicRequestCounter,
        BedrockRequestCounter,
        EstimateRequestCounter,
        GeminiRequestCounter,
        OpenAIRequestCounter,
        RequestCounter,
        calibrated_budget,
    )
    from glyphfold.compaction.history.events import (
        CheckpointDropped,
        EventBus,
        HistoryTrimmed,
        MessagesEvicted,
        OrphansSwept,
        OverflowRecovery,
        SummaryFailed,
        subscribe,
    )
    from glyphfold.compaction.history.evict import EvictingHistory
    from glyphfold.compaction.history.loop_guard import LoopGuard
    from glyphfold.compaction.history.messages import detect_format, to_canonical, to_wire
    from glyphfold.compaction.history.model import FORMATS, History
    from glyphfold.compaction.history.overflow import is_context_overflow_error
    from glyphfold.compaction.history.request import prepare_request
    from glyphfold.compaction.history.tokens import (
        BpeCounter,
        HeuristicCounter,
        TiktokenCounter,
        TokenCounter,
        estimate_history_tokens,
    )
    from glyphfold.compaction.history.trim import (
        recover_from_overflow,
        trim_conversation_to_recent_turns,
        trim_history,
        trim_to_recent_turn_count,
        trim_to_recent_turns,
    )
    from glyphfold.compaction.history.turns import (
        bound_tool_result,
        repair_orphans,
        segment_turns,
        sweep_orphans,
    )
    from glyphfold.compaction.history.validate import validate_history
    from glyphfold.compaction.ladder.aio import acompact, arecover, ashake
    from glyphfold.compaction.ladder.api import compact, floor_tokens, recover, shake
    from glyphfold.compaction.ladder.compactor import Compactor, Fitted, needs_compaction
    from glyphfold.compaction.ladder.provider import provider_messages
    from glyphfold.compaction.ladder.registry import LadderConfig
    from glyphfold.compaction.ladder.result import CompactionResult
    from glyphfold.compaction.ladder.rungs.elide import ElideConfig
    from glyphfold.compaction.ladder.rungs.snapshot import SnapshotConfig
    from glyphfold.compaction.ladder.rungs.strip_images import StripConfig
    from glyphfold.compaction.ladder.rungs.summary import SummaryConfig
    from glyphfold.compaction.store import open_store
    from glyphfold.fonts.pixel import bundled_fonts
    from glyphfold.render.api import PageStream, RenderResult, iter_pages, render_text
    from glyphfold.render.options import RenderOptions
    from glyphfold.render.profiles import Profile, get_profile, profile_names
    from glyphfold.render.shapes import Shape, get_shape, shape_names
    from glyphfold.render.warm import warm_up

__version__ = "0.2.0"

# the library's log records (one per compaction, the kernels' compile notice) stay silent
# unless the application configures logging (docs/integrations.md, "Observability")
logging.getLogger("glyphfold").addHandler(logging.NullHandler())

# public name -> module that defines it (explicit registry, no import side effects)
_LAZY: dict[str, str] = {
    "render_text": "glyphfold.render.api",
    "iter_pages": "glyphfold.render.api",
    "PageStream": "glyphfold.render.api",
    "RenderOptions": "glyphfold.render.options",
    "RenderResult": "glyphfold.render.api",
    "Profile": "glyphfold.render.profiles",
    "get_profile": "glyphfold.render.profiles",
    "profile_names": "glyphfold.render.profiles",
    # history core (compaction/: messages, turns, validate, events, ...)
    "History": "glyphfold.compaction.history.model",
    "to_canonical": "glyphfold.compaction.history.messages",
    "to_wire": "glyphfold.compaction.history.messages",
    "segment_turns": "glyphfold.compaction.history.turns",
    "sweep_orphans": "glyphfold.compaction.history.turns",
    "repair_orphans": "glyphfold.compaction.history.turns",
    "validate_history": "glyphfold.compaction.history.validate",
    "HistoryTrimmed": "glyphfold.compaction.history.events",
    "OrphansSwept": "glyphfold.compaction.history.events",
    "MessagesEvicted": "glyphfold.compaction.history.events",
    "OverflowRecovery": "glyphfold.compaction.history.events",
    "SummaryFailed": "glyphfold.compaction.history.events",
    "CheckpointDropped": "glyphfold.compaction.history.events",
    "EventBus": "glyphfold.compaction.history.events",
    "subscribe": "glyphfold.compaction.history.events",
    "estimate_history_tokens": "glyphfold.compaction.history.tokens",
    "token_breakdown": "glyphfold.compaction.history.breakdown",
    "TokenBreakdown": "glyphfold.compaction.history.breakdown",
    "RoleTokens": "glyphfold.compaction.history.breakdown",
    "TokenCounter": "glyphfold.compaction.history.tokens",
    "HeuristicCounter": "glyphfold.compaction.history.tokens",
    "TiktokenCounter": "glyphfold.compaction.history.tokens",
    "BpeCounter": "glyphfold.compaction.history.tokens",
    "effective_context_budget": "glyphfold.compaction.history.budget",
    "BudgetConfig": "glyphfold.compaction.history.budget",
    "check_fits": "glyphfold.compaction.history.budget",
    "recovery_target": "glyphfold.compaction.history.budget",
    "trim_history": "glyphfold.compaction.history.trim",
    "trim_to_recent_turns": "glyphfold.compaction.history.trim",
    "trim_to_recent_turn_count": "glyphfold.compaction.history.trim",
    "trim_conversation_to_recent_turns": "glyphfold.compaction.history.trim",
    "recover_from_overflow": "glyphfold.compaction.history.trim",
    "is_context_overflow_error": "glyphfold.compaction.history.overflow",
    "EvictingHistory": "glyphfold.compaction.history.evict",
    "LoopGuard": "glyphfold.compaction.history.loop_guard",
    "bound_tool_result": "glyphfold.compaction.history.turns",
    "convert_history": "glyphfold.compaction.history.convert",
    "prepare_request": "glyphfold.compaction.history.request",
    "open_store": "glyphfold.compaction.store",
    "compact": "glyphfold.compaction.ladder.api",
    "Compactor": "glyphfold.compaction.ladder.compactor",
    "Fitted": "glyphfold.compaction.ladder.compactor",
    "needs_compaction": "glyphfold.compaction.ladder.compactor",
    "recover": "glyphfold.compaction.ladder.api",
    "floor_tokens": "glyphfold.compaction.ladder.api",
    "shake": "glyphfold.compaction.ladder.api",
    "CompactionResult": "glyphfold.compaction.ladder.result",
    "LadderConfig": "glyphfold.compaction.ladder.registry",
    "ElideConfig": "glyphfold.compaction.ladder.rungs.elide",
    "StripConfig": "glyphfold.compaction.ladder.rungs.strip_images",
    "SnapshotConfig": "glyphfold.compaction.ladder.rungs.snapshot",
    "SummaryConfig": "glyphfold.compaction.ladder.rungs.summary",
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
    "FORMATS": "glyphfold.compaction.history.model",
    # named glyph shapes and the bundled pixel fonts
    "Shape": "glyphfold.render.shapes",
    "get_shape": "glyphfold.render.shapes",
    "shape_names": "glyphfold.render.shapes",
    "bundled_fonts": "glyphfold.fonts.pixel",
    "warm_up": "glyphfold.render.warm",
}

# a literal list: type checkers read it to know what the package exports
__all__ = [
    "FORMATS",
    "AmbiguousFormatError",
    "AnthropicRequestCounter",
    "BedrockRequestCounter",
    "BpeCounter",
    "BudgetConfig",
    "CheckpointDropped",
    "CompactionResult",
    "Compactor",
    "ConflictError",
    "ContextOverflowError",
    "CorruptStoreError",
    "ElideConfig",
    "EncodeError",
    "EstimateRequestCounter",
    "EventBus",
    "EvictingHistory",
    "Fitted",
    "FontNotFoundError",
    "GeminiRequestCounter",
    "GlyphfoldError",
    "HeuristicCounter",
    "History",
    "HistoryFormatError",
    "HistoryTrimmed",
    "InputError",
    "LadderConfig",
    "LayoutError",
    "LockTimeoutError",
    "LoopGuard",
    "MessagesEvicted",
    "NotFoundError",
    "OpenAIRequestCounter",
    "OrphansSwept",
    "OverflowRecovery",
    "PageStream",
    "Profile",
    "RenderOptions",
    "RenderResult",
    "RequestCounter",
    "RoleTokens",
    "Shape",
    "SnapshotConfig",
    "StoreError",
    "StripConfig",
    "SummarizerError",
    "SummaryConfig",
    "SummaryFailed",
    "TiktokenCounter",
    "TokenBreakdown",
    "TokenCounter",
    "TokenizerUnavailableError",
    "UnknownProfileError",
    "UnknownShapeError",
    "__version__",
    "acompact",
    "arecover",
    "ashake",
    "bound_tool_result",
    "bundled_fonts",
    "calibrated_budget",
    "check_fits",
    "compact",
    "convert_history",
    "detect_format",
    "effective_context_budget",
    "estimate_history_tokens",
    "floor_tokens",
    "get_profile",
    "get_shape",
    "is_context_overflow_error",
    "iter_pages",
    "needs_compaction",
    "open_store",
    "prepare_request",
    "profile_names",
    "provider_messages",
    "recover",
    "recover_from_overflow",
    "recovery_target",
    "render_text",
    "repair_orphans",
    "segment_turns",
    "shake",
    "shape_names",
    "subscribe",
    "sweep_orphans",
    "to_canonical",
    "to_wire",
    "token_breakdown",
    "trim_conversation_to_recent_turns",
    "trim_history",
    "trim_to_recent_turn_count",
    "trim_to_recent_turns",
    "validate_history",
    "warm_up",
]


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there

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
