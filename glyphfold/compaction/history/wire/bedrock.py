"""Bedrock Converse messages <-> the canonical model.

A history is the ``messages`` list of ``converse`` (or the request body
``{"messages": [...], "system": [{"text": ...}], "modelId": ..., ...}``; other keys
carried through). A message is ``{"role": "user" | "assistant", "content": [...]}``
whose blocks are keyed, not typed: ``text``, ``image`` (``format`` + ``source.bytes``),
``toolUse``, ``toolResult`` (content ``text``/``json``/``image``/``document`` blocks,
``status``), and everything else (``cachePoint``, ``reasoningContent``,
``document``, ``guardContent``...) carried as Unknown.

Image bytes: boto3 takes raw ``bytes`` (a string would be base64-encoded a second
time), JSON bodies take base64 text. Canonical images hold base64 text; an unchanged
block keeps its own value, and a new image (a snapshot page) is written as bytes
unless the history's own images are base64 text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from glyphfold.compaction.history.markers import X_KEY
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
from glyphfold.compaction.history.wire.base import (
    args_object,
    base64_text,
    extra_keys,
    fail,
    is_mapping,
)
from glyphfold.errors import HistoryFormatError

__all__ = [
    "BLOCK_KEYS",
    "envelope_signal",
    "parse_message",
    "parse_messages",
    "serialise_message",
    "serialise_messages",
    "signals",
    "unpriced_keys",
]

ROLES = {"user": "user", "assistant": "assistant"}
BLOCK_KEYS = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "toolUse",
        "toolResult",
        "guardContent",
        "cachePoint",
        "reasoningContent",
        "citationsContent",
        "searchResult",
    }
)
_REQUEST_KEYS = frozenset(
    {
        "modelId",
        "inferenceConfig",
        "toolConfig",
        "guardrailConfig",
        "additionalModelRequestFields",
        "additionalModelResponseFieldPaths",
        "promptVariables",
        "requestMetadata",
        "performanceConfig",
    }
)


def _is_block(b: Any) -> bool:
    return is_mapping(b) and "type" not in b and any(k in BLOCK_KEYS for k in b)


def signals(m: Mapping[str, Any]) -> bool:
    """True for a message whose content blocks are keyed (``{"text": ...}``), not typed."""
    c = m.get("content")
    return type(c) is list and bool(c) and _is_block(c[0])


def envelope_signal(history: Mapping[str, Any]) -> bool:
    """A Converse request: its own keys, or a ``system`` list of keyed blocks."""
    if "messages" not in history:
        return False
    if any(k in history for k in _REQUEST_KEYS):
        return True
    s = history.get("system")
    return isinstance(s, list) and bool(s) and all(_is_block(b) for b in s)


def check_system(system: Any) -> str | None:
    """The problem with a Converse ``system`` value, or None."""
    if system is None or isinstance(system, list):
        return None
    return f"'system' must be a list of system content blocks, got {type(system).__name__}"


# --------------------------------------------------------------------------- parsing


def _parse_image(b: Mapping[str, Any]) -> Block:
    img = b["image"]
    src = img.get("source") if is_mapping(img) else None
    data = base64_text(src.get("bytes")) if is_mapping(src) else None
    fmt = img.get("format") if is_mapping(img) else None
    if data and isinstance(fmt, str):
        return Image(f"image/{fmt}", data=data, raw=b)
    return Unknown(b)  # an S3 location, or a malformed image: carried as given


def _parse_result_part(i: int, b: Any) -> Block:
    if not is_mapping(b):
        raise fail(i, f"a toolResult content block must be a dict, got {b!r:.80}")
    if isinstance(b.get("text"), str):
        return make_text(b["text"], b)
    if "json" in b:
        return make_text(json.dumps(b["json"], ensure_ascii=False, sort_keys=True, default=str), b)
    if is_mapping(b.get("image")):
        return _parse_image(b)
    return Unknown(b)


def _parse_block(i: int, b: Any, role: str) -> Block:
    if not _is_block(b):
        raise fail(i, f"a content block must be a dict with one of {sorted(BLOCK_KEYS)}")
    if isinstance(b.get("text"), str):
        return make_text(b["text"], b)
    if is_mapping(b.get("image")):
        return _parse_image(b)
    tu = b.get("toolUse")
    if is_mapping(tu):
        cid, name = tu.get("toolUseId"), tu.get("name")
        if not isinstance(cid, str) or not cid or not isinstance(name, str):
            raise fail(i, "toolUse needs a string 'toolUseId' and 'name'")
        if role != "assistant":
            raise fail(i, "toolUse blocks belong in assistant messages")
        return make_call(cid, name, tu.get("input"), b)
    tr = b.get("toolResult")
    if is_mapping(tr):
        cid = tr.get("toolUseId")
        if not isinstance(cid, str) or not cid:
            raise fail(i, "toolResult needs a string 'toolUseId'")
        if role != "user":
            raise fail(i, "toolResult blocks belong in user messages")
        c = tr.get("content") or []
        if not isinstance(c, list):
            raise fail(i, "toolResult content must be a list of blocks")
        content = tuple([_parse_result_part(i, x) for x in c])
        return make_result(cid, content, tr.get("status") == "error", b)
    return Unknown(b)


def parse_message(i: int, m: Any) -> Message:
    """Parse message ``i`` of a Converse history; HistoryFormatError names what is wrong."""
    if not is_mapping(m):
        raise fail(i, f"a message must be a dict, got {type(m).__name__}")
    wire_role = m.get("role")
    role = ROLES.get(wire_role) if isinstance(wire_role, str) else None
    if role is None:
        raise fail(i, f"unknown Bedrock role {wire_role!r}; expected user or assistant")
    c = m.get("content")
    if not isinstance(c, list):
        raise fail(i, f"content must be a list of blocks, got {type(c).__name__}")
    return make_message(role, tuple([_parse_block(i, b, role) for b in c]), m)


def parse_messages(entries: Sequence[Any]) -> tuple[Message, ...]:
    """Parse a whole ``messages`` list."""
    return tuple([parse_message(i, m) for i, m in enumerate(entries)])


# --------------------------------------------------------------------------- serialising


def _image_block(b: Image, as_bytes: bool) -> dict[str, Any]:
    if b.raw is not None and is_mapping(b.raw.get("image")):
        same = _parse_image(b.raw)
        if isinstance(same, Image) and same.data == b.data:
            return dict(b.raw)
    if b.data is None:
        return {"text": f"[image at {b.url}]"}  # Converse takes bytes or S3 only
    fmt = (b.media_type or "image/png").rpartition("/")[2]
    data: Any = base64.b64decode(b.data) if as_bytes else b.data
    return {"image": {"format": fmt, "source": {"bytes": data}}}


def _result_block(b: ToolResult, as_bytes: bool) -> dict[str, Any]:
    raw = b.raw
    tr: dict[str, Any] = dict(raw["toolResult"]) if raw is not None else {}
    tr["toolUseId"] = b.call_id
    parts: list[Any] = []
    for c in b.content:
        if isinstance(c, Text):
            if c.raw is not None and "json" in c.raw and _parse_result_part(0, c.raw) == c:
                parts.append(dict(c.raw))
            else:
                parts.append(_text_block(c))
        elif isinstance(c, Image):
            parts.append(_image_block(c, as_bytes))
        elif isinstance(c, Unknown):
            parts.append(c.raw)
    tr["content"] = parts
    if b.is_error:
        tr["status"] = "error"
    elif tr.get("status") == "error":
        tr["status"] = "success"
    out = dict(raw) if raw is not None else {}
    out["toolResult"] = tr
    return out


def _text_block(b: Text) -> dict[str, Any]:
    out = dict(b.raw) if b.raw is not None and isinstance(b.raw.get("text"), str) else {}
    out["text"] = b.text
    return out


def _block(b: Block, as_bytes: bool) -> Any:
    if isinstance(b, Text):
        return _text_block(b)
    if isinstance(b, Image):
        return _image_block(b, as_bytes)
    if isinstance(b, ToolCall):
        tu = dict(b.raw["toolUse"]) if b.raw is not None else {}
        tu["toolUseId"] = b.id
        tu["name"] = b.name
        tu["input"] = args_object(b.arguments)
        out = dict(b.raw) if b.raw is not None else {}
        out["toolUse"] = tu
        return out
    if isinstance(b, ToolResult):
        return _result_block(b, as_bytes)
    if isinstance(b, Unknown):
        return b.raw
    msg = f"not a block: {b!r:.80}"
    raise HistoryFormatError(msg)


def _serialise(m: Message, as_bytes: bool) -> dict[str, Any]:
    if m._wire is not None:
        return m._wire
    if m.role not in ("user", "assistant"):
        msg = f"a Converse message is user or assistant, got {m.role!r}; use History.system"
        raise HistoryFormatError(msg)
    out: dict[str, Any] = dict(m.raw) if m.raw is not None else {}
    out["role"] = m.role
    out["content"] = [_block(b, as_bytes) for b in m.blocks]
    return out


def _text_images(messages: Sequence[Message]) -> bool:
    """True when the history's own images carry base64 text (a JSON body), not bytes."""
    for m in messages:
        for img in m.images:
            src = img.raw.get("image", {}).get("source", {}) if img.raw is not None else {}
            if is_mapping(src) and "bytes" in src:
                return isinstance(src["bytes"], str)
    return False


