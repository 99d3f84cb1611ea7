"""Canonical columns of a wire message (role, turn start, tool ids, token estimate).

Temporary, wire-dict based: replaced by glyphfold.compaction.messages / turns /
tokens as soon as core lands on main.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from glyphfold.errors import HistoryFormatError

TOOL_RESULTS_PREFIX = "[Tool results]"
_OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool"}
_ANTHROPIC_ROLES = {"user", "assistant"}


@dataclass(frozen=True)
class Canon:
    role: str
    turn_start: bool
    tool_call_ids: tuple[str, ...]
    tool_result_ids: tuple[str, ...]
    tokens: int
    format: str | None  # "openai" | "anthropic" | None (plain text: either)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def canon(message: Any, *, index: int) -> Canon:
    """Canonical columns of one wire message; HistoryFormatError when it is not one."""
    if not isinstance(message, dict):
        msg = f"message {index} is a {type(message).__name__}, expected a dict with a 'role'"
        raise HistoryFormatError(msg, index=index)
    role = message.get("role")
    if role not in _OPENAI_ROLES:
        msg = f"message {index} has role {role!r}; expected one of {sorted(_OPENAI_ROLES)}"
        raise HistoryFormatError(msg, index=index)
    fmt: str | None = None
    calls: list[str] = []
    results: list[str] = []
    content = message.get("content")
    if role in ("system", "developer", "tool") or "tool_calls" in message:
        fmt = "openai"
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            msg = f"message {index} has a tool call without a string 'id'"
            raise HistoryFormatError(msg, index=index)
        calls.append(call["id"])
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str):
            msg = f"tool message {index} has no string 'tool_call_id'"
            raise HistoryFormatError(msg, index=index)
        results.append(call_id)
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                fmt = _merge(fmt, "anthropic", index)
                calls.append(str(block.get("id")))
            elif kind == "tool_result":
                fmt = _merge(fmt, "anthropic", index)
                results.append(str(block.get("tool_use_id")))
            elif kind in ("image", "document", "thinking", "redacted_thinking"):
                fmt = _merge(fmt, "anthropic", index)
            elif kind in ("image_url", "input_audio"):
                fmt = _merge(fmt, "openai", index)
    only_results = (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )
    turn_start = (
        role == "user"
        and not only_results
        and not _text_of(content).lstrip().startswith(TOOL_RESULTS_PREFIX)
    )
    raw = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    tokens = 4 + (len(raw) + 3) // 4
    return Canon(role, turn_start, tuple(calls), tuple(results), tokens, fmt)


def _merge(current: str | None, new: str, index: int) -> str:
    if current is not None and current != new:
        msg = f"message {index} mixes OpenAI and Anthropic fields"
        raise HistoryFormatError(msg, index=index)
    return new


def tool_call_summaries(message: dict[str, Any]) -> list[str]:
    """``name(args)`` for every tool call in a wire message, arguments shortened."""
    out: list[str] = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        out.append(_short(fn.get("name", "?"), fn.get("arguments", "")))
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                out.append(_short(block.get("name", "?"), block.get("input", {})))
    return out


def _short(name: str, args: Any, limit: int = 60) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{name}({text})"
