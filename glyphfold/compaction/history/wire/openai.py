"""OpenAI Chat Completions messages <-> the canonical model.

Roles system/developer/user/assistant/tool; content a string or a list of parts
(``text``, ``image_url``, anything else carried as Unknown); assistant ``tool_calls``
with JSON-string ``arguments``; one ``tool`` message per result, naming ``tool_call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from glyphfold.compaction.history.images import parse_data_url
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
from glyphfold.compaction.history.wire.base import fail, is_mapping
from glyphfold.errors import HistoryFormatError

__all__ = ["PART_TYPES", "ROLES", "parse_message", "serialise_message", "signals"]

# wire role -> canonical role
ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
# content part types only OpenAI uses (format detection)
PART_TYPES = frozenset({"image_url", "input_audio", "file", "refusal"})
# system and developer messages are neutral: Responses input and an Anthropic history
# whose messages hold a system entry use them too
_SIGNAL_ROLES = frozenset({"tool", "function"})
_SIGNAL_KEYS = ("tool_calls", "tool_call_id", "function_call")  # tested inline in signals()


def signals(m: Mapping[str, Any]) -> bool:
    """True when a message's role or keys can only be OpenAI's (content parts aside)."""
    role = m.get("role")
    if type(role) is str and role in _SIGNAL_ROLES:
        return True
    # _SIGNAL_KEYS spelled out: this runs for every message of an auto-detected history
    return "tool_calls" in m or "tool_call_id" in m or "function_call" in m


# --------------------------------------------------------------------------- parsing


def _parse_part(i: int, part: Any) -> Block:
    if not is_mapping(part) or type(part.get("type")) is not str:
        raise fail(i, f"content part must be a dict with a 'type', got {part!r:.80}")
    t = part["type"]
    if t == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise fail(i, "text part needs a string 'text'")
        return make_text(text, part)
    if t == "image_url":
        iu = part.get("image_url")
        url = iu.get("url") if isinstance(iu, Mapping) else iu
        if not isinstance(url, str):
            raise fail(i, "image_url part needs image_url.url (a string)")
        media_type, data = parse_data_url(url)
        if data is not None:
            return Image(media_type, data=data, raw=part)
        return Image(None, url=url, raw=part)
    return Unknown(part)


def _parse_content(i: int, content: Any, *, allow_none: bool) -> tuple[Block, ...]:
    if content is None:
        if allow_none:
            return ()
        raise fail(i, "content is null; it must be a string or a list of parts")
    if type(content) is str:
        return (make_text(content, None),) if content else ()
    if type(content) is list:
        return tuple([_parse_part(i, p) for p in content])
    raise fail(i, f"content must be a string or a list of parts, got {type(content).__name__}")


def _parse_calls(i: int, calls: Any) -> tuple[Block, ...]:
    if not isinstance(calls, list):
        raise fail(i, "tool_calls must be a list")
    parsed: list[Block] = []
    for c in calls:
        fn = c.get("function") if isinstance(c, Mapping) else None
        cid = c.get("id") if isinstance(c, Mapping) else None
        if not isinstance(cid, str) or not cid or not isinstance(fn, Mapping):
            raise fail(i, f"tool call needs a string 'id' and a 'function', got {c!r:.80}")
        name = fn.get("name")
        if not isinstance(name, str):
            raise fail(i, f"tool call {cid!r} needs function.name (a string)")
        parsed.append(make_call(cid, name, fn.get("arguments"), c))
    return tuple(parsed)


def parse_message(i: int, m: Any) -> Message:
    """Parse message ``i`` of an OpenAI history; HistoryFormatError names what is wrong."""
    if not is_mapping(m):
        raise fail(i, f"a message must be a dict, got {type(m).__name__}")
    wire_role = m.get("role")
    role = ROLES.get(wire_role) if isinstance(wire_role, str) else None
    if role is None:
        raise fail(i, f"unknown OpenAI role {wire_role!r}; expected one of {sorted(ROLES)}")
    if role == "tool":
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(i, "a tool message needs a non-empty string 'tool_call_id'")
        content = _parse_content(i, m.get("content"), allow_none=True)
        blocks: tuple[Block, ...] = (make_result(call_id, content, False, None),)
    else:
        blocks = _parse_content(i, m.get("content"), allow_none=(role == "assistant"))
        calls = m.get("tool_calls")
        if calls is not None:
            if role != "assistant":
                raise fail(i, f"only assistant messages may carry tool_calls, not {wire_role}")
            blocks = blocks + _parse_calls(i, calls)
    return make_message(role, blocks, m)


# --------------------------------------------------------------------------- serialising


def _text_part(b: Text) -> dict[str, Any]:
    out = dict(b.raw) if b.raw is not None else {}
    out["type"] = "text"
    out["text"] = b.text
    return out


def _image_part(b: Image) -> dict[str, Any]:
    if b.raw is not None and b.raw.get("type") == "image_url":
        out = dict(b.raw)
        iu = out.get("image_url")
        old_url = iu if isinstance(iu, str) else iu.get("url") if isinstance(iu, Mapping) else None
        url = b.data_url
        # unchanged image: keep its URL byte for byte (e.g. a data URL without media type)
        if isinstance(old_url, str) and (
            old_url == b.url or parse_data_url(old_url) == (b.media_type, b.data)
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


def _part(b: Block) -> Any:
    if isinstance(b, Text):
        return _text_part(b)
    if isinstance(b, Image):
        return _image_part(b)
    if isinstance(b, Unknown):
        return b.raw
    msg = f"{type(b).__name__} cannot be an OpenAI content part"
    raise HistoryFormatError(msg)


def _content(blocks: Sequence[Block], raw_content: Any, *, has_raw: bool, empty: Any) -> Any:
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
    return [_part(b) for b in blocks]


def _wire_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    wire_calls = []
    for c in calls:
        wc: dict[str, Any] = dict(c.raw) if c.raw is not None else {"type": "function"}
        fn = dict(wc.get("function") or {})
        fn["name"] = c.name
        if c.arguments is not None:
            fn["arguments"] = c.arguments
        elif c.raw is None:  # a new call: OpenAI requires arguments
            fn["arguments"] = "{}"
        wc["id"] = c.id
        wc["function"] = fn
        wire_calls.append(wc)
    return wire_calls


def serialise_message(m: Message) -> dict[str, Any]:
    """The OpenAI dict of a message (the very input dict when it is unchanged)."""
    if m._wire is not None:
        return m._wire
    raw = m.raw
    out: dict[str, Any] = dict(raw) if raw is not None else {}
    raw_role = raw.get("role") if raw is not None else None
    out["role"] = (
        raw_role if isinstance(raw_role, str) and ROLES.get(raw_role) == m.role else m.role
    )
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
            out["content"] = _content(tr.content, raw_content, has_raw=has_raw, empty="")
        return out
    calls = [b for b in m.blocks if isinstance(b, ToolCall)]
    content_blocks = [b for b in m.blocks if not isinstance(b, ToolCall)]
    empty = None if (m.role == "assistant" and calls) else ""
    if content_blocks or raw is None or has_raw:
        out["content"] = _content(content_blocks, raw_content, has_raw=has_raw, empty=empty)
    # else: the input had no "content" key and still has no content: keep it absent
    if calls:
        out["tool_calls"] = _wire_calls(calls)
    elif out.get("tool_calls"):  # every call was removed
        del out["tool_calls"]
    return out