def serialise_message(m: Message) -> dict[str, Any]:
    """The Converse dict of one message (the very input dict when it is unchanged)."""
    return _serialise(m, not _text_images([m]))


def serialise_messages(messages: Sequence[Message]) -> list[Any]:
    """The ``messages`` list; new images follow the history's own bytes/base64 choice."""
    as_bytes = not _text_images(messages)
    return [_serialise(m, as_bytes) for m in messages]


# --------------------------------------------------------------------------- pricing

_MESSAGE_KEYS = frozenset({"role", "content", X_KEY})
_BLOCK_KEYS = frozenset({"text", "image", "toolUse", "toolResult", "json"})
_USE_KEYS = frozenset({"toolUseId", "name", "input"})
_RESULT_KEYS = frozenset({"toolUseId", "content", "status"})


def unpriced_keys(m: Message) -> list[str]:
    """Keys a Converse message sends beyond what its blocks price."""
    out: list[str] = []
    raw = m.raw
    extra_keys(out, raw, _MESSAGE_KEYS)
    content = raw.get("content") if is_mapping(raw) else None
    for b in content if isinstance(content, list) else ():
        if not is_mapping(b) or not any(k in b for k in _BLOCK_KEYS):
            continue  # cachePoint, reasoningContent...: Unknown blocks, priced whole
        extra_keys(out, b, _BLOCK_KEYS)
        extra_keys(out, b.get("toolUse"), _USE_KEYS)
        tr = b.get("toolResult")
        extra_keys(out, tr, _RESULT_KEYS)
        for x in (tr.get("content") or ()) if is_mapping(tr) else ():
            extra_keys(out, x, _BLOCK_KEYS)
    return out
