"""The snapshot planner prices candidates by sums, with a few layouts per call (issue 22).

SPEC §5.6 / §5.9: the planner finds the fewest steps to image, or the least to cut, that
fit the target. It used to lay out every candidate's text (up to the whole middle per
probe); now the lossy candidates are priced by sums and only the boundary is laid out,
and no plan goes further than the page cap. These tests count the layouts and the pages
laid out per ``compact`` call, for histories ten times apart, and check the search
helpers against a plain binary search.
"""

from __future__ import annotations

import random

import pytest

import glyphfold
import glyphfold.render.api as render_api
from glyphfold.compaction.ladder.rungs.snapshot.price import gallop, lower_bound

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "file",
    "error",
    "def",
    "return",
    "import",
]


def _synth(n: int, seed: int = 0) -> dict:
    rnd = random.Random(seed)

    def txt(k: int) -> str:
        s = " ".join(rnd.choice(WORDS) for _ in range(k // 4))[:k]
        return "\n".join(s[i : i + 80] for i in range(0, len(s), 80))

    msgs: list[dict] = [{"role": "user", "content": txt(600)}]
    i = 0
    while len(msgs) < n:
        cid = f"call_{i}"
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": txt(300)},
                    {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": txt(300)}},
                ],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": cid, "content": txt(600)}],
            }
        )
        i += 1
    if msgs[-1]["role"] == "assistant":
        msgs.append({"role": "user", "content": "continue"})
    return {"system": "You are an agent.", "messages": msgs}


def _layouts(monkeypatch: pytest.MonkeyPatch, history: dict, budget: int) -> list[int]:
    """The pages each layout (``plan_resolved``: plan_text's and the planner's) laid out
    during one compact call."""
    pages: list[int] = []
    real = render_api.plan_resolved

    def counting(text: str, setup: object, **kw: object) -> render_api.TextPlan:
        plan = real(text, setup, **kw)  # type: ignore[arg-type]
        pages.append(len(plan.page_tokens))
        return plan

    monkeypatch.setattr(render_api, "plan_resolved", counting)
    result = glyphfold.compact(history, budget=budget)
    monkeypatch.undo()
    assert result.fits
    return pages


@pytest.mark.parametrize("budget", [6000, 16000])
def test_layouts_per_call_do_not_grow_with_the_history(monkeypatch, budget):
    """Words must be cut (lossy search) in a history of 3,000 messages (~2.7M chars): a
    few dozen layouts per call (the exact search made 115 here), none past the page cap,
    about as many as for a history ten times smaller."""
    small = _layouts(monkeypatch, _synth(300), budget)
    big = _layouts(monkeypatch, _synth(3000), budget)
    assert len(big) <= 45, len(big)
    assert len(big) <= len(small) + 30, (len(small), len(big))
    cap = glyphfold.get_profile("anthropic").max_images_per_request
    assert max(big) <= cap + 1  # a text of more pages is planned no further than that


def test_gallop_finds_the_binary_search_boundary():
    rnd = random.Random(7)
    for _ in range(300):
        n = rnd.randrange(1, 200)
        t = rnd.randrange(0, n + 1)  # ok(j) iff j >= t; ok(n) holds
        probes: list[int] = []

        def ok(j: int, t: int = t, probes: list[int] = probes) -> bool:
            probes.append(j)
            return j >= t

        start = rnd.randrange(0, n + 1)
        assert gallop(ok, start, 0, n) == t == lower_bound(0, n, lambda j, t=t: j >= t)
        assert len(probes) <= 2 * (abs(start - t).bit_length() + 1) + 1
        assert gallop(lambda x, t=t: x >= max(t, 1), start, 1, max(n, 1)) == max(t, 1)
