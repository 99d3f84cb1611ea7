"""The wire formats, one module each, and the one table that names them.

Each format module provides ``parse_message(i, m)``, ``serialise_message(m)``,
``signals(m)`` (role or keys only that format uses) and the content part types only
it uses; :data:`WIRE_FORMATS` maps the names of :mod:`~glyphfold.compaction.history.model`
to them. A format whose canonical message is not one wire entry (Responses items: a
run of assistant-side items is one canonical message) also provides
``parse_messages(entries)`` and ``serialise_messages(messages)``. The envelope
fields say where a dict request body keeps its messages and its system prompt.
Adding a format = one module + one row here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from glyphfold.compaction.history.model import (
    ANTHROPIC,
    BEDROCK,
    FORMATS,
    GEMINI,
    OPENAI,
    RESPONSES,
    Message,
)
from glyphfold.compaction.history.wire import anthropic, bedrock, gemini, openai, responses
from glyphfold.errors import HistoryFormatError

__all__ = [
    "WIRE_FORMATS",
    "WireFormat",
    "envelope_format",
    "message_signal",
    "messages_key",
    "parse_entries",
    "serialise_entries",
    "unpriced_keys_of",
    "wire_format",
]


def _never(_: Mapping[str, Any]) -> bool:
    return False


def _no_system_check(_: Any) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class WireFormat:
    """How one wire format parses, serialises and is recognised."""

    name: str
    parse_message: Callable[[int, Any], Message]
    serialise_message: Callable[[Message], Any]
    signals: Callable[[Mapping[str, Any]], bool]
    part_types: frozenset[str]
    # the dict envelope (a request body): where the messages and the system prompt live
    messages_key: str = "messages"
    system_keys: tuple[str, ...] = ("system",)  # () : system prompts are messages (OpenAI)
    envelope_signal: Callable[[Mapping[str, Any]], bool] = _never
    check_system: Callable[[Any], str | None] = _no_system_check  # the problem, or None
    # whole-list parsing/serialising, for formats whose messages span several entries
    parse_messages: Callable[[Sequence[Any]], tuple[Message, ...]] | None = None
    serialise_messages: Callable[[Sequence[Message]], list[Any]] | None = None
    label: str = field(default="")  # human name for errors and docs
    # the keys a message's wire dicts send beyond what its blocks price (None: the
    # estimate's own key sets, made for Chat Completions and Anthropic, apply)
    unpriced_keys: Callable[[Message], list[str]] | None = None


WIRE_FORMATS: dict[str, WireFormat] = {
    OPENAI: WireFormat(
        OPENAI,
        openai.parse_message,
        openai.serialise_message,
        openai.signals,
        openai.PART_TYPES,
        system_keys=(),
        label="OpenAI Chat Completions",
    ),
    ANTHROPIC: WireFormat(
        ANTHROPIC,
        anthropic.parse_message,
        anthropic.serialise_message,
        anthropic.signals,
        anthropic.BLOCK_TYPES,
        envelope_signal=anthropic.envelope_signal,
        check_system=anthropic.check_system,
        label="Anthropic Messages",
    ),
    RESPONSES: WireFormat(
        RESPONSES,
        responses.parse_message,
        responses.serialise_message,
        responses.signals,
        responses.PART_TYPES,
        messages_key="input",
        system_keys=("instructions",),
        envelope_signal=responses.envelope_signal,
        check_system=responses.check_system,
        parse_messages=responses.parse_messages,
        serialise_messages=responses.serialise_messages,
        unpriced_keys=responses.unpriced_keys,
        label="OpenAI Responses",
    ),
    GEMINI: WireFormat(
        GEMINI,
        gemini.parse_message,
        gemini.serialise_message,
        gemini.signals,
        frozenset(),
        messages_key="contents",
        system_keys=("system_instruction", "systemInstruction"),
        envelope_signal=gemini.envelope_signal,
        check_system=gemini.check_system,
        parse_messages=gemini.parse_messages,
        serialise_messages=gemini.serialise_messages,
        unpriced_keys=gemini.unpriced_keys,
        label="Gemini contents",
    ),
    BEDROCK: WireFormat(
        BEDROCK,
        bedrock.parse_message,
        bedrock.serialise_message,
        bedrock.signals,
        frozenset(),
        envelope_signal=bedrock.envelope_signal,
        check_system=bedrock.check_system,
        parse_messages=bedrock.parse_messages,
        serialise_messages=bedrock.serialise_messages,
        unpriced_keys=bedrock.unpriced_keys,
        label="Bedrock Converse",
    ),
}
assert tuple(WIRE_FORMATS) == FORMATS, "every format name needs its module"
_ORDER = tuple(WIRE_FORMATS.values())
# envelopes are told apart by their most specific keys first
_ENVELOPE_ORDER = (RESPONSES, GEMINI, BEDROCK, ANTHROPIC)


def wire_format(name: str) -> WireFormat:
    """The wire format called ``name``; HistoryFormatError for an unknown name."""
    try:
        return WIRE_FORMATS[name]
    except KeyError:
        msg = f"unknown wire format {name!r}; expected one of {', '.join(FORMATS)}"
        raise HistoryFormatError(msg) from None


def envelope_format(history: Mapping[str, Any]) -> str | None:
    """Which format a dict envelope (request body) can only belong to, or None."""
    for name in _ENVELOPE_ORDER:
        if WIRE_FORMATS[name].envelope_signal(history):
            return name
    return None


def messages_key(history: Mapping[str, Any]) -> str | None:
    """The key under which a dict envelope keeps its messages (None: no known key)."""
    for key in ("messages", "input", "contents"):
        if key in history:
            return key
    return None


def parse_entries(fmt: WireFormat, entries: Sequence[Any]) -> tuple[Message, ...]:
    """Parse the wire entries of a history with format ``fmt``."""
    if fmt.parse_messages is not None:
        return fmt.parse_messages(entries)
    parse = fmt.parse_message
    return tuple([parse(i, m) for i, m in enumerate(entries)])


def serialise_entries(fmt: WireFormat, messages: Sequence[Message]) -> list[Any]:
    """The wire entries of canonical ``messages`` in format ``fmt``."""
    if fmt.serialise_messages is not None:
        return fmt.serialise_messages(messages)
    ser = fmt.serialise_message
    return [ser(m) for m in messages]


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


def unpriced_keys_of(m: Message) -> Callable[[Message], list[str]] | None:
    """The format's own key pricing for ``m`` (judged by its wire dict), or None."""
    name = message_signal(m.raw) if m.raw is not None else None
    return WIRE_FORMATS[name].unpriced_keys if name is not None else None
