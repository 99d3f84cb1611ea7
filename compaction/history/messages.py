"""Canonical chat-history model and the OpenAI / Anthropic wire adapters.

Every public function of the history core and of the ladder accepts either a
*wire* history (what users already have: a list of message dicts, or for
Anthropic also ``{"system": ..., "messages": [...]}``) or a canonical
:class:`History`, and returns the kind it was given. :func:`coerce` is the one
helper that does this.

The conversion is lossless: every block and message keeps its original dict in
``raw`` so unknown keys (``cache_control``, ``name``, ``refusal``...) and unknown
block types (``thinking``, ``document``, ``input_audio``...) are carried through
untouched. A message that was not replaced comes back out as the very same dict
object; a history that nothing changed comes back out as the very same
container (SPEC §2.5).

To change a message, build a new one (``dataclasses.replace(msg, blocks=...)``):
a replaced message loses its identity fast path and is re-serialised from its
blocks, still carrying the unknown keys of ``raw``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from glyphfold.errors import HistoryFormatError

__all__ = [
    "ANTHROPIC",
    "BLOCK_TYPES",
    "FORMATS",
    "OPENAI",
    "Block",
    "History",
    "Image",
    "Message",
    "Text",
    "ToolCall",
    "ToolResult",
    "Unknown",
    "coerce",
    "detect_format",
    "image_size",
    "message_text",
    "new_message",
    "to_canonical",
    "to_wire",
]

OPENAI = "openai"
ANTHROPIC = "anthropic"
FORMATS = (OPENAI, ANTHROPIC)
Format: TypeAlias = Literal["openai", "anthropic"]


class _FrozenMapping(Mapping[str, Any]):
    """A read-only, hashable mapping (usable as a dataclass default)."""

    __slots__ = ("_d",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_d", dict(data or {}))

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Any:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(self._d))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("read-only mapping")

    def __repr__(self) -> str:
        return f"{{{', '.join(f'{k!r}: {v!r}' for k, v in self._d.items())}}}"


_EMPTY: Mapping[str, Any] = _FrozenMapping()

# wire role -> canonical role
_OPENAI_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
_ANTHROPIC_ROLES = {"user": "user", "assistant": "assistant"}


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True, slots=True)
class Text:
    """A run of text. ``raw`` is the original part/block dict (None for string content)."""

    text: str
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Image:
    """An image: inline base64 ``data`` or a ``url``; size read from the header when inline."""

    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    width: int | None = None
    height: int | None = None
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            msg = "Image needs exactly one of data= (base64) or url=, got " + (
                "both" if self.data is not None else "neither"
            )
            raise ValueError(msg)
        if self.data is not None and self.width is None and self.height is None:
            size = _b64_image_size(self.data)
            if size is not None:
                object.__setattr__(self, "width", size[0])
                object.__setattr__(self, "height", size[1])

    @property
    def data_url(self) -> str:
        """The image as a URL (``data:`` URL when inline)."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type or 'image/png'};base64,{self.data}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call; ``arguments`` is the wire value: JSON string (OpenAI) or dict (Anthropic)."""

    id: str
    name: str
    arguments: Any = None
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of the tool call ``call_id``; ``content`` is a tuple of blocks."""

    call_id: str
    content: tuple[Block, ...] = ()
    is_error: bool = False
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Unknown:
    """A block type glyphfold does not interpret; carried through byte for byte."""

    raw: Any


Block: TypeAlias = Text | Image | ToolCall | ToolResult | Unknown
BLOCK_TYPES = (Text, Image, ToolCall, ToolResult, Unknown)


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Message:
    """One message: canonical ``role`` (system/user/assistant/tool) and a tuple of blocks.

    ``raw`` is the original wire dict (unknown keys are carried from it); ``meta``
    is free for callers (the ladder, the store) and never serialised.
    """

    role: str
    blocks: tuple[Block, ...] = ()
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    meta: Mapping[str, Any] = field(default=_EMPTY, compare=False, repr=False)
    # The wire dict this message was parsed from, returned as-is by to_wire.
    # init=False so dataclasses.replace() drops it: a changed message re-serialises.
    _wire: Any = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant", "tool"):
            msg = f"Message role must be one of system/user/assistant/tool, got {self.role!r}"
            raise ValueError(msg)
        if not isinstance(self.blocks, tuple):
            object.__setattr__(self, "blocks", tuple(self.blocks))

    @property
    def text(self) -> str:
        """All text of the message (text blocks and tool-result text), newline-joined."""
        return message_text(self)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls this message makes."""
        return tuple(b for b in self.blocks if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """The tool results this message carries."""
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @property
    def images(self) -> tuple[Image, ...]:
        """Images of the message, including those nested in tool results."""
        out: list[Image] = []
        for b in self.blocks:
            if isinstance(b, Image):
                out.append(b)
            elif isinstance(b, ToolResult):
                out.extend(c for c in b.content if isinstance(c, Image))
        return tuple(out)


_new = object.__new__
_set = object.__setattr__


def _mk_text(text: str, raw: Mapping[str, Any] | None) -> Text:
    # parsing builds ~one block per message: skip __init__ (values are already checked)
    t = _new(Text)
    _set(t, "text", text)
    _set(t, "raw", raw)
    return t


def _mk_message(role: str, blocks: tuple[Block, ...], raw: Any) -> Message:
    m = _new(Message)
    _set(m, "role", role)
    _set(m, "blocks", blocks)
    _set(m, "raw", raw)
    _set(m, "meta", _EMPTY)
    _set(m, "_wire", raw)
    return m


def _mk_call(cid: str, name: str, arguments: Any, raw: Any) -> ToolCall:
    c = _new(ToolCall)
    _set(c, "id", cid)
    _set(c, "name", name)
    _set(c, "arguments", arguments)
    _set(c, "raw", raw)
    return c


def _mk_result(cid: str, content: tuple[Block, ...], is_error: bool, raw: Any) -> ToolResult:
    r = _new(ToolResult)
    _set(r, "call_id", cid)
    _set(r, "content", content)
    _set(r, "is_error", is_error)
    _set(r, "raw", raw)
    return r


def message_text(message: Message) -> str:
    """Concatenate the text of a message (text blocks and tool-result text)."""
    parts: list[str] = []
    for b in message.blocks:
        if isinstance(b, Text):
            parts.append(b.text)
        elif isinstance(b, ToolResult):
            parts.extend(c.text for c in b.content if isinstance(c, Text))
    return "\n".join(parts)


def new_message(role: str, content: str | Sequence[Block] = "", **meta: Any) -> Message:
    """Build a new canonical message from a string or blocks (for the ladder and tests)."""
    blocks = (Text(content),) if isinstance(content, str) else tuple(content)
    return Message(role, blocks, meta=_FrozenMapping(meta) if meta else _EMPTY)


@dataclass(frozen=True, slots=True)
class History:
    """A chat history in canonical form.

    ``format`` is the wire format it came from and goes back to. ``system`` is the
    Anthropic top-level system prompt exactly as given (str, list of blocks, or
    None when absent); OpenAI keeps system messages inside ``messages``.
    ``envelope`` is ``"list"`` or ``"dict"``; ``extra`` holds the other top-level
    keys of a dict envelope (model, tools, max_tokens...), carried through.
    """

    format: str
    messages: tuple[Message, ...] = ()
    system: Any = None
    envelope: str = "list"
    extra: Mapping[str, Any] = field(default=_EMPTY, compare=False, repr=False)
    meta: Mapping[str, Any] = field(default=_EMPTY, compare=False, repr=False)
    _wire: Any = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            msg = f"History format must be one of {FORMATS}, got {self.format!r}"
            raise ValueError(msg)
        if self.envelope not in ("list", "dict"):
            msg = f"History envelope must be 'list' or 'dict', got {self.envelope!r}"
            raise ValueError(msg)
        if self.envelope == "list" and self.format == ANTHROPIC and self.system is not None:
            msg = "an Anthropic history with a system prompt needs envelope='dict'"
            raise ValueError(msg)
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))

    def replace_messages(self, messages: Sequence[Message]) -> History:
        """A copy with other messages (same format, system, envelope, extra keys)."""
        return dataclasses.replace(self, messages=tuple(messages))

    @property
    def system_text(self) -> str:
        """The Anthropic top-level system prompt as text ("" when absent or OpenAI)."""
        s = self.system
        if s is None:
            return ""
        if isinstance(s, str):
            return s
        return "\n".join(b.get("text", "") for b in s if isinstance(b, Mapping))

    def __len__(self) -> int:
        return len(self.messages)


