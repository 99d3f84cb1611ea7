"""Deterministic wire histories for the store tests (OpenAI and Anthropic)."""

from __future__ import annotations

from typing import Any


def openai_turn(n: int, *, tools: int = 1, tag: str = "") -> list[dict[str, Any]]:
    """One OpenAI turn: a user message, ``tools`` tool calls with results, a reply."""
    calls = [
        {
            "id": f"call_{tag}{n}_{k}",
            "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "src/f{n}_{k}.py"}}'},
        }
        for k in range(tools)
    ]
    user = {"role": "user", "content": f"step {tag}{n}: look at file {n} — ü"}
    turn: list[dict[str, Any]] = [user]
    if calls:
        turn.append({"role": "assistant", "content": None, "tool_calls": calls})
        turn.extend(
            {"role": "tool", "tool_call_id": c["id"], "content": f"contents of {n}/{k} " * 5}
            for k, c in enumerate(calls)
        )
    turn.append({"role": "assistant", "content": f"done with {tag}{n}"})
    return turn


def anthropic_turn(n: int, *, tag: str = "") -> list[dict[str, Any]]:
    """One Anthropic turn with a tool_use / tool_result pair."""
    call_id = f"toolu_{tag}{n}"
    return [
        {"role": "user", "content": f"step {tag}{n}"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": f"ls {n}"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a b c"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": f"ok {n}"}]},
    ]


def orphan_results(messages: list[dict[str, Any]]) -> list[str]:
    """Tool-result ids whose call is not earlier in ``messages`` (both formats)."""
    seen: set[str] = set()
    orphans: list[str] = []
    for m in messages:
        for call in m.get("tool_calls") or []:
            seen.add(call["id"])
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        for b in blocks:
            if b.get("type") == "tool_use":
                seen.add(b["id"])
            if b.get("type") == "tool_result" and b["tool_use_id"] not in seen:
                orphans.append(b["tool_use_id"])
        if m.get("role") == "tool" and m["tool_call_id"] not in seen:
            orphans.append(m["tool_call_id"])
    return orphans
