"""Shared helpers of the adapter tests: tool output, turn plans, the ledger checks.

Each adapter test drives its framework's own agent loop offline (the framework's fake
or scripted model): a short first turn (the task, one tool step) then 9 turns of 3 tool
steps (28 in all), every tool result large, the budget far below the whole run, so the
adapter compacts more than once and the second compaction meets the first one's pages.
"""

from __future__ import annotations

import hashlib
import re
from itertools import pairwise

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


# ---------------------------------------------------------------- two lossy passes

LOSSY_CHARS = 3_000  # each tool result of the lossy loops
# (pages a request, budget): both passes lossy; the first lossless, the second lossy
LOSSY_CASES = {"both-lossy": (1, 6_000), "lossless-then-lossy": (2, 12_000)}


class LossyRecorder:
    """A snapshot rung with a recording renderer and a page cap, and the results.

    ``rungs()`` goes to an adapter's ``rungs=``; ``on_compact`` to its ``on_compact=``.
    ``merged_lossy()`` gives, for each compaction that merged an earlier block and cut
    words, the text of the pages it sent (its last render: a retry re-renders).
    """

    def __init__(self, max_pages: int) -> None:
        self.max_pages = max_pages
        self.texts: list[str] = []
        self.results: list = []
        self._marks: list[int] = []

    def __call__(self, text: str, **kw):
        from glyphfold.compaction.ladder.rungs.snapshot import _default_renderer

        self.texts.append(text)
        return _default_renderer()(text, **kw)

    def rungs(self) -> list:
        from glyphfold.compaction.ladder.rungs.snapshot import Snapshot, SnapshotConfig

        return [Snapshot(SnapshotConfig(max_pages=self.max_pages), renderer=self), "trim"]

    def on_compact(self, result) -> None:
        self.results.append(result)
        self._marks.append(len(self.texts))

    def entries(self) -> list:
        return [
            next((e for e in r.ledger if e.rung == "snapshot" and e.pages), None)
            for r in self.results
        ]

    def merged_lossy(self) -> list[tuple[object, str]]:
        out = []
        for entry, mark in zip(self.entries(), self._marks, strict=True):
            if entry is None or not mark:
                continue
            if entry.extra.get("lossy") and entry.extra.get("merged_blocks"):
                out.append((entry, self.texts[mark - 1]))
        return out


def step_shares(pages_text: str, steps: list[int], chars: int = LOSSY_CHARS) -> dict[int, float]:
    """The share of each step's tool result (its ``def part_k_n`` lines) on the pages."""
    out = {}
    for k in steps:
        lines = [ln for ln in tool_output(k, chars).splitlines() if ln.startswith("def ")]
        present = sum(1 for ln in lines if ln in pages_text)
        out[k] = present / len(lines)
    return out


def check_oldest_first(rec: LossyRecorder, steps: list[int]) -> None:
    """A later lossy pass merged the earlier block, re-rendered from its source (SPEC
    §5.3), and cut the oldest steps first (SPEC §5.9): along the steps on its pages,
    oldest to newest, no step keeps a smaller share of its words than an older one."""
    passes = rec.merged_lossy()
    assert len(rec.results) >= 2 and passes, [
        (e.extra.get("lossy"), e.extra.get("merged_blocks")) for e in rec.entries() if e
    ]
    assert rerendered(rec.results)
    for entry, text in passes:
        # the steps this pass imaged: their calls are on the pages (whatever their results kept)
        found = re.findall(r"""#c(\d+)\b|['"]k['"]:\s*(\d+)""", text)
        imaged = sorted({int(a or b) for a, b in found} & set(steps))
        assert imaged, entry.note
        shares = step_shares(text, imaged)
        seq = [round(shares[k], 2) for k in imaged]
        assert all(a <= b + 0.05 for a, b in pairwise(seq)), (
            entry.note,
            dict(zip(imaged, seq, strict=True)),
        )
        assert min(seq) < 1.0, seq  # words were cut
