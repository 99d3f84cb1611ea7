"""Deterministic long agent histories (one long tool-using turn) in both wire formats."""

from __future__ import annotations

import json
import random
from typing import Any

WORDS = (
    "parser",
    "token",
    "buffer",
    "index",
    "value",
    "offset",
    "result",
    "error",
    "module",
    "config",
    "cache",
    "stream",
    "window",
    "budget",
    "request",
    "header",
    "client",
    "server",
    "thread",
    "socket",
    "file",
    "path",
)


def _output(rng: random.Random, chars: int, step: int) -> str:
    lines = []
    n = 0
    while n < chars:
        line = f"{step:03d}:{len(lines):03d} " + " ".join(rng.choice(WORDS) for _ in range(9))
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)


def openai_history(
    steps: int, *, chars: int = 4_000, seed: int = 0, task: str = "Fix the parser"
) -> list[dict[str, Any]]:
    """System + a task + ``steps`` tool steps (``chars`` per tool result), OpenAI format."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": f"{task}: the tests in tests/test_parser.py fail."},
    ]
    for i in range(steps):
        cid = f"call_{seed}_{i}"
        out.append(
            {
                "role": "assistant",
                "content": f"Step {i}: reading module {i}.",
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"cmd": f"cat mod{i}.py"}),
                        },
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": cid, "content": _output(rng, chars, i)})
    return out


def anthropic_history(
    steps: int, *, chars: int = 4_000, seed: int = 0, task: str = "Fix the parser"
) -> dict[str, Any]:
    """The same shape in Anthropic format: ``{"system", "messages"}``."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"{task}: the tests in tests/test_parser.py fail."},
    ]
    for i in range(steps):
        tid = f"toolu_{seed}_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {i}: reading module {i}."},
                    {
                        "type": "tool_use",
                        "id": tid,
                        "name": "bash",
                        "input": {"cmd": f"cat mod{i}.py"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tid, "content": _output(rng, chars, i)},
                ],
            }
        )
    return {"system": "You are a careful coding agent.", "messages": messages}
