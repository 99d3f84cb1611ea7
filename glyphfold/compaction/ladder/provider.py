"""The history as a provider accepts it: glyphfold's ``x_glyphfold`` keys removed."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.markers import X_KEY
from glyphfold.compaction.history.messages import HistoryT
from glyphfold.compaction.history.model import History, Message
from glyphfold.compaction.history.wire import messages_key
from glyphfold.errors import InputError

__all__ = ["provider_messages"]


def provider_messages(history: HistoryT) -> HistoryT:
    """The history as a provider accepts it: ``x_glyphfold`` keys removed, same kind.

    Compaction output keeps snapshot sources under ``x_glyphfold`` so the next pass
    can re-render from text (docs/ladder.md); providers reject unknown keys, so strip
    them right before sending.
    """
    stripped: HistoryT = _strip_history(history)
    return stripped


def _strip_history(history: Any) -> Any:
    if isinstance(history, History):
        return history.replace_messages([_strip_message(m) for m in history.messages])
    wire = history
    if isinstance(wire, Mapping):
        key = messages_key(wire) or "messages"  # messages, input (Responses), contents (Gemini)
        out = {k: v for k, v in wire.items() if k != X_KEY}
        out[key] = [_strip_dict(m) for m in wire[key]]
        return out
    if isinstance(wire, list):
        return [_strip_dict(m) for m in wire]
    msg = f"history must be a list, a dict or a History, got {type(history).__name__}"
    raise InputError(msg)


def _strip_dict(m: Any) -> Any:
    if isinstance(m, Mapping) and X_KEY in m:
        return {k: v for k, v in m.items() if k != X_KEY}
    return m


def _strip_message(m: Message) -> Message:
    if m.raw is None or X_KEY not in m.raw:
        return m
    raw = {k: v for k, v in m.raw.items() if k != X_KEY}
    return Message(m.role, m.blocks, raw=MappingProxyType(raw), meta=m.meta)
