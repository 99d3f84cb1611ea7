"""Issue 20, SPEC §5.9: at tight budgets the snapshot still draws pages, and uses its room.

A plan that images nothing (every imaged step dropped, one marker line instead of the
middle) is never chosen: a cut plan with a page, or trim, keeps more. Shortened pages
fill the room the target leaves (the fit is re-planned against what the build cost).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.api import compact
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.snapshot import Snapshot, SnapshotConfig
from glyphfold.compaction.ladder.rungs.snapshot.build import FOCUS_GUIDE, guide_text
from glyphfold.compaction.ladder.rungs.snapshot.factsheet import (
    OFF_PAGE_HEADER,
    FactsheetConfig,
    extract_facts,
    format_factsheet,
    run_facts,
)


def observation(k: int) -> str:
    """A text agent's observation, sent as a user message (the ``__plain`` shape)."""
    rows = [f"/testbed/pkg/mod_{k}/file_{j}.py:{10 + j}: def handler_{k}_{j}()" for j in range(40)]
    return "OBSERVATION:\n" + "\n".join(rows)


def plain_session(steps: int = 27) -> list[dict[str, str]]:
    """A long instruction head, then one user observation per step (no tool calls)."""
    system = "You are a coding agent. " + " ".join(f"Rule {k}: be exact." for k in range(300))
    msgs = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Fix the failing handler in /testbed/pkg."},
    ]
    for k in range(steps):
        msgs.append({"role": "assistant", "content": f"Step {k}: grep -n handler_{k} pkg"})
        msgs.append({"role": "user", "content": observation(k)})
    msgs.append({"role": "assistant", "content": "Done: the handler is fixed."})
    return msgs


def snapshot_entry(result):
    return next((e for e in result.ledger if e.rung == "snapshot"), None)


@pytest.mark.parametrize("budget", [2950, 3000, 3050, 3100])
def test_a_plan_that_images_nothing_is_never_chosen(budget):
    """The tight-budget bug of issue 20: every imaged step dropped, no page drawn, the
    middle replaced by one marker line (0.1 chose it at 3,000 here). Either a page is
    drawn, or the snapshot steps aside and trim keeps the newest steps as text."""
    wire = plain_session()
    result = compact(wire, budget=budget)
    assert result.tokens_after <= budget
    assert find_violations(result.messages) == []
    e = snapshot_entry(result)
    assert e is not None
    if e.tokens_after < e.tokens_before:  # the snapshot acted: it drew a page
        assert len(result.pages) >= 1
        assert e.extra["new_blocks"] >= 1
        assert not any("were dropped to fit" in e.note for e in result.ledger)
    else:
        assert "skipped" in e.note
        assert any(x.rung == "trim" for x in result.ledger)


REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
if not REALDATA.is_dir():
    REALDATA = Path("/work/shared/realdata")


def test_the_real_session_keeps_a_page_at_a_fifth_of_its_estimate():
    """adp_swe-smith_0__plain (a text agent: every observation a user message) at 20%:
    0.1 drew no page and kept 0 of the middle's checkable facts (issue 20)."""
    path = REALDATA / "adp_swe-smith_0__plain.openai.json"
    if not path.exists():
        pytest.skip("../shared/realdata is absent")
    wire = json.loads(path.read_text(encoding="utf-8"))
    budget = estimate_history_tokens(wire) // 5
    result = compact(wire, budget=budget)
    assert result.tokens_after <= budget
    assert result.pages
    e = snapshot_entry(result)
    assert e.extra["new_blocks"] == 1 and e.extra["source_chars"] > 1_000


