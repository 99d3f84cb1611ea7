"""The canonical chat-history model: blocks, messages, histories, and the format names.

Wire formats (``wire/``) parse into this model and serialise back from it; every
function of the history core, the ladder and the store works on it. The model is
lossless: every block and message keeps its original dict in ``raw`` so unknown
keys and block types are carried through untouched, and an unchanged message keeps
its very wire dict (``Message._wire``), returned as-is by serialisation (SPEC §2.5).

To change a message, build a new one (``dataclasses.replace(msg, blocks=...)``):
a replaced message loses its identity fast path and is re-serialised from its
blocks, still carrying the unknown keys of ``raw``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from glyphfold.checks import check_choice
from glyphfold.compaction.history.images import b64_image_size

__all__ = [
    "ANTHROPIC",
    "BEDROCK",
    "BLOCK_TYPES",
    "EMPTY",
    "FORMATS",
    "GEMINI",
    "OPENAI",
    "RESPONSES",
    "TOOL_MESSAGE_FORMATS",
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
    "make_call",
    "make_message",
    "make_result",
    "make_text",
    "message_text",
    "new_message",
]

# The wire-format names: the one place they are spelled (wire/ maps each to its module).
OPENAI = "openai"  # Chat Completions messages
ANTHROPIC = "anthropic"  # Messages API
RESPONSES = "responses"  # OpenAI Responses API input items
GEMINI = "gemini"  # google-genai contents/parts
BEDROCK = "bedrock"  # Bedrock Converse messages
FORMATS: tuple[str, ...] = (OPENAI, ANTHROPIC, RESPONSES, GEMINI, BEDROCK)
Format: TypeAlias = Literal["openai", "anthropic", "responses", "gemini", "bedrock"]
# Formats whose tool results are canonical ``tool`` messages right after the calling
# assistant message (the others answer calls in the next user message).
TOOL_MESSAGE_FORMATS: frozenset[str] = frozenset({OPENAI, RESPONSES})
Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


class FrozenMapping(Mapping[str, Any]):
    """A read-only, hashable mapping (usable as a dataclass default)."""

    __slots__ = ("_d",)
    _d: dict[str, Any]

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


EMPTY: Mapping[str, Any] = FrozenMapping()


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
            size = b64_image_size(self.data)
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
    meta: Mapping[str, Any] = field(default=EMPTY, compare=False, repr=False)
    # The wire dict this message was parsed from, returned as-is by to_wire.
    # init=False so dataclasses.replace() drops it: a changed message re-serialises.
    _wire: Any = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:  # the check inline: this runs for every message
            check_choice("Message role", self.role, ROLES, error=ValueError)
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
    def has_images(self) -> bool:
        """True when :attr:`images` is not empty (without building it)."""
        for b in self.blocks:
            if isinstance(b, Image):
                return True
            if isinstance(b, ToolResult):
                for c in b.content:
                    if isinstance(c, Image):
                        return True
        return False

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


def make_text(text: str, raw: Mapping[str, Any] | None) -> Text:
    """A Text without __init__ checks (parsing builds ~one block per message)."""
    t = _new(Text)
    _set(t, "text", text)
    _set(t, "raw", raw)
    return t


def make_message(role: str, blocks: tuple[Block, ...], raw: Any) -> Message:
    """A Message parsed from the wire dict ``raw`` (kept as its identity fast path)."""
    m = _new(Message)
    _set(m, "role", role)
    _set(m, "blocks", blocks)
    _set(m, "raw", raw)
    _set(m, "meta", EMPTY)
    _set(m, "_wire", raw)
    return m


def make_call(cid: str, name: str, arguments: Any, raw: Any) -> ToolCall:
    """A ToolCall without __init__ checks (for the wire parsers)."""
    c = _new(ToolCall)
    _set(c, "id", cid)
    _set(c, "name", name)
    _set(c, "arguments", arguments)
    _set(c, "raw", raw)
    return c


def make_result(cid: str, content: tuple[Block, ...], is_error: bool, raw: Any) -> ToolResult:
    """A ToolResult without __init__ checks (for the wire parsers)."""
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
    return Message(role, blocks, meta=FrozenMapping(meta) if meta else EMPTY)


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
    extra: Mapping[str, Any] = field(default=EMPTY, compare=False, repr=False)
    meta: Mapping[str, Any] = field(default=EMPTY, compare=False, repr=False)
    _wire: Any = field(default=None, init=False, compare=False, repr=False)
    # the steps of ``messages`` (history/steps.py), found once: the messages never change
    # and every rung splits the same history again (init=False: replace() drops it)
    _steps: Any = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_choice("History format", self.format, FORMATS, error=ValueError)
        check_choice("History envelope", self.envelope, ("list", "dict"), error=ValueError)
        if self.envelope == "list" and self.format != OPENAI and self.system is not None:
            msg = f"a {self.format} history with a system prompt needs envelope='dict'"
            raise ValueError(msg)
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))

    def replace_messages(self, messages: Sequence[Message]) -> History:
        """A copy with other messages (same format, system, envelope, extra keys)."""
        return dataclasses.replace(self, messages=tuple(messages))

    @property
    def system_text(self) -> str:
        """The top-level system prompt as text ("" when absent or OpenAI).

        Anthropic ``system`` (a string or text blocks), Responses ``instructions``,
        Gemini ``system_instruction`` (a string, a Content dict or parts) and Bedrock
        ``system`` (a list of ``{"text": ...}`` blocks).
        """
        return _system_text(self.system)

    def __len__(self) -> int:
        return len(self.messages)


def _system_text(s: Any) -> str:
    if s is None:
        return ""
    if isinstance(s, str):
        return s
    if isinstance(s, Mapping):
        if "parts" in s:  # a Gemini Content dict
            return _system_text(s["parts"])
        if "content" in s:  # a Responses message item
            return _system_text(s["content"])
        t = s.get("text")
        return t if isinstance(t, str) else ""
    if isinstance(s, list | tuple):
        # markers (a Bedrock cachePoint block) carry no text and add no line
        return "\n".join(
            _system_text(b)
            for b in s
            if isinstance(b, str)
            or (isinstance(b, Mapping) and ("text" in b or "parts" in b or "content" in b))
        )
    return ""
