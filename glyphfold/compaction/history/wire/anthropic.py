"""Anthropic Messages <-> the canonical model.

A list of user/assistant messages, or the envelope ``{"system": ..., "messages": [...]}``
(other top-level keys carried through). Content a string or a list of blocks
(``text``, ``image``, ``tool_use``, ``tool_result``; every other block type — thinking,
documents, redacted thinking — carried as Unknown). A ``system`` entry inside
``messages`` (some SDKs type one) is accepted as a canonical system message.

MCP and server-tool blocks are tool calls and results too, answered inside the
assistant message that makes them: ``mcp_tool_use``/``server_tool_use`` parse to
ToolCall, ``mcp_tool_result`` and every ``*_tool_result`` of a server tool
(web search, web fetch, code execution...) to ToolResult (their readable text as
Text, encrypted payloads as Unknown, the block as raw), so elision and image
stripping treat them like any tool result. An unchanged server result serialises
byte for byte; an elided one becomes a text block (its call too), since a server
result block only takes the provider's own result shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from glyphfold.compaction.history.model import (
    Block,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    make_call,
    make_message,
    make_result,
    make_text,
)
from glyphfold.compaction.history.wire.base import fail
from glyphfold.errors import HistoryFormatError

__all__ = [
    "BLOCK_TYPES",
    "ROLES",
    "parse_block",
    "parse_message",
    "serialise_block",
    "serialise_message",
    "signals",
]

ROLES = {"user": "user", "assistant": "assistant", "system": "system"}
# tool calls that the assistant message answers itself (results in the same message)
INLINE_CALL_TYPES = frozenset({"mcp_tool_use", "server_tool_use"})
_ENCRYPTED_KEYS = ("encrypted_content", "encrypted_index", "encrypted_stdout")
# block types only Anthropic uses (format detection)
BLOCK_TYPES = frozenset(
    {
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
)


def signals(m: Mapping[str, Any]) -> bool:
    """True when a message's role or keys can only be Anthropic's (content blocks aside)."""
    return False  # Anthropic messages are told apart by their content blocks only


def envelope_signal(history: Mapping[str, Any]) -> bool:
    """A request body with a top-level ``system`` key (Bedrock's is tested first)."""
    return "system" in history and "messages" in history


def check_system(system: Any) -> str | None:
    """The problem with a top-level ``system`` value, or None."""
    if system is None or isinstance(system, str | list):
        return None
    return f"'system' must be a string or a list of text blocks, got {type(system).__name__}"


def is_server_result(b: Mapping[str, Any]) -> bool:
    """A block type that carries a tool result inside the assistant message."""
    t = b.get("type")
    return type(t) is str and t.endswith("_tool_result") and t != "tool_result"


def _texts(x: Any, out: list[str], secret: list[Any], depth: int = 0) -> None:
    """Collect readable strings of a server result; encrypted payloads go to ``secret``."""
    if depth > 8:
        return
    if isinstance(x, str):
        if x:
            out.append(x)
    elif isinstance(x, Mapping):
        for k, v in x.items():
            if k in _ENCRYPTED_KEYS:
                secret.append(v)
            elif k in ("type", "media_type", "tool_use_id", "file_id", "page_age", "citations"):
                continue
            elif k == "source" and isinstance(v, Mapping) and v.get("type") == "base64":
                secret.append(v.get("data"))
            else:
                _texts(v, out, secret, depth + 1)
    elif isinstance(x, list | tuple):
        for v in x:
            _texts(v, out, secret, depth + 1)
    elif isinstance(x, int | float) and not isinstance(x, bool):
        out.append(str(x))


def parse_server_result(i: int, b: Mapping[str, Any]) -> ToolResult:
    """A server tool's result block as a ToolResult (readable text + encrypted payload)."""
    cid = b.get("tool_use_id")
    if not isinstance(cid, str) or not cid:
        raise fail(i, f"{b.get('type')} block needs a string 'tool_use_id'")
    c = b.get("content")
    if b.get("type") == "mcp_tool_result":
        content = _result_content(i, c, "mcp_tool_result")
        return make_result(cid, content, bool(b.get("is_error", False)), b)
    texts: list[str] = []
    secret: list[Any] = []
    _texts(c, texts, secret)
    blocks: list[Block] = [make_text("\n".join(texts), None)] if texts else []
    if secret:
        blocks.append(Unknown({"encrypted": secret}))
    error = isinstance(c, Mapping) and str(c.get("type", "")).endswith("_error")
    return make_result(cid, tuple(blocks), error, b)


# --------------------------------------------------------------------------- parsing


def _parse_image(i: int, b: Mapping[str, Any]) -> Block:
    src = b.get("source")
    if not isinstance(src, Mapping):
        raise fail(i, "image block needs a 'source' dict")
    st = src.get("type")
    if st == "base64":
        data = src.get("data")
        if not isinstance(data, str):
            raise fail(i, "base64 image source needs a string 'data'")
        return Image(src.get("media_type"), data=data, raw=b)
    if st == "url" and isinstance(src.get("url"), str):
        return Image(None, url=src["url"], raw=b)
    return Unknown(b)  # file ids and future source kinds pass through


def _parse_result(i: int, b: Mapping[str, Any]) -> Block:
    cid = b.get("tool_use_id")
    if not isinstance(cid, str) or not cid:
        raise fail(i, "tool_result block needs a string 'tool_use_id'")
    content = _result_content(i, b.get("content"), "tool_result")
    return make_result(cid, content, bool(b.get("is_error", False)), b)


def _result_content(i: int, c: Any, kind: str) -> tuple[Block, ...]:
    """The content of a ``tool_result`` / ``mcp_tool_result``: none, a string or blocks."""
    if c is None:
        return ()
    if type(c) is str:
        return (make_text(c, None),) if c else ()
    if isinstance(c, list):
        return tuple([parse_block(i, x, nested=True) for x in c])
    raise fail(i, f"{kind} content must be a string or a list of blocks")


def parse_block(i: int, b: Any, *, nested: bool = False) -> Block:
    """Parse one content block of message ``i`` (``nested``: inside a tool_result)."""
    # the types by how often they come (every block of a history passes here)
    t = b.get("type") if type(b) is dict or isinstance(b, Mapping) else None
    if type(t) is not str:
        raise fail(i, f"content block must be a dict with a 'type', got {b!r:.80}")
    if t == "text":
        text = b.get("text")
        if type(text) is not str and not isinstance(text, str):
            raise fail(i, "text block needs a string 'text'")
        return make_text(text, b)
    if nested:
        return _parse_image(i, b) if t == "image" else Unknown(b)
    if t == "tool_use" or t in INLINE_CALL_TYPES:
        cid, name = b.get("id"), b.get("name")
        if not isinstance(cid, str) or not cid or not isinstance(name, str):
            raise fail(i, f"{t} block needs a string 'id' and 'name'")
        return make_call(cid, name, b.get("input"), b)
    if t == "tool_result":
        return _parse_result(i, b)
    if t == "image":
        return _parse_image(i, b)
    if is_server_result(b):
        return parse_server_result(i, b)
    return Unknown(b)


def parse_message(i: int, m: Any) -> Message:
    """Parse message ``i`` of an Anthropic history; HistoryFormatError names what is wrong."""
    if type(m) is not dict and not isinstance(m, Mapping):
        raise fail(i, f"a message must be a dict, got {type(m).__name__}")
    wire_role = m.get("role")
    role = ROLES.get(wire_role) if isinstance(wire_role, str) else None
    if role is None:
        raise fail(i, f"unknown Anthropic role {wire_role!r}; expected user or assistant")
    c = m.get("content")
    if type(c) is str:
        blocks: tuple[Block, ...] = (make_text(c, None),) if c else ()
    elif isinstance(c, list):
        blocks = tuple([parse_block(i, b) for b in c])
        _check_sides(i, role, blocks)
    else:
        raise fail(i, f"content must be a string or a list of blocks, got {type(c).__name__}")
    return make_message(role, blocks, m)


def _check_sides(i: int, role: str, blocks: tuple[Block, ...]) -> None:
    """Tool results in user messages, calls in assistant ones (server tools: both in the
    assistant's); one pass over the blocks (parse_block makes exact block types)."""
    if role == "assistant":
        for b in blocks:
            if type(b) is ToolResult and not is_server_result(b.raw or {}):
                raise fail(i, "tool_result blocks belong in user messages")
        return
    call = False
    for b in blocks:
        tb = type(b)
        if tb is ToolResult or tb is ToolCall:
            if _inline(b):  # type: ignore[arg-type]
                raise fail(i, "MCP and server tool blocks belong in assistant messages")
            call = call or tb is ToolCall
    if call:
        raise fail(i, "tool_use blocks belong in assistant messages")


def _inline(b: ToolCall | ToolResult) -> bool:
    raw = b.raw or {}
    return raw.get("type") in INLINE_CALL_TYPES or is_server_result(raw)


# --------------------------------------------------------------------------- serialising


def _image_block(b: Image) -> dict[str, Any]:
    out: dict[str, Any] = (
        dict(b.raw) if b.raw is not None and b.raw.get("type") == "image" else {"type": "image"}
    )
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


def _server_unchanged(b: ToolResult) -> bool:
    return b.raw is not None and parse_server_result(0, b.raw).content == b.content


def _server_result_block(b: ToolResult) -> dict[str, Any]:
    assert b.raw is not None
    if _server_unchanged(b):
        return dict(b.raw)
    if b.raw.get("type") == "mcp_tool_result":
        return _result_block(b, "mcp_tool_result")
    # an elided or stripped server result: its readable text is all that is left
    texts = [c.text for c in b.content if isinstance(c, Text)]
    return {"type": "text", "text": "\n".join(texts) or f"[{b.raw.get('type')} removed]"}


def _result_block(b: ToolResult, kind: str = "tool_result") -> dict[str, Any]:
    out = dict(b.raw) if b.raw is not None else {}
    out["type"] = kind
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
        out["content"] = [serialise_block(c) for c in b.content]
    if b.raw is not None and "is_error" in b.raw and bool(b.raw["is_error"]) == b.is_error:
        pass  # keep the wire value as given (false, null, 0...)
    elif b.is_error or (b.raw is not None and "is_error" in b.raw):
        out["is_error"] = b.is_error
    return out


def serialise_block(b: Block) -> Any:
    """The Anthropic dict of one block."""
    if isinstance(b, Text):
        out = dict(b.raw) if b.raw is not None else {}
        out["type"] = "text"
        out["text"] = b.text
        return out
    if isinstance(b, Image):
        return _image_block(b)
    if isinstance(b, ToolCall):
        out = dict(b.raw) if b.raw is not None else {}
        if out.get("type") not in INLINE_CALL_TYPES:
            out["type"] = "tool_use"
        out["id"] = b.id
        out["name"] = b.name
        if b.arguments is not None:
            out["input"] = b.arguments
        elif b.raw is None:  # a new call: Anthropic requires input
            out["input"] = {}
        return out
    if isinstance(b, ToolResult):
        if b.raw is not None and is_server_result(b.raw):
            return _server_result_block(b)
        return _result_block(b)
    if isinstance(b, Unknown):
        return b.raw
    msg = f"not a block: {b!r:.80}"
    raise HistoryFormatError(msg)


def serialise_message(m: Message) -> dict[str, Any]:
    """The Anthropic dict of a message (the very input dict when it is unchanged)."""
    if m._wire is not None:
        return m._wire
    if m.role not in ("user", "assistant") and not (
        m.role == "system" and m.raw is not None and m.raw.get("role") == "system"
    ):
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
        out["content"] = _serialise_blocks(m.blocks)
    return out


def _serialise_blocks(blocks: tuple[Block, ...]) -> list[Any]:
    # a server call whose result was elided goes to text with it (a server_tool_use
    # block without its result block is refused)
    gone = {
        b.call_id
        for b in blocks
        if isinstance(b, ToolResult)
        and b.raw is not None
        and is_server_result(b.raw)
        and b.raw.get("type") != "mcp_tool_result"
        and not _server_unchanged(b)
    }
    out: list[Any] = []
    for b in blocks:
        if isinstance(b, ToolCall) and b.id in gone:
            args = json.dumps(b.arguments, ensure_ascii=False, sort_keys=True, default=str)
            out.append({"type": "text", "text": f"[{b.name} {args}]"})
        else:
            out.append(serialise_block(b))
    return out
