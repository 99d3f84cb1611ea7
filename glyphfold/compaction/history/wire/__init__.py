"""The wire formats, one module each, and the one table that names them.

Each format module provides ``parse_message(i, m)``, ``serialise_message(m)``,
``signals(m)`` (role or keys only that format uses) and the content part types only
it uses; :data:`WIRE_FORMATS` maps the names of :mod:`~glyphfold.compaction.history.model`
to them. A format whose canonical message is not one wire entry (Responses items: a
run of assistant-side items is one canonical message) also provides
``parse_messages(entries)`` and ``serialise_messages(messages)``. The envelope
fields say where a dict request body keeps its messages and its system prompt; the
facts below them (which message may come first, whether roles alternate, where the
system prompt sits, how a prompt-cache breakpoint is written, the shape of a text and an
image part) are what the rest of glyphfold asks instead of testing a format's name.
Adding a format = one module + one row here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
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
    "CacheMarker",
    "Envelope",
    "WireFormat",
    "envelope_format",
    "format_of_model",
    "join_envelope",
    "message_signal",
    "messages_key",
    "parse_entries",
    "serialise_entries",
    "split_envelope",
    "unpriced_keys_of",
    "wire_format",
]


def _never(_: Mapping[str, Any]) -> bool:
    return False


def _no_system_check(_: Any) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class CacheMarker:
    """How a format writes a prompt-cache breakpoint on a message."""

    key: str  # the key of the marker ("cache_control", "cachePoint", ...)
    value: Mapping[str, Any]  # its value, copied into the wire as a plain dict
    as_block: bool = False  # True: the marker is a block of its own at the message's end
    # True: place one only when the history already uses explicit markers (the
    # provider's automatic prefix caching needs none)
    explicit_only: bool = False


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
    # -- facts the other modules ask (never ``if fmt == ...``)
    # the system prompt is a message of the list (OpenAI's "system"/"developer" role);
    # False: it sits in the envelope under ``system_keys``
    system_in_messages: bool = False
    user_first: bool = False  # the first non-system message must be a user message
    alternating: bool = False  # user and assistant messages strictly alternate
    # a message with tool calls must come right after a user-side message (Gemini)
    calls_follow_user: bool = False
    cache_marker: CacheMarker | None = None  # None: the format takes no breakpoint
    # model names that speak this format (a plain-text body {"model": ..., "messages":
    # [...]} is detected by them: the shapes alone fit several formats)
    model_prefixes: tuple[str, ...] = ()
    # envelope keys (besides the messages and the system prompt) whose content the
    # provider puts in the model's context and bills: tool schemas, tool configuration
    context_keys: tuple[str, ...] = ()
    # the minimal dict of a text part and of an image part (None: parts have no "type")
    text_part: Mapping[str, Any] | None = None
    image_part: Mapping[str, Any] | None = None

    @property
    def system_key(self) -> str | None:
        """The envelope key a system prompt is written under (None: it is a message)."""
        return self.system_keys[0] if self.system_keys else None

    def can_start(self, m: Message) -> bool:
        """True when a history (after its system prompt) may begin with message ``m``."""
        if m.tool_results:
            return False  # a result without its call
        if self.user_first and m.role != "user":
            return False
        return not (self.calls_follow_user and m.role == "assistant" and bool(m.tool_calls))


_EPHEMERAL: Mapping[str, Any] = MappingProxyType({"type": "ephemeral"})


WIRE_FORMATS: dict[str, WireFormat] = {
    OPENAI: WireFormat(
        OPENAI,
        openai.parse_message,
        openai.serialise_message,
        openai.signals,
        openai.PART_TYPES,
        system_keys=(),
        label="OpenAI Chat Completions",
        system_in_messages=True,
        model_prefixes=("gpt-", "chatgpt-", "o1", "o3", "o4"),
        context_keys=("tools", "functions", "response_format"),
        cache_marker=CacheMarker("cache_control", _EPHEMERAL, explicit_only=True),
        text_part=MappingProxyType({"type": "text"}),
        image_part=MappingProxyType({"type": "image_url", "image_url": {}}),
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
        user_first=True,
        alternating=True,
        model_prefixes=("claude",),
        context_keys=("tools",),
        cache_marker=CacheMarker("cache_control", _EPHEMERAL),
        text_part=MappingProxyType({"type": "text"}),
        image_part=MappingProxyType({"type": "image"}),
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
        context_keys=("tools", "text"),
        cache_marker=CacheMarker(
            "prompt_cache_breakpoint", MappingProxyType({"mode": "explicit"}), explicit_only=True
        ),
        text_part=MappingProxyType({"type": "input_text"}),
        image_part=MappingProxyType({"type": "input_image"}),
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
        calls_follow_user=True,
        context_keys=("tools", "tool_config", "toolConfig"),
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
        user_first=True,
        alternating=True,
        context_keys=("toolConfig",),
        cache_marker=CacheMarker(
            "cachePoint", MappingProxyType({"type": "default"}), as_block=True
        ),
    ),
}
assert tuple(WIRE_FORMATS) == FORMATS, "every format name needs its module"
_ORDER = tuple(WIRE_FORMATS.values())
# content part type -> the first format (in _ORDER) whose parts have it
_PART_OWNER: dict[str, str] = {}
for _f in _ORDER:
    for _t in _f.part_types:
        _PART_OWNER.setdefault(_t, _f.name)
# the keys dict envelopes keep their messages under, in the rows' order
_MESSAGES_KEYS = tuple(dict.fromkeys(f.messages_key for f in _ORDER))
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


def format_of_model(model: Any, messages_key: str = "messages") -> str | None:
    """The format a request for ``model`` under ``messages_key`` speaks (None: unknown)."""
    if not isinstance(model, str):
        return None
    name = model.lower().rpartition("/")[2]  # "openai/gpt-4o" (gateways) -> "gpt-4o"
    for f in _ORDER:
        if f.messages_key == messages_key and name.startswith(f.model_prefixes or ("\0",)):
            return f.name
    return None


def messages_key(history: Mapping[str, Any]) -> str | None:
    """The key under which a dict envelope keeps its messages (None: no known key)."""
    for key in _MESSAGES_KEYS:
        if key in history:
            return key
    return None


@dataclass(frozen=True, slots=True)
class Envelope:
    """A history split into its messages and its system prompt, and where each sat."""

    messages: list[Any]
    format: str | None  # the format the container alone says (None: a list, or plain text)
    messages_key: str | None  # None: a bare list
    system_key: str | None  # the key the system prompt was found under (None: no prompt)
    system: Any = None


def split_envelope(history: Any) -> Envelope:
    """The messages and system prompt of a wire history: a list or any format's dict."""
    if not isinstance(history, Mapping):
        return Envelope(list(history), None, None, None)
    key = messages_key(history)
    if key is None:
        msg = (
            f"a dict history needs one of the keys {', '.join(map(repr, _MESSAGES_KEYS))} "
            f"(its messages), got keys {sorted(map(str, history))!r}"
        )
        raise HistoryFormatError(msg)
    messages = history[key]
    if key == "input" and isinstance(messages, str):  # Responses: input="text"
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list | tuple):
        msg = f"{key!r} must be a list, got {type(messages).__name__}"
        raise HistoryFormatError(msg)
    fmt = envelope_format(history)
    if fmt is None:  # plain text: only the messages key can tell ('messages' is shared)
        owners = [f.name for f in _ORDER if f.messages_key == key]
        fmt = owners[0] if len(owners) == 1 else None
    rows = [WIRE_FORMATS[fmt]] if fmt is not None else _ORDER
    for row in rows:
        if row.messages_key != key:
            continue
        for skey in row.system_keys:
            if skey in history:
                return Envelope(list(messages), fmt, key, skey, history[skey])
    return Envelope(list(messages), fmt, key, None)


def join_envelope(
    fmt: str | None, messages: list[Any], system: Any = None, *, with_system: bool = False
) -> Any:
    """The wire history of ``messages``: a list, or the format's dict when there is a system
    prompt to carry (under the format's own key)."""
    if not with_system:
        return messages
    row = WIRE_FORMATS[fmt] if fmt is not None else WIRE_FORMATS[ANTHROPIC]
    if row.system_key is None:
        msg = f"{row.label} keeps its system prompt as a message, not in an envelope key"
        raise HistoryFormatError(msg)
    return {row.system_key: system, row.messages_key: messages}


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
        owner = _PART_OWNER.get
        for part in content:
            if type(part) is dict or isinstance(part, Mapping):
                t = part.get("type")
                if type(t) is str:
                    name = owner(t)
                    if name is not None:
                        return name
    return None


def unpriced_keys_of(m: Message) -> Callable[[Message], list[str]] | None:
    """The format's own key pricing for ``m`` (judged by its wire dict), or None."""
    name = message_signal(m.raw) if m.raw is not None else None
    return WIRE_FORMATS[name].unpriced_keys if name is not None else None
