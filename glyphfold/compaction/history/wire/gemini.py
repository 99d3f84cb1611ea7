"""Gemini ``contents`` (google-genai Content dicts) <-> the canonical model.

A history is the ``contents`` list of ``generate_content`` (or the request body
``{"contents": [...], "system_instruction": ..., ...}``; other keys carried through).
A Content is ``{"role": "user" | "model", "parts": [...]}``; parts are keyed, not
typed: ``text`` (with ``thought_signature`` kept), ``inline_data`` / ``file_data``
(images; other media Unknown), ``function_call``, ``function_response``; thought
parts and everything else (``executable_code``, ``code_execution_result``...) are
Unknown. snake_case and the REST API's camelCase keys are both read; a part keeps the
spelling it came with. Inline data may be bytes (the SDK) or base64 text (JSON):
canonical images hold base64 text, an unchanged part keeps its own value.

Function calls without an ``id`` get a stable one, ``name:i:k`` (the k-th call of
``name`` in content ``i``); a ``function_response`` without one answers the k-th
call of its name in the content before it. Synthetic ids are never written back.
"""

from __future__ import annotations

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
    "envelope_signal",
    "parse_message",
    "parse_messages",
    "serialise_message",
    "serialise_messages",
    "signals",
    "unpriced_keys",
]

ROLES = {"user": "user", "model": "assistant", "function": "user"}
_CAMEL = {
    "inline_data": "inlineData",
    "file_data": "fileData",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "mime_type": "mimeType",
    "file_uri": "fileUri",
    "thought_signature": "thoughtSignature",
}


def signals(m: Mapping[str, Any]) -> bool:
    """True for a Content dict (``parts``) or the ``model`` role."""
    return "parts" in m or m.get("role") == "model"


def envelope_signal(history: Mapping[str, Any]) -> bool:
    """A request body keeps its contents under ``contents``."""
    return "contents" in history


def check_system(system: Any) -> str | None:
    """The problem with a ``system_instruction`` value, or None."""
    if system is None or isinstance(system, str | list) or is_mapping(system):
        return None
    return f"'system_instruction' must be a string, a Content or parts, got {type(system).__name__}"


def _get(d: Mapping[str, Any], key: str) -> Any:
    v = d.get(key)
    return d.get(_CAMEL[key]) if v is None and key in _CAMEL else v


def _key(d: Mapping[str, Any], key: str) -> str:
    """The spelling of ``key`` that ``d`` uses (snake_case when it has neither)."""
    camel = _CAMEL.get(key)
    return camel if camel is not None and camel in d and key not in d else key


# --------------------------------------------------------------------------- parsing


def _parse_media(i: int, part: Mapping[str, Any]) -> Block | None:
    inline = _get(part, "inline_data")
    if is_mapping(inline):
        mime = _get(inline, "mime_type")
        data = base64_text(inline.get("data"))
        if isinstance(mime, str) and mime.startswith("image/") and data:
            return Image(mime, data=data, raw=part)
        return Unknown(part)
    file = _get(part, "file_data")
    if is_mapping(file):
        mime, uri = _get(file, "mime_type"), _get(file, "file_uri")
        if isinstance(uri, str) and (not isinstance(mime, str) or mime.startswith("image/")):
            return Image(mime, url=uri, raw=part)
        return Unknown(part)
    return None


def response_text(response: Any) -> str:
    """The text of a function response: its one string value, else its JSON."""
    if isinstance(response, Mapping) and len(response) == 1:
        (v,) = response.values()
        if isinstance(v, str):
            return v
    return json.dumps(response, ensure_ascii=False, sort_keys=True, default=str)


def _parse_response(i: int, fr: Mapping[str, Any], part: Mapping[str, Any], cid: str) -> Block:
    response = fr.get("response")
    content: list[Block] = []
    if response is not None:
        content.append(make_text(response_text(response), None))
    for p in fr.get("parts") or ():
        media = _parse_media(i, p) if is_mapping(p) else None
        content.append(media if media is not None else Unknown(p))
    error = isinstance(response, Mapping) and "error" in response and "output" not in response
    return make_result(cid, tuple(content), error, part)


def _parse_parts(i: int, parts: Any, role: str) -> tuple[Block, ...]:
    if parts is None:
        return ()
    if not isinstance(parts, list):
        raise fail(i, f"parts must be a list, got {type(parts).__name__}")
    out: list[Block] = []
    seen: dict[str, int] = {}
    for part in parts:
        if not is_mapping(part):
            raise fail(i, f"a part must be a dict, got {part!r:.80}")
        text = part.get("text")
        if isinstance(text, str) and not part.get("thought"):
            out.append(make_text(text, part))
            continue
        fc = _get(part, "function_call")
        fr = _get(part, "function_response")
        if is_mapping(fc) or is_mapping(fr):
            body = fc if is_mapping(fc) else fr
            name = body.get("name")
            if not isinstance(name, str) or not name:
                raise fail(i, "function_call and function_response parts need a string 'name'")
            k = seen.get(name, 0)
            seen[name] = k + 1
            given = body.get("id")
            if is_mapping(fc):
                if role != "assistant":
                    raise fail(i, "function_call parts belong in model contents")
                cid = given if isinstance(given, str) and given else f"{name}:{i}:{k}"
                out.append(make_call(cid, name, fc.get("args"), part))
            else:
                cid = given if isinstance(given, str) and given else f"{name}:{i - 1}:{k}"
                out.append(_parse_response(i, fr, part, cid))
            continue
        media = _parse_media(i, part)
        out.append(media if media is not None else Unknown(part))
    return tuple(out)


