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