# --------------------------------------------------------------------------- image headers


def image_size(data: bytes) -> tuple[int, int] | None:
    """Return (width, height) read from a PNG, JPEG, GIF or WebP header, or None."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        kind = data[12:16]
        if kind == b"VP8X":
            w = int.from_bytes(data[24:27], "little") + 1
            h = int.from_bytes(data[27:30], "little") + 1
            return w, h
        if kind == b"VP8 ":
            return (
                int.from_bytes(data[26:28], "little") & 0x3FFF,
                int.from_bytes(data[28:30], "little") & 0x3FFF,
            )
        if kind == b"VP8L" and len(data) >= 25:
            b = data[21:25]
            w = 1 + (((b[1] & 0x3F) << 8) | b[0])
            h = 1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
            return w, h
        return None
    if data[:2] == b"\xff\xd8":
        i = 2
        n = len(data)
        while i + 9 < n:
            if data[i] != 0xFF:
                return None
            marker = data[i + 1]
            if marker == 0xFF:  # fill byte
                i += 1
                continue
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            seg_len = int.from_bytes(data[i + 2 : i + 4], "big")
            # SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h = int.from_bytes(data[i + 5 : i + 7], "big")
                w = int.from_bytes(data[i + 7 : i + 9], "big")
                return w, h
            i += 2 + seg_len
        return None
    return None


# JPEG frame headers usually sit within the first few KB (after EXIF); decode no more.
_HEADER_B64_CHARS = 64 * 1024


def _b64_image_size(data: str) -> tuple[int, int] | None:
    head = data[:_HEADER_B64_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        return image_size(base64.b64decode(head, validate=False))
    except (binascii.Error, ValueError):
        return None


def _parse_data_url(url: str) -> tuple[str | None, str | None]:
    """Split a ``data:`` URL into (media_type, base64 data); (None, None) if not one."""
    if not url.startswith("data:"):
        return None, None
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        return None, None
    return header[5:-7] or None, payload


# --------------------------------------------------------------------------- format detection

_OPENAI_PART_TYPES = {"image_url", "input_audio", "file", "refusal", "input_text"}
_ANTHROPIC_BLOCK_TYPES = {
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "server_tool_use",
    "web_search_tool_result",
    "search_result",
    "container_upload",
    "mcp_tool_use",
    "mcp_tool_result",
}


def _message_signal(m: Any) -> str | None:
    """Which format a single message dict can only belong to, or None when neutral."""
    if type(m) is not dict and not isinstance(m, Mapping):
        return None
    role = m.get("role")
    if role in ("system", "developer", "tool", "function"):
        return OPENAI
    if "tool_calls" in m or "tool_call_id" in m or "function_call" in m:
        return OPENAI
    content = m.get("content")
    if type(content) is list:
        for part in content:
            if type(part) is dict or isinstance(part, Mapping):
                t = part.get("type")
                if type(t) is not str:
                    continue
                if t in _OPENAI_PART_TYPES:
                    return OPENAI
                if t in _ANTHROPIC_BLOCK_TYPES:
                    return ANTHROPIC
    return None


def detect_format(history: Any) -> str:
    """Detect the wire format of a history; raise HistoryFormatError if mixed or malformed."""
    if isinstance(history, History):
        return history.format
    messages, top_signal = _unwrap(history)
    found: str | None = top_signal
    found_at: int | None = None
    for i, m in enumerate(messages):
        s = _message_signal(m)
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


def _fail(i: int, problem: str) -> HistoryFormatError:
    return HistoryFormatError(f"message {i}: {problem}", index=i)


def _parse_openai_part(i: int, part: Any) -> Block:
    if (type(part) is not dict and not isinstance(part, Mapping)) or type(
        part.get("type")
    ) is not str:
        raise _fail(i, f"content part must be a dict with a 'type', got {part!r:.80}")
    t = part["type"]
    if t == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise _fail(i, "text part needs a string 'text'")
        return _mk_text(text, part)
    if t == "image_url":
        iu = part.get("image_url")
        url = iu.get("url") if isinstance(iu, Mapping) else iu
        if not isinstance(url, str):
            raise _fail(i, "image_url part needs image_url.url (a string)")
        media_type, data = _parse_data_url(url)
        if data is not None:
            return Image(media_type, data=data, raw=part)
        return Image(None, url=url, raw=part)
    return Unknown(part)


def _parse_openai_content(i: int, content: Any, *, allow_none: bool) -> tuple[Block, ...]:
    if content is None:
        if allow_none:
            return ()
        raise _fail(i, "content is null; it must be a string or a list of parts")
    if type(content) is str:
        return (_mk_text(content, None),) if content else ()
    if type(content) is list:
        return tuple([_parse_openai_part(i, p) for p in content])
    raise _fail(i, f"content must be a string or a list of parts, got {type(content).__name__}")


def _parse_openai(i: int, m: Any) -> Message:
    if type(m) is not dict and not isinstance(m, Mapping):
        raise _fail(i, f"a message must be a dict, got {type(m).__name__}")
    wire_role = m.get("role")
    role = _OPENAI_ROLES.get(wire_role) if isinstance(wire_role, str) else None
    if role is None:
        raise _fail(
            i,
            f"unknown OpenAI role {wire_role!r}; expected one of {sorted(_OPENAI_ROLES)}",
        )
    if role == "tool":
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _fail(i, "a tool message needs a non-empty string 'tool_call_id'")
        content = _parse_openai_content(i, m.get("content"), allow_none=True)
        blocks: tuple[Block, ...] = (_mk_result(call_id, content, False, None),)
    else:
        blocks = _parse_openai_content(i, m.get("content"), allow_none=(role == "assistant"))
        calls = m.get("tool_calls")
        if calls is not None:
            if role != "assistant":
                raise _fail(i, f"only assistant messages may carry tool_calls, not {wire_role}")
            if not isinstance(calls, list):
                raise _fail(i, "tool_calls must be a list")
            parsed: list[Block] = []
            for c in calls:
                fn = c.get("function") if isinstance(c, Mapping) else None
                cid = c.get("id") if isinstance(c, Mapping) else None
                if not isinstance(cid, str) or not cid or not isinstance(fn, Mapping):
                    raise _fail(i, f"tool call needs a string 'id' and a 'function', got {c!r:.80}")
                name = fn.get("name")
                if not isinstance(name, str):
                    raise _fail(i, f"tool call {cid!r} needs function.name (a string)")
                parsed.append(_mk_call(cid, name, fn.get("arguments"), c))
            blocks = blocks + tuple(parsed)
    return _mk_message(role, blocks, m)


def _parse_anthropic_block(i: int, b: Any, *, nested: bool = False) -> Block:
    if (type(b) is not dict and not isinstance(b, Mapping)) or type(b.get("type")) is not str:
        raise _fail(i, f"content block must be a dict with a 'type', got {b!r:.80}")
    t = b["type"]
    if t == "text":
        text = b.get("text")
        if not isinstance(text, str):
            raise _fail(i, "text block needs a string 'text'")
        return _mk_text(text, b)
    if t == "image":
        src = b.get("source")
        if not isinstance(src, Mapping):
            raise _fail(i, "image block needs a 'source' dict")
        st = src.get("type")
        if st == "base64":
            data = src.get("data")
            if not isinstance(data, str):
                raise _fail(i, "base64 image source needs a string 'data'")
            return Image(src.get("media_type"), data=data, raw=b)
        if st == "url" and isinstance(src.get("url"), str):
            return Image(None, url=src["url"], raw=b)
        return Unknown(b)  # file ids and future source kinds pass through
    if t == "tool_use" and not nested:
        cid, name = b.get("id"), b.get("name")
        if not isinstance(cid, str) or not cid or not isinstance(name, str):
            raise _fail(i, "tool_use block needs a string 'id' and 'name'")
        return _mk_call(cid, name, b.get("input"), b)
    if t == "tool_result" and not nested:
        cid = b.get("tool_use_id")
        if not isinstance(cid, str) or not cid:
            raise _fail(i, "tool_result block needs a string 'tool_use_id'")
        c = b.get("content")
        if c is None:
            content: tuple[Block, ...] = ()
        elif type(c) is str:
            content = (_mk_text(c, None),) if c else ()
        elif isinstance(c, list):
            content = tuple([_parse_anthropic_block(i, x, nested=True) for x in c])
        else:
            raise _fail(i, "tool_result content must be a string or a list of blocks")
        return _mk_result(cid, content, bool(b.get("is_error", False)), b)
    return Unknown(b)


def _parse_anthropic(i: int, m: Any) -> Message:
    if type(m) is not dict and not isinstance(m, Mapping):
        raise _fail(i, f"a message must be a dict, got {type(m).__name__}")
    wire_role = m.get("role")
    role = _ANTHROPIC_ROLES.get(wire_role) if isinstance(wire_role, str) else None
    if role is None:
        hint = (
            " (put system prompts in the top-level 'system' key)" if wire_role == "system" else ""
        )
        raise _fail(i, f"unknown Anthropic role {wire_role!r}; expected user or assistant{hint}")
    c = m.get("content")
    if type(c) is str:
        blocks: tuple[Block, ...] = (_mk_text(c, None),) if c else ()
    elif isinstance(c, list):
        blocks = tuple([_parse_anthropic_block(i, b) for b in c])
        wrong = ToolResult if role == "assistant" else ToolCall
        for b in blocks:
            if type(b) is wrong:
                where = (
                    "tool_use blocks belong in assistant"
                    if wrong is ToolCall
                    else ("tool_result blocks belong in user")
                )
                raise _fail(i, f"{where} messages")
    else:
        raise _fail(i, f"content must be a string or a list of blocks, got {type(c).__name__}")
    return _mk_message(role, blocks, m)


def _parse_auto(
    history: Any, messages: Sequence[Any], top_signal: str | None
) -> tuple[str, tuple[Message, ...]]:
    """Detect and parse in one pass (the common case); fall back to two passes on a switch."""
    guess = top_signal or (ANTHROPIC if isinstance(history, Mapping) else OPENAI)
    established = top_signal
    parse = _parse_openai if guess == OPENAI else _parse_anthropic
    out: list[Message] = []
    signal = _message_signal
    for i, m in enumerate(messages):
        s = signal(m)
        if s is not None and s != established:
            if established is not None or s != guess:
                # mixed history (detect_format raises naming the index), or the
                # guess was wrong: parse again with the detected format
                fmt = detect_format(history)
                reparse = _parse_openai if fmt == OPENAI else _parse_anthropic
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
        parse = _parse_openai if fmt == OPENAI else _parse_anthropic
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
        meta = _FrozenMapping({"_system_key": True}) if "system" in history else _EMPTY
        h = History(fmt, parsed, system, "dict", extra, meta)
    else:
        h = History(fmt, parsed)
    object.__setattr__(h, "_wire", history)
    return h


# --------------------------------------------------------------------------- serialising


def _text_to_openai(b: Text) -> dict[str, Any]:
    out = dict(b.raw) if b.raw is not None else {}
    out["type"] = "text"
    out["text"] = b.text
    return out


def _image_to_openai(b: Image) -> dict[str, Any]:
    if b.raw is not None and b.raw.get("type") == "image_url":
        out = dict(b.raw)
        iu = out.get("image_url")
        old_url = iu if isinstance(iu, str) else iu.get("url") if isinstance(iu, Mapping) else None
        url = b.data_url
        # unchanged image: keep its URL byte for byte (e.g. a data URL without media type)
        if isinstance(old_url, str) and (
            old_url == b.url or _parse_data_url(old_url) == (b.media_type, b.data)
        ):
            url = old_url
        if isinstance(iu, str):  # the shorthand form some clients send
            out["image_url"] = url
            return out
        iu = dict(iu) if isinstance(iu, Mapping) else {}
        iu["url"] = url
        out["image_url"] = iu
        return out
    return {"type": "image_url", "image_url": {"url": b.data_url}}


def _block_to_openai_part(b: Block) -> Any:
    if isinstance(b, Text):
        return _text_to_openai(b)
    if isinstance(b, Image):
        return _image_to_openai(b)
    if isinstance(b, Unknown):
        return b.raw
    msg = f"{type(b).__name__} cannot be an OpenAI content part"
    raise HistoryFormatError(msg)


def _openai_content(blocks: Sequence[Block], raw_content: Any, *, has_raw: bool, empty: Any) -> Any:
    if not blocks:
        if has_raw and (raw_content is None or raw_content == "" or raw_content == []):
            return raw_content
        return empty
    if (
        len(blocks) == 1
        and isinstance(blocks[0], Text)
        and blocks[0].raw is None
        and (not has_raw or isinstance(raw_content, str) or raw_content is None)
    ):
        return blocks[0].text
    return [_block_to_openai_part(b) for b in blocks]


def _message_to_openai(m: Message) -> dict[str, Any]:
    if m._wire is not None:
        return m._wire
    raw = m.raw
    out: dict[str, Any] = dict(raw) if raw is not None else {}
    raw_role = raw.get("role") if raw is not None else None
    out["role"] = raw_role if _OPENAI_ROLES.get(raw_role) == m.role else m.role
    has_raw = raw is not None and "content" in raw
    raw_content = raw.get("content") if raw is not None else None
    if m.role == "tool":
        results = [b for b in m.blocks if isinstance(b, ToolResult)]
        if len(results) != 1 or len(m.blocks) != 1:
            msg = "an OpenAI tool message holds exactly one ToolResult block"
            raise HistoryFormatError(msg)
        tr = results[0]
        out["tool_call_id"] = tr.call_id
        if tr.content or has_raw or raw is None:
            out["content"] = _openai_content(tr.content, raw_content, has_raw=has_raw, empty="")
        return out
    calls = [b for b in m.blocks if isinstance(b, ToolCall)]
    content_blocks = [b for b in m.blocks if not isinstance(b, ToolCall)]
    empty = None if (m.role == "assistant" and calls) else ""
    if content_blocks or raw is None or has_raw:
        out["content"] = _openai_content(content_blocks, raw_content, has_raw=has_raw, empty=empty)
    # else: the input had no "content" key and still has no content: keep it absent
    if calls:
        wire_calls = []
        for c in calls:
            wc = dict(c.raw) if c.raw is not None else {"type": "function"}
            fn = dict(wc.get("function") or {})
            fn["name"] = c.name
            if c.arguments is not None:
                fn["arguments"] = c.arguments
            elif c.raw is None:  # a new call: OpenAI requires arguments
                fn["arguments"] = "{}"
            wc["id"] = c.id
            wc["function"] = fn
            wire_calls.append(wc)
        out["tool_calls"] = wire_calls
    elif out.get("tool_calls"):  # every call was removed
        del out["tool_calls"]
    return out


def _block_to_anthropic(b: Block) -> Any:
    if isinstance(b, Text):
        out = dict(b.raw) if b.raw is not None else {}
        out["type"] = "text"
        out["text"] = b.text
        return out
    if isinstance(b, Image):
        if b.raw is not None and b.raw.get("type") == "image":
            out = dict(b.raw)
        else:
            out = {"type": "image"}
        raw_src = out.get("source")
        kind = "base64" if b.data is not None else "url"
        src = dict(raw_src) if isinstance(raw_src, Mapping) and raw_src.get("type") == kind else {}
        src["type"] = kind
        if b.data is not None:
            if b.media_type is not None:
                src["media_type"] = b.media_type
            elif b.raw is None:  # a new image: Anthropic requires a media type
                src["media_type"] = "image/png"
            src["data"] = b.data
        else:
            src["url"] = b.url
        out["source"] = src
        return out
    if isinstance(b, ToolCall):
        out = dict(b.raw) if b.raw is not None else {}
        out["type"] = "tool_use"
        out["id"] = b.id
        out["name"] = b.name
        if b.arguments is not None:
            out["input"] = b.arguments
        elif b.raw is None:  # a new call: Anthropic requires input
            out["input"] = {}
        return out
    if isinstance(b, ToolResult):
        out = dict(b.raw) if b.raw is not None else {}
        out["type"] = "tool_result"
        out["tool_use_id"] = b.call_id
        raw_c = b.raw.get("content") if b.raw is not None else None
        has_c = b.raw is not None and "content" in b.raw
        if not b.content:
            if has_c and raw_c in ("", [], None):
                out["content"] = raw_c
            else:
                out.pop("content", None)
        elif (
            len(b.content) == 1
            and isinstance(b.content[0], Text)
            and b.content[0].raw is None
            and (not has_c or isinstance(raw_c, str))
        ):
            out["content"] = b.content[0].text
        else:
            out["content"] = [_block_to_anthropic(c) for c in b.content]
        if b.raw is not None and "is_error" in b.raw and bool(b.raw["is_error"]) == b.is_error:
            pass  # keep the wire value as given (false, null, 0...)
        elif b.is_error or (b.raw is not None and "is_error" in b.raw):
            out["is_error"] = b.is_error
        return out
    if isinstance(b, Unknown):
        return b.raw
    msg = f"not a block: {b!r:.80}"
    raise HistoryFormatError(msg)


def _message_to_anthropic(m: Message) -> dict[str, Any]:
    if m._wire is not None:
        return m._wire
    if m.role not in ("user", "assistant"):
        msg = (
            f"an Anthropic message must be user or assistant, got {m.role!r}; "
            "put system text in History.system"
        )
        raise HistoryFormatError(msg)
    raw = m.raw
    out: dict[str, Any] = dict(raw) if raw is not None else {}
    out["role"] = m.role
    raw_content = raw.get("content") if raw is not None else None
    if not m.blocks:
        out["content"] = raw_content if isinstance(raw_content, str | list) else ""
    elif (
        len(m.blocks) == 1
        and isinstance(m.blocks[0], Text)
        and m.blocks[0].raw is None
        and (raw is None or isinstance(raw_content, str))
    ):
        out["content"] = m.blocks[0].text
    else:
        out["content"] = [_block_to_anthropic(b) for b in m.blocks]
    return out


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
    ser = _message_to_openai if history.format == OPENAI else _message_to_anthropic
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
