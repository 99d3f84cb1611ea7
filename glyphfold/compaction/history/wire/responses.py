"""OpenAI Responses API input items <-> the canonical model.

A history is the ``input`` list of a ``responses.create`` call (or the request body
``{"instructions": ..., "input": [...], ...}``; other keys carried through). Items:

- ``message`` items (``{"role", "content"}``, ``type`` optional): user, system and
  developer messages are one canonical message each; content a string or parts
  (``input_text``/``output_text`` -> Text, ``input_image`` -> Image, others Unknown);
- ``function_call_output`` / ``custom_tool_call_output``: one canonical ``tool``
  message each (a ToolResult), like a Chat Completions tool message;
- every other item is assistant-side: a run of consecutive assistant messages,
  ``function_call`` / ``custom_tool_call`` (ToolCall), ``mcp_call`` (a ToolCall and
  its ToolResult, the item holds both), ``reasoning``, ``compaction``, server tool
  calls and unknown item types (Unknown, verbatim) is ONE canonical assistant
  message, so a reasoning item never parts from the call it precedes and parallel
  calls form one step.

An unchanged message serialises to the very items it was parsed from; a changed one
is rebuilt item by item from its blocks (each block remembers its item).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.images import parse_data_url
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
from glyphfold.compaction.history.wire.base import extra_keys, fail, is_mapping
from glyphfold.errors import HistoryFormatError

__all__ = [
    "ITEM_TYPES",
    "PART_TYPES",
    "envelope_signal",
    "parse_message",
    "parse_messages",
    "serialise_message",
    "serialise_messages",
    "signals",
    "unpriced_keys",
]

ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
CALL_TYPES = frozenset({"function_call", "custom_tool_call"})
RESULT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
# item types that only Responses input uses (format detection); unknown ones pass through
ITEM_TYPES = frozenset(
    {
        *CALL_TYPES,
        *RESULT_TYPES,
        "reasoning",
        "compaction",
        "compaction_trigger",
        "item_reference",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "tool_search_call",
        "additional_tools",
        "program",
        "program_output",
    }
)
PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file"})
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_GROUP = "x_responses_items"  # raw key of a canonical message made of several items


def signals(m: Mapping[str, Any]) -> bool:
    """True for an item only Responses input has (an item type, or a typed message)."""
    t = m.get("type")
    if type(t) is not str:
        return _GROUP in m  # a canonical message's own record of its items
    if t == "message":  # an Anthropic response object says "message" too, with a model
        return "model" not in m and "stop_reason" not in m
    return t in ITEM_TYPES


def envelope_signal(history: Mapping[str, Any]) -> bool:
    """A request body keeps its items under ``input``."""
    return "input" in history


def check_system(system: Any) -> str | None:
    """The problem with an ``instructions`` value, or None."""
    if system is None or isinstance(system, str | list):
        return None
    return f"'instructions' must be a string or a list of items, got {type(system).__name__}"


# --------------------------------------------------------------------------- parsing


def _side(i: int, item: Any) -> str:
    """'user', 'system', 'tool' or 'assistant' (the side of the conversation an item is on)."""
    if not is_mapping(item):
        raise fail(i, f"an input item must be a dict, got {type(item).__name__}")
    t = item.get("type")
    if t is None or t == "message":
        role = item.get("role")
        side = ROLES.get(role) if isinstance(role, str) else None
        if side is None:
            raise fail(i, f"unknown Responses role {role!r}; expected one of {sorted(ROLES)}")
        return side
    if type(t) is not str:
        raise fail(i, f"an item 'type' must be a string, got {t!r:.80}")
    return "tool" if t in RESULT_TYPES else "assistant"


def _parse_part(i: int, part: Any) -> Block:
    if type(part) is str:
        return make_text(part, None)
    if not is_mapping(part) or type(part.get("type")) is not str:
        raise fail(i, f"content part must be a dict with a 'type', got {part!r:.80}")
    t = part["type"]
    if t in _TEXT_PARTS:
        text = part.get("text")
        if not isinstance(text, str):
            raise fail(i, f"{t} part needs a string 'text'")
        return make_text(text, part)
    if t == "input_image":
        url = part.get("image_url")
        if isinstance(url, str):
            media_type, data = parse_data_url(url)
            if data is not None:
                return Image(media_type, data=data, raw=part)
            return Image(None, url=url, raw=part)
    return Unknown(part)  # files, file-id images, refusals, future part types


def _parse_content(i: int, content: Any) -> tuple[Block, ...]:
    if content is None:
        return ()
    if type(content) is str:
        return (make_text(content, None),) if content else ()
    if isinstance(content, list):
        return tuple([_parse_part(i, p) for p in content])
    raise fail(i, f"content must be a string or a list of parts, got {type(content).__name__}")


def _parse_assistant_item(i: int, item: Mapping[str, Any]) -> tuple[Block, ...]:
    t = item.get("type")
    if t is None or t == "message":
        return _parse_content(i, item.get("content"))
    if t in CALL_TYPES:
        cid, name = item.get("call_id"), item.get("name")
        if not isinstance(cid, str) or not cid or not isinstance(name, str):
            raise fail(i, f"{t} item needs a string 'call_id' and 'name'")
        args = item.get("arguments") if t == "function_call" else item.get("input")
        return (make_call(cid, name, args, item),)
    if t == "mcp_call":
        cid, name = item.get("id"), item.get("name")
        if not isinstance(cid, str) or not cid or not isinstance(name, str):
            raise fail(i, "mcp_call item needs a string 'id' and 'name'")
        return (make_call(cid, name, item.get("arguments"), item), _mcp_result(item))
    return (Unknown(item),)


def _mcp_result(item: Mapping[str, Any]) -> ToolResult:
    out, err = item.get("output"), item.get("error")
    parts = [x for x in (out, err) if isinstance(x, str) and x]
    content = tuple(make_text(x, None) for x in parts)
    return make_result(item["id"], content, isinstance(err, str) and bool(err), item)


def _parse_result(i: int, item: Mapping[str, Any]) -> Block:
    cid = item.get("call_id")
    if not isinstance(cid, str) or not cid:
        raise fail(i, f"{item.get('type')} item needs a non-empty string 'call_id'")
    return make_result(cid, _parse_content(i, item.get("output")), False, item)


def parse_message(i: int, m: Any) -> Message:
    """Parse input item ``i`` alone into one canonical message."""
    side = _side(i, m)
    if side == "tool":
        return make_message("tool", (_parse_result(i, m),), m)
    if side == "assistant":
        return make_message("assistant", _parse_assistant_item(i, m), m)
    return make_message(side, _parse_content(i, m.get("content")), m)


def _group(items: list[Any], layout: list[int], blocks: list[Block]) -> Message:
    if len(items) == 1:
        return make_message("assistant", tuple(blocks), items[0])
    raw = MappingProxyType({"role": "assistant", _GROUP: tuple(items), "layout": tuple(layout)})
    msg = make_message("assistant", tuple(blocks), raw)
    object.__setattr__(msg, "_wire", tuple(items))
    return msg


def parse_messages(entries: Sequence[Any]) -> tuple[Message, ...]:
    """Parse a whole ``input`` list; runs of assistant-side items become one message."""
    out: list[Message] = []
    run: list[Any] = []
    layout: list[int] = []
    blocks: list[Block] = []

    def flush() -> None:
        if run:
            out.append(_group(run[:], layout[:], blocks[:]))
            run.clear()
            layout.clear()
            blocks.clear()

    for i, item in enumerate(entries):
        side = _side(i, item)
        if side == "assistant" and not _standalone(item):
            got = _parse_assistant_item(i, item)
            layout.extend([len(run)] * len(got))
            blocks.extend(got)
            run.append(item)
            continue
        flush()
        out.append(parse_message(i, item))
    flush()
    return tuple(out)


def _standalone(item: Mapping[str, Any]) -> bool:
    # glyphfold's own messages (snapshot acknowledgements, bridges) stay one message each
    return X_KEY in item


# --------------------------------------------------------------------------- serialising


def _items_of(m: Message) -> tuple[Any, ...]:
    raw = m.raw
    if raw is None:
        return ()
    group = raw.get(_GROUP)
    return tuple(group) if group is not None else (raw,)


def _text_part(b: Text, role: str) -> dict[str, Any]:
    if b.raw is not None and b.raw.get("type") in _TEXT_PARTS:
        out = dict(b.raw)
    elif role == "assistant":
        out = {"type": "output_text", "annotations": []}
    else:
        out = {"type": "input_text"}
    out["text"] = b.text
    return out


def _image_part(b: Image) -> dict[str, Any]:
    raw = b.raw
    out: dict[str, Any]
    if raw is not None and raw.get("type") == "input_image":
        out = dict(raw)
        old = raw.get("image_url")
        keep = isinstance(old, str) and (
            old == b.url or parse_data_url(old) == (b.media_type, b.data)
        )
        out["image_url"] = old if keep else b.data_url
        if not keep:
            out.setdefault("detail", "high")
        return out
    detail = "high"
    out = {"type": "input_image", "image_url": b.data_url}
    if raw is not None:
        if isinstance(raw.get("image_url"), Mapping):
            # the ladder names the detail level its pricing assumes (Chat Completions shape)
            detail = raw["image_url"].get("detail") or detail
        if "prompt_cache_breakpoint" in raw:
            out["prompt_cache_breakpoint"] = dict(raw["prompt_cache_breakpoint"])
    out["detail"] = detail
    return out


def _part(b: Block, role: str) -> Any:
    if isinstance(b, Text):
        return _text_part(b, role)
    if isinstance(b, Image):
        return _image_part(b)
    if isinstance(b, Unknown):
        return b.raw
    msg = f"{type(b).__name__} cannot be a Responses content part"
    raise HistoryFormatError(msg)


def _content(blocks: Sequence[Block], raw_content: Any, role: str) -> Any:
    if (
        isinstance(raw_content, str)
        and len(blocks) == 1
        and isinstance(blocks[0], Text)
        and blocks[0].raw is None
    ):
        return blocks[0].text
    if not blocks and isinstance(raw_content, str):
        return raw_content
    return [_part(b, role) for b in blocks]


def _message_item(m_role: str, base: Mapping[str, Any] | None, blocks: list[Block]) -> Any:
    if base is None or "content" not in base:  # new, or glyphfold's own {"role", "x_glyphfold"}
        raw_role = base.get("role") if base is not None else None
        out: dict[str, Any] = {"type": "message", "role": _wire_role(m_role, raw_role)}
        if m_role == "assistant" and all(isinstance(b, Text) and b.raw is None for b in blocks):
            # an easy assistant message: output_text parts would need an id and a status
            out["content"] = "\n\n".join(b.text for b in blocks)  # type: ignore[union-attr]
        else:
            out["content"] = [_part(b, m_role) for b in blocks]
        if base is not None:
            out.update({k: v for k, v in base.items() if k not in ("role", "content")})
        return out
    out = dict(base)
    out["role"] = _wire_role(m_role, base.get("role"))
    out["content"] = _content(blocks, base.get("content"), m_role)
    return out


def _wire_role(role: str, raw_role: Any) -> str:
    return raw_role if isinstance(raw_role, str) and ROLES.get(raw_role) == role else role


def _call_item(b: ToolCall) -> dict[str, Any]:
    if b.raw is None or b.raw.get("type") not in (*CALL_TYPES, "mcp_call"):
        args = b.arguments
        if not isinstance(args, str):
            args = json.dumps(args if args is not None else {}, ensure_ascii=False)
        return {"type": "function_call", "call_id": b.id, "name": b.name, "arguments": args}
    out = dict(b.raw)
    out["id" if out["type"] == "mcp_call" else "call_id"] = b.id
    out["name"] = b.name
    key = "input" if out["type"] == "custom_tool_call" else "arguments"
    if b.arguments is not None:
        out[key] = b.arguments
    return out


def _merge_mcp(item: dict[str, Any], r: ToolResult) -> None:
    texts = [c.text for c in r.content if isinstance(c, Text)]
    text = "\n".join(texts)
    if r.is_error:
        item["error"] = text
        item.pop("output", None)
    else:
        item["output"] = text
        if item.get("error") is not None:
            item["error"] = None


def _result_item(r: ToolResult) -> dict[str, Any]:
    raw = r.raw
    if raw is None or raw.get("type") not in RESULT_TYPES:
        out: dict[str, Any] = {"type": "function_call_output", "call_id": r.call_id}
        out["output"] = _content(r.content, "", "user") if r.content else ""
        return out
    out = dict(raw)
    out["call_id"] = r.call_id
    out["output"] = _content(r.content, raw.get("output"), "user")
    return out


def _owners(m: Message, items: tuple[Any, ...]) -> list[int | None]:
    """The item index each block belongs to (None: a new block)."""
    raw = m.raw
    if raw is not None and raw.get(_GROUP) is not None:
        layout = raw["layout"]
        if len(layout) == len(m.blocks):
            return list(layout)
        by_raw = {id(it): k for k, it in enumerate(items)}
        for k, it in enumerate(items):
            c = it.get("content") if is_mapping(it) else None
            if isinstance(c, list):
                by_raw.update({id(p): k for p in c})
        return [by_raw.get(id(getattr(b, "raw", None))) for b in m.blocks]
    return [0 if items else None] * len(m.blocks)


def _serialise_assistant(m: Message) -> list[Any]:
    items = _items_of(m)
    out: list[Any] = []
    open_msg: tuple[int | None, Any, list[Block]] | None = None  # owner, base, parts
    mcp: dict[str, dict[str, Any]] = {}

    def close() -> None:
        nonlocal open_msg
        if open_msg is not None:
            out.append(_message_item("assistant", open_msg[1], open_msg[2]))
            open_msg = None

    for b, owner in zip(m.blocks, _owners(m, items), strict=True):
        base = items[owner] if owner is not None else None
        base_type = base.get("type") if is_mapping(base) else None
        if isinstance(b, ToolCall):
            close()
            item = _call_item(b)
            if item["type"] == "mcp_call":
                mcp[b.id] = item
            out.append(item)
        elif isinstance(b, ToolResult) and b.call_id in mcp:
            _merge_mcp(mcp[b.call_id], b)
        elif isinstance(b, ToolResult):
            msg = "a Responses assistant message holds no tool result other than mcp_call's"
            raise HistoryFormatError(msg)
        elif isinstance(b, Unknown) and (b.raw is base if owner is not None else _is_item(b.raw)):
            close()
            out.append(b.raw)
        else:  # a content part of an assistant message item
            if base_type not in (None, "message"):
                base = None
            if open_msg is None or (owner is not None and open_msg[0] != owner):
                close()
                open_msg = (owner, base, [])
            open_msg[2].append(b)
    close()
    return out


def _is_item(x: Any) -> bool:
    """A new Unknown block that is a whole item (not a content part)."""
    return is_mapping(x) and x.get("type") in ITEM_TYPES


def serialise_items(m: Message) -> list[Any]:
    """The input items of one canonical message (the very items when it is unchanged)."""
    if m._wire is not None:
        w = m._wire
        return list(w) if isinstance(w, tuple) else [w]
    if m.role == "assistant":
        return _serialise_assistant(m)
    if m.role == "tool":
        results = [b for b in m.blocks if isinstance(b, ToolResult)]
        if len(results) != 1 or len(m.blocks) != 1:
            msg = "a Responses tool output holds exactly one ToolResult block"
            raise HistoryFormatError(msg)
        return [_result_item(results[0])]
    base = m.raw
    if base is not None and base.get("type") not in (None, "message"):
        base = None
    if any(isinstance(b, ToolCall | ToolResult) for b in m.blocks):
        msg = f"a Responses {m.role} message cannot hold tool calls or results"
        raise HistoryFormatError(msg)
    return [_message_item(m.role, base, list(m.blocks))]


def serialise_message(m: Message) -> Any:
    """The single input item of a message; an error for a message made of several items."""
    items = serialise_items(m)
    if len(items) != 1:
        msg = f"this message is {len(items)} Responses items; serialise the whole history"
        raise HistoryFormatError(msg)
    return items[0]


def serialise_messages(messages: Sequence[Message]) -> list[Any]:
    """The ``input`` list of canonical messages."""
    out: list[Any] = []
    for m in messages:
        out.extend(serialise_items(m))
    return out


# --------------------------------------------------------------------------- pricing

_ITEM_KEYS = frozenset(
    {"type", "id", "status", "role", "content", "call_id", "name", "arguments", "input"}
    | {"output", "error", X_KEY}
)
_PART_KEYS = frozenset({"type", "text", "image_url"})


def unpriced_keys(m: Message) -> list[str]:
    """Keys the items of ``m`` send beyond what its blocks price (ids and types are framing).

    Unknown items (reasoning, compaction...) are priced whole as blocks already.
    """
    out: list[str] = []
    for item in _items_of(m):
        if not is_mapping(item) or (
            item.get("type") not in (None, "message")
            and (item.get("type") not in CALL_TYPES | RESULT_TYPES | {"mcp_call"})
        ):
            continue
        extra_keys(out, item, _ITEM_KEYS)
        parts = item.get("content") if item.get("type") in (None, "message") else item.get("output")
        if isinstance(parts, list):
            for p in parts:
                if is_mapping(p) and p.get("type") in PART_TYPES:
                    extra_keys(out, p, _PART_KEYS)
    return out
