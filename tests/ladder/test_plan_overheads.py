"""The snapshot rung's per-call costs that do not depend on the choice (issue 22).

SPEC §5.6 / §5.9: the rung tries its choices (tail, shape, user messages as text) in
order, and the planner of each looks for a lossless plan before any cut. A choice whose
text alone (head, tail and the units it keeps as text) exceeds the target has no
lossless plan: the planner says so without laying anything out. The page geometry the
page cap needs is laid out once per call, not once per choice.
"""

from __future__ import annotations

import random

import pytest

import glyphfold
import glyphfold.render.api as render_api
from glyphfold.compaction.ladder.rungs.snapshot.plan import Planner, Unit
from glyphfold.compaction.ladder.rungs.snapshot.source import Source
from glyphfold.compaction.ladder.transcript import TranscriptConfig


def _planner(target: int, laid_out: list[str]) -> Planner:
    def plan(text: str) -> render_api.TextPlan:
        laid_out.append(text)
        return render_api.plan_text(text, reflow=True, collapse=True)

    units = [
        Unit(0, 0, 1, kept=True, user=True, positions=(), cost=500),
        Unit(1, 1, 2, kept=False, user=False, positions=(), cost=40),
    ]
    return Planner(
        units,
        Source([], {}, TranscriptConfig()),
        fixed_tokens=100,
        target=target,
        page_cap=10,
        plan=plan,
        overhead=lambda text: 30,
    )


def test_no_lossless_plan_when_the_kept_text_alone_exceeds_the_target():
    laid_out: list[str] = []
    assert _planner(599, laid_out).lossless() is None  # 100 fixed + 500 kept > 599
    assert laid_out == []
    # with room for the kept text the search runs as before (it lays out the run)
    _planner(10_000, laid_out).lossless()
    assert laid_out


def _history(n: int) -> dict:
    rnd = random.Random(3)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "file",
        "error",
        "def",
        "return",
        "import",
        "value",
        "path",
    ]

    def txt(k: int) -> str:
        return " ".join(rnd.choice(words) for _ in range(k // 5))

    msgs: list[dict] = [{"role": "user", "content": txt(800)}]
    for i in range(n):
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": txt(200)},
                    {"type": "tool_use", "id": f"c{i}", "name": "bash", "input": {"cmd": "ls"}},
                ],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"c{i}", "content": txt(900)}],
            }
        )
        if i % 7 == 3:  # real user messages in the middle: more choices to try
            msgs.append({"role": "assistant", "content": "ok"})
            msgs.append({"role": "user", "content": "and now " + txt(300)})
    msgs.append({"role": "assistant", "content": "done"})
    msgs.append({"role": "user", "content": "continue"})
    return {"system": "You are an agent.", "messages": msgs}


@pytest.mark.parametrize("budget", [2500, 6000])
def test_the_page_geometry_is_laid_out_once_per_shape_per_call(monkeypatch, budget):
    calls: list[str] = []
    real = render_api.plan_text

    def counting(text: str, **kw: object) -> render_api.TextPlan:
        calls.append(text)
        return real(text, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(render_api, "plan_text", counting)
    result = glyphfold.compact(_history(60), budget=budget)
    monkeypatch.undo()
    assert any(e.rung == "snapshot" for e in result.ledger)
    assert len(calls) > 3  # several choices were planned
    assert calls.count("x") <= 2  # the shape ladder has at most two shapes here
