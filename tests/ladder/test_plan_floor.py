"""The snapshot planner's price floor, known without a layout (issue 22).

SPEC §5.6 / §5.9: the rung tries its choices (tail, shape, user messages as text) in
order and takes the first that holds the middle losslessly. Most choices of a real
session fail, and each failure used to cost a layout of its whole run. A choice whose
price is over the target even at its floor (the text that stays, and pages that hold
no more than the run's printable ASCII characters) is ruled out with no layout; the
floor never exceeds the price the layout gives, so the choice made is the same.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import glyphfold
import glyphfold.render.api as render_api
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.ladder.rungs.snapshot import Snapshot, _Memo
from glyphfold.compaction.ladder.rungs.snapshot.plan import Planner, Unit
from glyphfold.compaction.ladder.rungs.snapshot.source import Source
from glyphfold.compaction.ladder.transcript import TranscriptConfig
from glyphfold.render import codes as K
from glyphfold.render.layout import classify, least_cells
from glyphfold.render.profiles import get_profile, profile_names
from tests.ladder.test_plan_overheads import _history

_VISION = [p for p in profile_names() if get_profile(p).vision]


def test_printable_ascii_is_one_narrow_cell_each():
    # the floor counts these, and only these: each must be narrow and never dropped
    assert all(classify(cp) == K.C_NARROW for cp in range(0x21, 0x7F))
    assert least_cells("ab c\td\n\re \x07f") == 6  # whitespace and controls count 0
    assert least_cells("naïve 名前") == 4  # other characters count 0
    assert least_cells("\x1b[31mred\x1b[0m") == 0  # an ANSI sequence drops ASCII letters


_ALPHABET = st.sampled_from(
    [
        *"abcdefghij{}();:,.-_/=+*#'\"0123456789",
        *[" ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", "é", "名", "😀", "\u200b", "\x07"],
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(_ALPHABET, min_size=0, max_size=4000),
    profile=st.sampled_from(_VISION),
    shape=st.sampled_from(["large", "regular", "dense"]),
    flags=st.sampled_from([(True, True), (False, False), (True, False)]),
)
def test_the_floor_never_exceeds_the_price_of_the_layout(parts, profile, shape, flags):
    text = "".join(parts)
    reflow, collapse = flags
    snap = Snapshot(glyphfold.SnapshotConfig(reflow=reflow, collapse=collapse))
    floor = snap._geometry(get_profile(profile), shape, _Memo())[1]
    plan = render_api.plan_text(
        text, profile=profile, shape=shape, reflow=reflow, collapse=collapse
    )
    assert floor(least_cells(text)) <= sum(plan.page_tokens)


def test_the_floor_changes_no_choice_and_saves_layouts(monkeypatch):
    """The same compactions with the floor and without it (the planner then lays every
    choice out): the same messages, pages and ledger; fewer layouts with it."""
    from glyphfold.compaction.history.tokens import estimate_history_tokens
    from glyphfold.compaction.ladder.rungs.snapshot import plan as plan_mod

    real = render_api.plan_resolved
    counted: list[int] = []

    def counting(text: str, setup: object, **kw: object) -> render_api.TextPlan:
        counted.append(len(text))
        return real(text, setup, **kw)  # type: ignore[arg-type]

    def run(history: dict, budget: int, floor: bool) -> tuple[object, int]:
        if not floor:
            monkeypatch.setattr(plan_mod, "_FLOOR_UNITS", -1)
        monkeypatch.setattr(render_api, "plan_resolved", counting)
        counted.clear()
        try:
            result = glyphfold.compact(history, budget=budget)
        finally:
            monkeypatch.undo()
        return result, len(counted)

    saved = []
    for share in (0.2, 0.4, 0.5, 0.7):
        history = _history(40, seed=int(share * 100), distinct=True)
        budget = int(estimate_history_tokens(history) * share)
        with_floor, laid_with = run(history, budget, True)
        without, laid_without = run(history, budget, False)
        assert with_floor.messages == without.messages
        assert [p.png for p in with_floor.pages] == [p.png for p in without.pages]
        assert [e.to_dict() for e in with_floor.ledger] == [e.to_dict() for e in without.ledger]
        saved.append(laid_without - laid_with)
    assert min(saved) >= 0
    assert max(saved) > 0, saved


def test_a_choice_its_floor_rules_out_is_not_laid_out():
    history = to_canonical(
        [
            {"role": "user", "content": "step one " * 300},
            {"role": "assistant", "content": "step two " * 300},
        ],
        format="openai",
    )
    laid_out: list[str] = []

    def plan(text: str) -> render_api.TextPlan:
        laid_out.append(text)
        return render_api.plan_text(text, reflow=True, collapse=True)

    floor = Snapshot()._geometry(get_profile("anthropic"), None, _Memo())[1]
    units = [
        Unit(0, 0, 1, kept=False, user=False, positions=(0,), cost=700),
        Unit(1, 1, 2, kept=False, user=False, positions=(1,), cost=700),
    ]

    def planner(target: int) -> Planner:
        return Planner(
            units,
            Source(history.messages, {}, TranscriptConfig()),
            fixed_tokens=100,
            target=target,
            page_cap=10,
            plan=plan,
            overhead=lambda text: 30,
            cells=least_cells,
            pages_floor=floor,
        )

    # 2 x 300 times "step one ": 4,200 printable characters, a page of them at least
    least = 100 + floor(2 * 300 * len("stepone"))
    assert planner(least - 1).lossless() is None
    assert laid_out == []
    assert planner(10_000).lossless() is not None  # room for it: laid out, and fits
    assert laid_out
