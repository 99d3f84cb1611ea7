"""The retention benchmark's accounting (issue 20): what a budget holds, and the check that
no words are cut while their pages would fit.

``benchmarks/bench_retention.py`` reports, per budget, the share of the target each part
of what glyphfold sends holds (the fixed text every method sends, other text, the
snapshots' own text, pages, unused) and flags a lossy snapshot that leaves more room
unused than its fit rounds allow. These tests pin that accounting on a synthetic
session, text only (no OCR engine).
"""

from __future__ import annotations

import sys
from pathlib import Path

from glyphfold.compaction.history.messages import coerce
from glyphfold.compaction.history.tokens import estimate_history_tokens

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retention import ROOM, Reader, middle_facts, run_method  # noqa: E402

from tests.ladder.test_tight_budgets import plain_session  # noqa: E402


def test_the_parts_of_a_tight_budget_add_up_to_its_target():
    wire = plain_session(40)
    h = coerce(wire)[0]
    facts = middle_facts(h)
    assert facts
    budget = estimate_history_tokens(wire) // 5
    out = run_method("glyphfold", wire, budget, Reader([], None), facts)
    assert out.fits and out.lossy and out.pages >= 1
    room = out.room
    assert sum(room[k] for k in ROOM) == budget  # every token of the target accounted for
    assert room["pages"] > 0 and room["snapshot_text"] > 0
    assert room["fixed"] + room["room"] == budget  # the room is what the fixed text leaves
    assert 0 < room["page_chars"] < room["middle_chars"]  # cut: the pages hold part of it
    # the cut pages fill the room: no words cut while their pages would fit (SPEC §5.6)
    assert out.cut_with_room == 0
    assert room["unused"] < 64


def test_no_room_accounting_for_the_other_methods():
    wire = plain_session(40)
    h = coerce(wire)[0]
    facts = middle_facts(h)
    budget = estimate_history_tokens(wire) // 2
    for method in ("no-snapshot", "drop-middle"):
        out = run_method(method, wire, budget, Reader([], None), facts)
        assert out.fits and not out.room and out.pages == 0
