"""The planner's array paths give what its per-unit loops give (issue 22).

SPEC §5.6 / §5.9: a lossy candidate's text is the units that stay, with one marker line
per gap of dropped units. At 10^4+ messages the search prices dozens of candidates that
drop most of a run of 10^4+ units; ``Planner.run_text`` reads such a run with arrays
(the few units that stay, the gaps' sums) instead of a pass over every unit. These
tests compare that path with the loop on the planners of real ``compact`` calls, over
random and search-shaped treatments.
"""

from __future__ import annotations

import importlib
import random

import pytest

import glyphfold
from glyphfold.compaction.ladder.rungs.snapshot.plan import Planner, Treatment

plan_mod = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot.plan")
snap_mod = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot")


def _history(n: int, seed: int = 0) -> dict:
    rnd = random.Random(seed)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "for",
        "on",
        "with",
        "file",
        "error",
        "def",
        "return",
        "import",
    ]

    def txt(k: int) -> str:
        return " ".join(rnd.choice(words) for _ in range(k // 5))

    msgs: list[dict] = [{"role": "user", "content": txt(400)}]
    for i in range(n):
        cid = f"call_{i}"
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": txt(200)},
                    {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": txt(80)}},
                ],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": cid, "content": txt(600)}],
            }
        )
        if i % 37 == 5:  # real user messages: kept as text, they split the runs
            msgs.append({"role": "assistant", "content": "ok"})
            msgs.append({"role": "user", "content": "now " + txt(100)})
    msgs.append({"role": "user", "content": "continue"})
    return {"system": "You are an agent.", "messages": msgs}


@pytest.fixture(scope="module")
def planners() -> list[Planner]:
    made: list[Planner] = []

    class Noting(Planner):
        def __init__(self, *a, **kw):  # type: ignore[no-untyped-def]
            super().__init__(*a, **kw)
            made.append(self)

    mp = pytest.MonkeyPatch()
    mp.setattr(snap_mod, "Planner", Noting)
    try:
        r = glyphfold.compact(_history(600), budget=8000)
    finally:
        mp.undo()
    assert r.pages and made
    return made


def _treatments(p: Planner, rnd: random.Random) -> list[Treatment]:
    """Random drops, the search's own candidates (its moves applied), a cut, all dropped."""
    m = len(p.units)
    out = [Treatment(dropped=set(range(m)))]
    for share in (0.1, 0.5, 0.9, 0.99):
        out.append(Treatment(dropped={k for k in range(m) if rnd.random() < share}))
    moves = p.moves(m)
    for j in sorted(rnd.sample(range(len(moves) + 1), min(8, len(moves) + 1))):
        out.append(p._apply_at(m, moves, j))
    t = p._apply_at(m, moves, max(0, len(moves) - 3))
    stay = [k for k in range(m) if k not in t.dropped and p._lens0()[k]]
    if stay:
        t.cut = (stay[0], 7)
    out.append(t)
    return out


def test_run_text_arrays_equal_the_loop(planners, monkeypatch):
    rnd = random.Random(22)
    checked = 0
    for p in planners:
        for t in _treatments(p, rnd):
            for run in p.full_runs:
                monkeypatch.setattr(plan_mod, "_VECTOR_MIN", 10**9)  # the loop
                loop = p.run_text(run, t)
                monkeypatch.setattr(plan_mod, "_VECTOR_MIN", 0)  # arrays whenever asked
                arrays = p.run_text(run, t)
                assert arrays == loop
                checked += 1
    assert checked >= 10


def test_gaps_count_every_dropped_unit_with_text(planners, monkeypatch):
    monkeypatch.setattr(plan_mod, "_VECTOR_MIN", 0)
    p = max(planners, key=lambda q: len(q.units))
    run = max(p.full_runs, key=len)
    lens0 = p._lens0()
    dropped = set(run[::3]) | set(run[1::7])
    stay, tail, all_dropped = p._gaps(run, dropped)
    gone = [k for k in run if k in dropped and lens0[k]]
    assert sum(g for _, g, _ in stay) + tail[0] == sum(len(p.units[k].positions) for k in gone)
    assert sum(c for _, _, c in stay) + tail[1] == sum(lens0[k] for k in gone)
    assert [k for k, _, _ in stay] == [k for k in run if k not in dropped and lens0[k]]
    assert not all_dropped
    assert p._gaps(run, set(run))[2]


price_mod = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot.price")


def test_move_prices_arrays_equal_the_loop(planners, monkeypatch):
    """The estimate's level moves priced with arrays: the same per-run move indices,
    running changes, drops and prices as the per-move loop."""
    checked = 0
    for p in planners:
        for c in {len(p.units), max(1, len(p.units) // 2)}:
            moves = p.moves(c)
            if not moves:
                continue
            monkeypatch.setattr(price_mod, "_VECTOR_MOVES", 10**9)
            loop = price_mod.MovePrices(p, c, moves)
            monkeypatch.setattr(price_mod, "_VECTOR_MOVES", 0)
            arrays = price_mod.MovePrices(p, c, moves)
            assert arrays._at == loop._at
            assert arrays._cum == loop._cum
            assert arrays._drops == loop._drops
            for j in range(0, len(moves) + 1, max(1, len(moves) // 50)):
                assert arrays.price(j) == loop.price(j)
            checked += 1
    assert checked >= 2


def test_a_runs_lossless_text_is_joined_once_per_call(monkeypatch):
    """The planners of one call that image the same steps (the reading aids' choices of
    issue 20: the bare check images the widest choice again) share the run's lossless
    text: each is joined once per call, not once per planner (at 10^5 messages a 100M-char
    join, its hash for the layout and factsheet memos)."""
    src_mod = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot.source")
    joined: list[str] = []
    real = src_mod.Source.back

    def noting(self, text, start, positions):  # type: ignore[no-untyped-def]
        joined.append(text)
        return real(self, text, start, positions)

    monkeypatch.setattr(src_mod.Source, "back", noting)
    r = glyphfold.compact(_history(600, seed=3), budget=8000)
    snap = [e for e in r.ledger if e.rung == "snapshot"]
    assert snap and snap[0].extra["lossy"]  # the words were cut: the bare check ran
    assert joined
    assert len(set(joined)) == len(joined)  # no text joined twice