@pytest.mark.parametrize("budget", [3200, 3250])
def test_shortened_pages_use_the_room_the_target_leaves(budget):
    """A lossy snapshot re-plans until less than a sixteenth of a page (64 tokens at
    least) of the budget is unused (0.1 stopped with up to a page of room left)."""
    wire = plain_session()
    result = compact(wire, budget=budget, rungs="snapshot")
    e = snapshot_entry(result)
    assert e is not None and e.extra["lossy"]
    assert result.pages
    page = max(p.image_tokens for p in result.pages)
    assert 0 <= budget - result.tokens_after < max(64, page // 16)


def test_the_factsheet_of_a_lossy_snapshot_lists_the_cut_words_ids_first():
    """Words cut to fit are on no page: their paths and ids lead the factsheet (issue 20),
    within the same caps; the pages' own identifiers fill what is left."""
    cut = "opened /srv/old/config_a.yaml, commit 3f9a1c2b7e, then /srv/old/config_b.yaml"
    shown = "now reading /srv/new/main.py at deadbeef42"
    source = cut + "\n" + shown
    facts = run_facts(shown, source)
    off = [f.value for f in facts if f.off_page]
    on = [f.value for f in facts if not f.off_page]
    assert off == ["/srv/old/config_a.yaml", "3f9a1c2b7e", "/srv/old/config_b.yaml"]
    assert on == ["/srv/new/main.py", "deadbeef42"]
    sheet = format_factsheet(facts)
    assert OFF_PAGE_HEADER in sheet
    assert sheet.index("/srv/new/main.py") < sheet.index(OFF_PAGE_HEADER) < sheet.index("3f9a1c")
    # lossless: the pages' identifiers only, as before
    assert run_facts(shown, shown) == run_facts(shown, "") == extract_facts(shown)
    # the caps hold, cut words first
    capped = run_facts(shown, source, config=FactsheetConfig(max_items=2))
    assert [f.off_page for f in capped] == [True, True]


def test_a_lossy_snapshot_sends_the_ids_of_its_cut_steps_as_text():
    wire = plain_session(40)
    result = compact(wire, budget=3250, rungs="snapshot")
    e = snapshot_entry(result)
    assert e.extra["lossy"] and result.pages
    sent = json.dumps(result.for_provider())
    assert OFF_PAGE_HEADER in sent
    # the oldest observation's paths were cut from the pages, and are sent as text
    assert "/testbed/pkg/mod_0/file_3.py" in sent


def test_the_factsheet_takes_at_most_its_share_of_the_room():
    """At a tight budget the pages get most of the room: the factsheet's caps shrink
    to ``factsheet_share`` of the tokens head and tail leave (issue 20)."""
    snap = Snapshot()
    assert snap._factsheet(100_000) == FactsheetConfig()  # room: the configured caps
    assert snap._factsheet(400).max_chars == 400  # a quarter of 400 tokens, ~4 chars each
    assert snap._factsheet(-5).max_chars == 0
    assert Snapshot(SnapshotConfig(factsheet_share=0.5))._factsheet(400).max_chars == 800
    with pytest.raises(ValueError, match="factsheet_share"):
        SnapshotConfig(factsheet_share=0.0)
    # the same tight budget, with the factsheet's share of the room and without a limit
    # on it: the limited factsheet is shorter and its pages hold more of the words
    wire = plain_session(40)
    out = {}
    for share in (0.25, 1.0):
        config = LadderConfig(snapshot=SnapshotConfig(factsheet_share=share))
        result = compact(wire, budget=3250, rungs="snapshot", config=config)
        (msg,) = [m for m in result.for_provider() if isinstance(m.get("content"), list)]
        sheet = [p["text"] for p in msg["content"] if p.get("type") == "text"][-1]
        assert OFF_PAGE_HEADER in sheet
        out[share] = (len(sheet), snapshot_entry(result).extra["source_chars"])
    assert out[0.25][0] < out[1.0][0]
    assert out[0.25][1] > out[1.0][1]


def test_the_result_reports_only_the_pages_it_sends():
    """Pages of a snapshot that a later rung dropped (trim, when even the shortened
    pages overshoot) are not the result's ``pages``: it lists what the model is sent."""
    wire = plain_session()
    dropped_after_drawing = 0
    for budget in range(2390, 2700, 40):
        result = compact(wire, budget=budget)
        sent = {i.data for m in to_canonical(result.messages).messages for i in m.images if i.data}
        assert {base64.b64encode(p.png).decode("ascii") for p in result.pages} <= sent
        drew = any(e.rung == "snapshot" and e.pages for e in result.ledger)
        dropped_after_drawing += drew and not result.pages
    assert dropped_after_drawing  # the case was exercised


def _guide(result) -> str:
    (msg,) = [m for m in result.for_provider() if isinstance(m.get("content"), list)]
    return next(p["text"] for p in msg["content"] if p.get("type") == "text")


def test_a_tight_middle_gets_the_compact_reading_guide():
    """The reading guide is written in full only while it costs at most ``guide_share``
    of the room head and tail leave; at a tight budget it is the compact one (the same
    marks, half the words) and its rows go to the pages (issue 20)."""
    snap = Snapshot()
    assert not snap._compact_guide(100_000)
    assert snap._compact_guide(400)
    assert Snapshot(SnapshotConfig(guide_share=0.0))._compact_guide(10**9)
    with pytest.raises(ValueError, match="guide_share"):
        SnapshotConfig(guide_share=1.5)
    full = guide_text(40, 90_000, 1, facts=True)
    short = guide_text(40, 90_000, 1, facts=True, compact=True)
    assert len(short) * 3 < len(full) * 2
    for mark in ("[user]", "[assistant]", "-> call", "<- result", "<- end", "white on black"):
        assert mark.lower() in short.lower().replace("-on-", " on ")
    assert short.endswith("Exact ids follow as text.")
    assert guide_text(1, 10, 1, facts=False, compact=True, focus="the fix").endswith(
        FOCUS_GUIDE.format(focus="the fix")
    )
    # the same tight budget with the compact guide and with the full one
    wire = plain_session(40)
    out = {}
    for share in (0.0, 1.0):
        config = LadderConfig(snapshot=SnapshotConfig(guide_share=share))
        result = compact(wire, budget=3250, rungs="snapshot", config=config)
        assert result.tokens_after <= 3250
        out[share] = (_guide(result), snapshot_entry(result).extra["source_chars"])
    assert out[0.0][0].startswith("[glyphfold snapshot]") and "White-on-black" in out[0.0][0]
    assert "Read them as the conversation so far" in out[1.0][0]
    assert out[0.0][1] > out[1.0][1]  # the rows the shorter guide frees hold words


def test_the_last_capped_output_keeps_the_widest_cap_that_fits():
    """A cap level is a step (no cap -> 8,000 chars -> 4,000 ...): a 27,000-char file read
    capped to 8,000 left up to a third of the budget unused while its pages would have
    held more (swe-agent_flash_763201 at 50%: 1,150 of 4,379 tokens unused, 16,673 chars
    cut; now 32 unused, 3,106 cut). The last output the planner caps gets the widest cap,
    on a 64-char grid, that fits (SPEC §5.6, §5.9)."""
    import shapes
    from test_words import big_result

    b = shapes.Builder("openai").user("Read the modules and tell me what they compute.")
    b.step("Reading module 0.", [("read_file", {"path": "m0.py"}, big_result(0, 20), False)])
    b.step("Reading module 1.", [("read_file", {"path": "m1.py"}, big_result(1, 600), False)])
    b.step("Reading module 2.", [("read_file", {"path": "m2.py"}, big_result(2, 20), False)])
    b.assistant("They compute values.")
    wire = b.wire()
    widest = 0
    for budget in range(1000, 2600, 200):
        result = compact(wire, budget=budget, rungs="snapshot")
        e = snapshot_entry(result)
        assert result.tokens_after <= budget
        if not (e.extra and e.extra["lossy"] and result.pages):
            continue
        page = max(p.image_tokens for p in result.pages)
        assert budget - result.tokens_after < max(64, page // 16), budget
        caps = [
            int(r.detail.split("capped to ")[1].split(" chars")[0].replace(",", ""))
            for r in e.removed
            if "capped to " in r.detail
        ]
        widest = max([widest, *caps])
    assert widest > 8_000  # a cap between the levels' 8,000 and the whole output


@pytest.mark.parametrize("budget", [7195, 7210, 7240])
def test_the_reading_aids_yield_to_words(budget):
    """SPEC §5.9: words are cut only when even the densest pages cannot hold the middle.
    The factsheet (a quarter of the room) and the full guide took room the pages needed:
    here 3 pages with words cut, while 4 pages with the compact guide and a smaller
    factsheet hold every word (issue 20: at 50% of the estimate, the pages of
    swe-agent_marshmallow-1867_d43033__plain and i_got_id_demo_4484cd__plain cut words)."""
    wire = plain_session(27)
    bare = LadderConfig(
        snapshot=SnapshotConfig(guide_share=0, factsheet=FactsheetConfig(max_chars=0))
    )
    lean = snapshot_entry(compact(wire, budget=budget, rungs="snapshot", config=bare))
    assert lean.extra and not lean.extra["lossy"]  # the barest aids: every word fits
    result = compact(wire, budget=budget, rungs="snapshot")
    e = snapshot_entry(result)
    assert result.tokens_after <= budget
    assert e.extra and not e.extra["lossy"] and e.extra["dropped_chars"] == 0
    assert find_violations(result.messages) == []
    # the factsheet keeps what room is left (the widest cap on a 64-char grid that fits)
    assert e.extra["facts"] > 0 or budget - result.tokens_after < 64
