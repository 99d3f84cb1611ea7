"""Shared helpers of the adapter tests: tool output, turn plans, the ledger checks.

Each adapter test drives its framework's own agent loop offline (the framework's fake
or scripted model): a short first turn (the task, one tool step) then 9 turns of 3 tool
steps (28 in all), every tool result large, the budget far below the whole run, so the
adapter compacts more than once and the second compaction meets the first one's pages.
"""

from __future__ import annotations

import hashlib

PLAN = (1, 3, 3, 3, 3, 3, 3, 3, 3, 3)  # tool steps per user turn (28 in all)
BUDGET = 4_000  # compact down to this...
TRIGGER = 8_000  # ...once the request passes this
RUNGS = ("strip", "snapshot", "trim")  # pages, not stubs: what these tests look at


def tool_output(k: int, chars: int = 2_000) -> str:
    """A large, unremarkable tool result (source-code-like text)."""
    lines = []
    n = 0
    while sum(len(x) + 1 for x in lines) < chars:
        h = hashlib.sha1(f"{k}:{n}".encode()).hexdigest()[:10]
        lines.append(f"def part_{k}_{n}(x):  # {h}\n    return x + {n}")
        n += 1
    return "\n".join(lines)


def rerendered(results) -> bool:
    """True when a compaction re-rendered an earlier snapshot from its source (SPEC §5.3)."""
    return any(
        "re-rendered from its source" in (r.detail or "")
        for res in results
        for e in res.ledger
        if e.rung == "snapshot"
        for r in e.removed
    )


def snapshots(results) -> int:
    return sum(1 for res in results for e in res.ledger if e.rung == "snapshot" and e.pages)


def kept_or_merged(results) -> bool:
    """True when a later compaction met an earlier one's pages and either kept them as
    sent (frozen, SPEC §5.10) or merged them, re-rendered from source (§5.3)."""
    return any(
        e.extra.get("frozen_blocks") or e.extra.get("merged_blocks")
        for res in results
        for e in res.ledger
        if e.rung == "snapshot"
    )
