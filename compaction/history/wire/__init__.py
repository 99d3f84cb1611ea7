"""The wire formats, one module each, and the one table that names them.

Each format module provides ``parse_message(i, m)``, ``serialise_message(m)``,
``signals(m)`` (role or keys only that format uses) and the content part types only
it uses; :data:`WIRE_FORMATS` maps the names of :mod:`~glyphfold.compaction.history.model`
to them. Adding a format = one module + one row here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from glyphfold.compaction.history.model import ANTHROPIC, FORMATS, OPENAI, Message
from glyphfold.compaction.history.wire import anthropic, openai

from glyphfold.errors import HistoryFormatError

__all__ = ["WIRE_FORMATS", "WireFormat", "message_signal", "wire_format"]


@dataclass(frozen=True, slots=True)
class WireFormat:
    """How one wire format parses, serialises and is recognised."""

    name: str
    parse_message: Callable[[int, Any], Message]
    serialise_message: Callable[[Message], dict[str, Any]]
    signals: Callable[[Mapping[str, Any]], bool]
    part_types: frozenset[str]


WIRE_FORMATS: dict[str, WireFormat] = {
    OPENAI: WireFormat(
        OPENAI, openai.parse_message, openai.serialise_message, openai.signals, openai.PART_TYPES
    ),
    ANTHROPIC: WireFormat(
        ANTHROPIC,
        anthropic.parse_message,
        anthropic.serialise_message,
        anthropic.signals,
        anthropic.BLOCK_TYPES,
    ),
}
assert tuple(WIRE_FORMATS) == FORMATS, "every format name needs its module"
_ORDER = tuple(WIRE_FORMATS.values())


def wire_format(name: str) -> WireFormat:
    """The wire format called ``name``; HistoryFormatError for an unknown name."""
    try:
        return WIRE_FORMATS[name]
    except KeyError:
        msg = f"unknown wire format {name!r}; expected one of {', '.join(FORMATS)}"
        raise HistoryFormatError(msg) from None


def message_signal(m: Any) -> str | None:
    """Which format a single message dict can only belong to, or None when neutral."""
    if type(m) is not dict and not isinstance(m, Mapping):
        return None
    for fmt in _ORDER:
        if fmt.signals(m):
            return fmt.name
    content = m.get("content")
    if type(content) is list:
        for part in content:
            if type(part) is dict or isinstance(part, Mapping):
                t = part.get("type")
                if type(t) is not str:
                    continue
                for fmt in _ORDER:
                    if t in fmt.part_types:
                        return fmt.name
    return None
