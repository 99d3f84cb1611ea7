"""The history model and the one way in and out of it: detect, parse, serialise, coerce.

Every public function of the history core and of the ladder accepts either a
*wire* history (what users already have: a list of message dicts, or for
Anthropic also ``{"system": ..., "messages": [...]}``) or a canonical
:class:`History`, and returns the kind it was given. :func:`coerce` is the one
helper that does this. The model lives in :mod:`~glyphfold.compaction.history.model`
(re-exported here), each wire format in :mod:`~glyphfold.compaction.history.wire`.

The conversion is lossless: unknown keys (``cache_control``, ``name``, ``refusal``...)
and unknown block types (``thinking``, ``document``, ``input_audio``...) are carried
through untouched. A message that was not replaced comes back out as the very same
dict object; a history that nothing changed comes back out as the very same
container (SPEC §2.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.images import image_size
from glyphfold.compaction.history.model import (
    ANTHROPIC,
    BLOCK_TYPES,
    EMPTY,
    FORMATS,
    OPENAI,
    Block,
    Format,
    FrozenMapping,
    History,
    Image,
    Message,
    Role,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    message_text,
    new_message,
)
from glyphfold.compaction.history.wire import message_signal, wire_format

from glyphfold.errors import HistoryFormatError

__all__ = [
    "ANTHROPIC",
    "BLOCK_TYPES",
    "EMPTY",
    "FORMATS",
    "OPENAI",
    "Block",
    "Format",
    "FrozenMapping",
    "History",
    "Image",
    "Message",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
    "Unknown",
    "coerce",
    "detect_format",
    "image_size",
    "message_signal",
    "message_text",
    "new_message",
    "parse_message",
    "to_canonical",
    "to_wire",
]


def parse_message(format: str, i: int, m: Any) -> Message:
    """Parse one wire message ``m`` (index ``i``, for errors) of the given format."""
    return wire_format(format).parse_message(i, m)


# --------------------------------------------------------------------------- format detection


def detect_format(history: Any) -> str:
    """Detect the wire format of a history; raise HistoryFormatError if mixed or malformed."""
    if isinstance(history, History):
        return history.format
    messages, top_signal = _unwrap(history)
    found: str | None = top_signal
    found_at: int | None = None
    for i, m in enumerate(messages):
        s = message_signal(m)
        if s is None:
            continue
        if found is None:
            found, found_at = s, i
        elif s != found:
            where = "the top-level 'system' key" if found_at is None else f"message {found_at}"
            msg = (
                f"message {i}: mixed history: this message is {s} format but "
                f"{where} is {found} format; convert it to one format"
            )
            raise HistoryFormatError(msg, index=i)
    # Plain user/assistant text is valid in both formats; a bare list is most
    # often OpenAI Chat Completions, a dict envelope most often Anthropic.
    if found is None:
        found = ANTHROPIC if isinstance(history, Mapping) else OPENAI
    return found


def _unwrap(history: Any) -> tuple[Sequence[Any], str | None]:
    if isinstance(history, Mapping):
        if "messages" not in history:
            msg = (
                "a dict history needs a 'messages' key (Anthropic envelope "
                f"{{'system': ..., 'messages': [...]}}), got keys {sorted(history)!r}"
            )
            raise HistoryFormatError(msg)
        messages = history["messages"]
        if not isinstance(messages, list | tuple):
            msg = f"'messages' must be a list, got {type(messages).__name__}"
            raise HistoryFormatError(msg)
        return messages, (ANTHROPIC if "system" in history else None)
    if isinstance(history, list | tuple):
        return history, None
    msg = (
        "a history must be a list of message dicts, an Anthropic "
        f"{{'system', 'messages'}} dict or a glyphfold History, got {type(history).__name__}"
    )
    raise HistoryFormatError(msg)


# --------------------------------------------------------------------------- parsing


def _parse_auto(
    history: Any, messages: Sequence[Any], top_signal: str | None
) -> tuple[str, tuple[Message, ...]]:
    """Detect and parse in one pass (the common case); fall back to two passes on a switch."""
    guess = top_signal or (ANTHROPIC if isinstance(history, Mapping) else OPENAI)
    established = top_signal
    parse = wire_format(guess).parse_message
    out: list[Message] = []
    signal = message_signal
    for i, m in enumerate(messages):
        s = signal(m)
        if s is not None and s != established:
            if established is not None or s != guess:
                # mixed history (detect_format raises naming the index), or the
                # guess was wrong: parse again with the detected format
                fmt = detect_format(history)
                reparse = wire_format(fmt).parse_message
                return fmt, tuple([reparse(k, x) for k, x in enumerate(messages)])
            established = s
        out.append(parse(i, m))
    return guess, tuple(out)


def to_canonical(history: Any, *, format: str = "auto") -> History:
    """Parse a wire history (or pass a History through) into the canonical model.

    ``format`` is ``"auto"``, ``"openai"`` or ``"anthropic"``. Raises
    :class:`HistoryFormatError` naming the message index for malformed or mixed input.
    """
    if isinstance(history, History):
        if format not in ("auto", history.format):
            msg = f"history is {history.format} format, but format={format!r} was requested"
            raise HistoryFormatError(msg)
        return history
    messages, top_signal = _unwrap(history)
    if format == "auto":
        parsed_list = _parse_auto(history, messages, top_signal)
        fmt = parsed_list[0]
        parsed = parsed_list[1]
    elif format in FORMATS:
        fmt = format
        parse = wire_format(fmt).parse_message
        parsed = tuple([parse(i, m) for i, m in enumerate(messages)])
    else:
        msg = f"format must be 'auto', 'openai' or 'anthropic', got {format!r}"
        raise HistoryFormatError(msg)
    if isinstance(history, Mapping):
        system = history.get("system")
        if fmt == ANTHROPIC and system is not None and not isinstance(system, str | list):
            msg = f"'system' must be a string or a list of text blocks, got {type(system).__name__}"
            raise HistoryFormatError(msg)
        if fmt == OPENAI and "system" in history:
            msg = "an OpenAI history keeps system prompts as messages, not a 'system' key"
            raise HistoryFormatError(msg)
        extra = MappingProxyType(
            {k: v for k, v in history.items() if k not in ("system", "messages")}
        )
        meta = FrozenMapping({"_system_key": True}) if "system" in history else EMPTY
        h = History(fmt, parsed, system, "dict", extra, meta)
    else:
        h = History(fmt, parsed)
    object.__setattr__(h, "_wire", history)
    return h


# --------------------------------------------------------------------------- serialising


def to_wire(history: History) -> list[Any] | dict[str, Any]:
    """Serialise a canonical History back to its wire format (list or dict envelope).

    Unchanged messages come out as the very dicts they were parsed from; an
    unchanged History comes out as the very container it was parsed from.
    """
    if not isinstance(history, History):
        msg = f"to_wire needs a glyphfold History, got {type(history).__name__}"
        raise HistoryFormatError(msg)
    if history._wire is not None:
        return history._wire
    ser = wire_format(history.format).serialise_message
    messages = [ser(m) for m in history.messages]
    if history.envelope == "list":
        return messages
    out: dict[str, Any] = {}
    # an explicit "system": None in the input is carried through like any other key
    if history.system is not None or history.meta.get("_system_key", False):
        out["system"] = history.system
    out.update(history.extra)
    out["messages"] = messages
    return out


# ------------------------------------------------------------------ accept wire or canonical


def coerce(history: Any, *, format: str = "auto") -> tuple[History, Callable[[History], Any]]:
    """Parse ``history`` and return (canonical, restore).

    ``restore(result)`` gives back the kind the caller passed in: a History for a
    History; for wire input the very input object when ``result`` is the
    unchanged parsed History, else ``to_wire(result)``.
    """
    if isinstance(history, History):
        h = to_canonical(history, format=format)
        return h, _identity
    h = to_canonical(history, format=format)

    def restore(result: History) -> Any:
        if result is h:
            return history
        return to_wire(result)

    return h, restore


def _identity(result: History) -> History:
    return result
