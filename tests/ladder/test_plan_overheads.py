"""The snapshot rung's per-call costs that do not depend on the choice (issue 22).

SPEC §5.6 / §5.9: the rung tries its choices (tail, shape, user messages as text) in
order, and the planner of each looks for a lossless plan before any cut. A choice whose
text alone (head, tail and the units it keeps as text) exceeds the target has no
lossless plan: the planner says so without laying anything out. The page geometry the
page cap needs is laid out once per call, not once per choice.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

import glyphfold
import glyphfold.render.api as render_api
from glyphfold.compaction.history.messages import to_canonical
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


def _history(n: int, *, seed: int = 3, distinct: bool = False) -> dict:
    """A synthetic session of ``n`` tool steps with real user messages in its middle;
    ``distinct``: each step runs another command (``cat m<i>.py``), so no result is
    superseded and elision leaves them all to the snapshot (otherwise every step runs
    ``ls``)."""
    rnd = random.Random(seed)
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
                    {
                        "type": "tool_use",
                        "id": f"c{i}",
                        "name": "bash",
                        "input": {"cmd": f"cat m{i}.py" if distinct else "ls"},
                    },
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
def test_the_page_geometry_needs_no_layout(monkeypatch, budget):
    """The page cap's bytes per page and the price floor come from the renderer's setup
    (resolved once per shape and call), not from a layout of a character."""
    from glyphfold.compaction.ladder.rungs import snapshot

    calls: list[str] = []
    resolved: list[object] = []
    real = render_api.plan_resolved
    real_setup = snapshot.resolve_setup

    def counting(text: str, setup: object, **kw: object) -> render_api.TextPlan:
        calls.append(text)
        return real(text, setup, **kw)  # type: ignore[arg-type]

    def resolving(*args: object, **kw: object) -> object:
        resolved.append(args)
        return real_setup(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(render_api, "plan_resolved", counting)
    monkeypatch.setattr(snapshot, "resolve_setup", resolving)
    result = glyphfold.compact(_history(60), budget=budget)
    monkeypatch.undo()
    assert any(e.rung == "snapshot" for e in result.ledger)
    assert len(calls) > 3  # several choices were planned
    assert "x" not in calls  # no layout of a character for the geometry
    assert 1 <= len(resolved) <= 2  # the options of each shape resolved once per call


def _text_planner(target: int, read: list[str]) -> Planner:
    """Two imaged units of text (one run) and a factsheet price that records each text
    it reads; the floor is the price without a factsheet (200 tokens)."""
    history = to_canonical(
        [
            {"role": "user", "content": "step one " * 200 + " /srv/app/main.py 0x7ffe1234"},
            {"role": "assistant", "content": "step two " * 200 + " deadbeef1 /etc/x.conf"},
        ],
        format="openai",
    )

    def overhead(text: str) -> int:
        read.append(text)
        return 200 + 50

    units = [
        Unit(0, 0, 1, kept=False, user=False, positions=(0,), cost=500),
        Unit(1, 1, 2, kept=False, user=False, positions=(1,), cost=500),
    ]
    return Planner(
        units,
        Source(history.messages, {}, TranscriptConfig()),
        fixed_tokens=100,
        target=target,
        page_cap=10,
        plan=lambda text: render_api.plan_text(text, reflow=True, collapse=True),
        overhead=overhead,
        overhead_floor=lambda text: 200,
    )


def test_a_choice_the_overhead_floor_rules_out_reads_no_factsheet():
    read: list[str] = []
    planner = _text_planner(0, read)
    pages_tokens = planner.lossless_tokens(2, bound=-1)[0] - 100 - 200
    # the target lies below the price with the floor: no prefix fits, nothing is read
    planner.target = 100 + 200 + pages_tokens - 1
    assert planner.lossless() is None
    assert read == []
    # a target the floor does not rule out: the factsheet is read, and decides
    planner.target = 100 + 200 + pages_tokens + 10  # the floor fits, the price does not
    assert planner.lossless() is None
    assert read
    planner.target = 100 + 250 + pages_tokens + 1000
    assert planner.lossless() is not None


def test_the_build_reuses_the_planners_reading_of_a_lossy_runs_source(monkeypatch):
    """A lossy run's factsheet lists the identifiers of its cut words, read from its
    whole text: the text the planner read to price the run (SPEC §5.9)."""
    import glyphfold.compaction.ladder.rungs.snapshot.factsheet as fs

    made: list[str] = []
    real = fs.FactScan.__init__

    def counting(self: fs.FactScan, text: str, *args: object, **kw: object) -> None:
        made.append(text)
        real(self, text, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fs.FactScan, "__init__", counting)
    result = glyphfold.compact(_history(60), budget=1500)
    monkeypatch.undo()
    entry = next(e for e in result.ledger if e.rung == "snapshot")
    assert entry.extra["lossy"]
    assert made
    assert max(Counter(made).values()) == 1  # each text read by one FactScan per call


def test_the_per_message_sums_of_one_call_match_the_messages():
    """The page cap and the units read ranges of the input history through prefix sums
    computed once per call: the same totals as summing the messages."""
    from glyphfold.compaction.ladder.rungs.snapshot import _HistoryFacts
    from glyphfold.compaction.ladder.rungs.snapshot.build import is_snapshot

    first = glyphfold.compact(_history(30), budget=2000)  # a snapshot message in it
    history = to_canonical(first.messages)
    png = "iVBORw0KGgo" + "A" * 40
    wire = [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
                {"type": "text", "text": "look"},
            ],
        }
    ]
    history = history.replace_messages(
        (*history.messages, *to_canonical(wire, format="openai").messages)
    )

    class Ctx:
        def message_costs(self, h):
            return tuple(7 + len(m.text) for m in h.messages)

    facts = _HistoryFacts(history, Ctx())  # type: ignore[arg-type]
    msgs = history.messages
    n = len(msgs)
    assert any(is_snapshot(m) for m in msgs) and any(m.images for m in msgs)
    rnd = random.Random(1)
    for _ in range(50):
        ranges = []
        for _ in range(rnd.randrange(0, 4)):
            a = rnd.randrange(0, n + 1)
            ranges.append((a, rnd.randrange(a, n + 1)))
        kept = [m for a, b in ranges for m in msgs[a:b]]
        assert facts.images(ranges) == sum(len(m.images) for m in kept)
        assert facts.sent(ranges) == sum(len(m.images) for m in kept if is_snapshot(m))
        assert facts.request_bytes(ranges) == sum(
            len(m.text) * 2 + sum(len(i.data or "") for i in m.images) for m in kept
        )
        for a, b in ranges:
            assert facts.cost(a, b) == sum(7 + len(m.text) for m in msgs[a:b])
            assert facts.has_snapshot(a, b) == any(is_snapshot(m) for m in msgs[a:b])


def test_the_widest_choice_is_asked_whether_it_fits_not_for_its_plan(monkeypatch):
    """The rung asks its widest choice (every step imaged, densest shape) only whether a
    lossless plan exists, before trying the choices in order: the fewest steps and the
    latest start are searched for the choice it takes, not for that check."""
    from glyphfold.compaction.ladder.rungs.snapshot.plan import Planner as P

    asked: list[str] = []
    real_has, real_lossless = P.has_lossless, P.lossless

    def has(self: P) -> bool:
        asked.append("has")
        return real_has(self)

    def lossless(self: P):  # type: ignore[no-untyped-def]
        asked.append("plan")
        return real_lossless(self)

    monkeypatch.setattr(P, "has_lossless", has)
    monkeypatch.setattr(P, "lossless", lossless)
    result = glyphfold.compact(_history(60), budget=6000)
    monkeypatch.undo()
    assert any(e.rung == "snapshot" for e in result.ledger)
    assert asked[0] == "has" and asked.count("has") == 1
    assert "plan" in asked[1:]


def test_has_lossless_agrees_with_lossless():
    seen = set()
    for target in (599, 700, 1500, 3000, 10_000):
        read: list[str] = []
        a, b = _text_planner(target, read), _text_planner(target, read)
        assert a.has_lossless() == (b.lossless() is not None), target
        seen.add(a.has_lossless())
    assert seen == {True, False}


@pytest.mark.parametrize("focus", [None, "the failing test"])
def test_the_overhead_floor_and_ceiling_bound_the_overhead(focus):
    """What the planner decides with the bounds it decides as with the price: the floor
    is at most, the ceiling at least, the overhead of any text under any caps."""
    from glyphfold.compaction.ladder.rungs.snapshot import Snapshot
    from glyphfold.compaction.ladder.rungs.snapshot.factsheet import FactsheetConfig
    from tests.ladder.test_factsheet_scans import _text

    snap = Snapshot(focus=focus)
    rnd = random.Random(9)
    texts = ["", "plain words only", *(_text(rnd, n) for n in (1, 5, 30, 300, 3000))]
    for cfg in (
        FactsheetConfig(),
        FactsheetConfig(max_chars=0),
        FactsheetConfig(max_chars=50),
        FactsheetConfig(max_items=2),
        FactsheetConfig(max_chars=20_000, max_items=1000),
    ):
        price, ceiling = snap._overhead(cfg), snap._overhead_ceiling(cfg)
        for text in texts:
            assert snap._overhead_floor(text) <= price(text) <= ceiling(text), (cfg, len(text))