def parse_message(i: int, m: Any) -> Message:
    """Parse Content ``i`` of a Gemini history; HistoryFormatError names what is wrong."""
    if not is_mapping(m):
        raise fail(i, f"a content must be a dict, got {type(m).__name__}")
    wire_role = m.get("role", "user")
    role = ROLES.get(wire_role) if isinstance(wire_role, str) else None
    if role is None:
        raise fail(i, f"unknown Gemini role {wire_role!r}; expected user or model")
    return make_message(role, _parse_parts(i, m.get("parts"), role), m)


def parse_messages(entries: Sequence[Any]) -> tuple[Message, ...]:
    """Parse a whole ``contents`` list."""
    return tuple([parse_message(i, m) for i, m in enumerate(entries)])


# --------------------------------------------------------------------------- serialising


def _text_part(b: Text) -> dict[str, Any]:
    out = dict(b.raw) if b.raw is not None and isinstance(b.raw.get("text"), str) else {}
    out["text"] = b.text
    return out


def _image_part(b: Image) -> dict[str, Any]:
    raw = b.raw
    if raw is not None:
        same = _parse_media(0, raw)
        if isinstance(same, Image) and (same.data, same.url) == (b.data, b.url):
            return dict(raw)
    if b.data is not None:
        return {"inline_data": {"mime_type": b.media_type or "image/png", "data": b.data}}
    return {"file_data": {"mime_type": b.media_type or "image/png", "file_uri": b.url}}


def _call_part(b: ToolCall) -> dict[str, Any]:
    if b.raw is not None and is_mapping(_get(b.raw, "function_call")):
        out = dict(b.raw)
        key = _key(b.raw, "function_call")
        fc = dict(out[key])
        fc["name"] = b.name
        fc["args"] = b.arguments if b.arguments is not None else {}
        out[key] = fc
        return out
    return {"function_call": {"id": b.id, "name": b.name, "args": args_object(b.arguments)}}


def _result_part(b: ToolResult, names: Mapping[str, str]) -> dict[str, Any]:
    raw = b.raw
    fr_raw = _get(raw, "function_response") if raw is not None else None
    if is_mapping(fr_raw):
        assert raw is not None
        cid = b.call_id if isinstance(fr_raw.get("id"), str) else None
        again = _parse_response(0, fr_raw, raw, cid or b.call_id)
        if isinstance(again, ToolResult) and again.content == b.content:
            return dict(raw)
    texts = "\n".join(c.text for c in b.content if isinstance(c, Text))
    fr: dict[str, Any] = dict(fr_raw) if is_mapping(fr_raw) else {}
    if "name" not in fr:
        fr["name"] = names.get(b.call_id) or b.call_id.split(":", 1)[0]
        if ":" not in b.call_id:
            fr["id"] = b.call_id
    fr["response"] = {"error": texts} if b.is_error else {"output": texts}
    media = [_image_part(c) for c in b.content if isinstance(c, Image)]
    if media:
        fr["parts"] = media
    else:
        fr.pop("parts", None)
    out = dict(raw) if raw is not None else {}
    out[_key(raw or {}, "function_response")] = fr
    return out


def _part(b: Block, names: Mapping[str, str]) -> Any:
    if isinstance(b, Text):
        return _text_part(b)
    if isinstance(b, Image):
        return _image_part(b)
    if isinstance(b, ToolCall):
        return _call_part(b)
    if isinstance(b, ToolResult):
        return _result_part(b, names)
    if isinstance(b, Unknown):
        return b.raw
    msg = f"not a block: {b!r:.80}"
    raise HistoryFormatError(msg)


def _serialise(m: Message, names: Mapping[str, str]) -> dict[str, Any]:
    if m._wire is not None:
        return m._wire
    if m.role not in ("user", "assistant"):
        msg = f"a Gemini content is user or model, got {m.role!r}; use History.system"
        raise HistoryFormatError(msg)
    out: dict[str, Any] = dict(m.raw) if m.raw is not None else {}
    raw_role = out.get("role")
    out["role"] = (
        raw_role
        if isinstance(raw_role, str) and ROLES.get(raw_role) == m.role
        else ("model" if m.role == "assistant" else "user")
    )
    out["parts"] = [_part(b, names) for b in m.blocks]
    return out


def serialise_message(m: Message) -> dict[str, Any]:
    """The Content dict of one message (the very input dict when it is unchanged)."""
    return _serialise(m, {})


def serialise_messages(messages: Sequence[Message]) -> list[Any]:
    """The ``contents`` list (a new function response names its call's function)."""
    names = {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolCall)}
    return [_serialise(m, names) for m in messages]


# --------------------------------------------------------------------------- pricing

_MESSAGE_KEYS = frozenset({"role", "parts", X_KEY})
_PART_KEYS = frozenset(
    {"text", "thought", "inline_data", "inlineData", "file_data", "fileData"}
    | {"function_call", "functionCall", "function_response", "functionResponse"}
)
_BODY_KEYS = frozenset({"id", "name", "args", "response", "parts"})


def unpriced_keys(m: Message) -> list[str]:
    """Keys a Content sends beyond what its blocks price (a thought signature, say)."""
    out: list[str] = []
    raw = m.raw
    extra_keys(out, raw, _MESSAGE_KEYS)
    parts = raw.get("parts") if is_mapping(raw) else None
    for p in parts if isinstance(parts, list) else ():
        if not is_mapping(p) or (p.get("thought") and "text" in p):
            continue  # thought parts are Unknown blocks, priced whole
        extra_keys(out, p, _PART_KEYS)
        body = _get(p, "function_call") or _get(p, "function_response")
        extra_keys(out, body, _BODY_KEYS)
    return out
