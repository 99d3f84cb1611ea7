"""The recovery ladder end to end, in both wire formats (SPEC §5, issue 5 acceptance)."""

from __future__ import annotations

import base64
import copy
import json

import pytest

import glyphfold
from glyphfold.compaction.history.events import (
    Compacted,
    EventBus,
    HistoryTrimmed,
    SummaryFailed,
    default_bus,
)
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.api import compact, recover, shake
from glyphfold.compaction.ladder.provider import provider_messages
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.elide import ElideConfig
from glyphfold.compaction.ladder.rungs.snapshot import SnapshotConfig
from glyphfold.compaction.ladder.rungs.summary import SummaryConfig
from glyphfold.compaction.ladder.transcript import TranscriptConfig, plain_text
from glyphfold.errors import (
    ContextOverflowError,
    HistoryFormatError,
    InputError,
    UnknownProfileError,
)

BUDGET = 20_000  # elision alone reaches it on the demo session
SNAP = 8_000  # elision, image stripping, then snapshots
# The demo reads each file once: SPEC §5.8 elides none of it (tests/ladder/test_elision_rules.py).
# The tests of the ladder's mechanics (stops at the first rung, pins, dry runs) use 0.1's
# wide rule, which elides every old unremarkable result.
WIDE_ELIDE = ElideConfig(policy="unremarkable")
WIDE = LadderConfig(elide=WIDE_ELIDE)
# ... and the pages of 0.1: one shape, user messages imaged with the rest (tests of
# re-rendering from source and of the page budget compare pages with pages)
CAPS_01 = TranscriptConfig(max_result_chars=6000, max_args_chars=2000)
AS_01 = SnapshotConfig(shape="regular", keep_user_text=False, transcript=CAPS_01)


def wire_messages(history):
    return history["messages"] if isinstance(history, dict) else history


def dump(x) -> str:
    return json.dumps(x, sort_keys=True)


def snapshot_entry(result):
    (entry,) = [e for e in result.ledger if e.rung == "snapshot"]
    return entry


def kind(m) -> str | None:
    return m.get("x_glyphfold", {}).get("kind")


def snapshots(result) -> list:
    return [m for m in wire_messages(result.messages) if kind(m) == "snapshot"]


def test_public_names_are_lazy_exports():
    """compact, recover, CompactionResult are importable from glyphfold itself."""
    assert glyphfold.compact is compact
    assert glyphfold.recover is recover
    assert glyphfold.CompactionResult.__name__ == "CompactionResult"


def test_compact_end_to_end(session):
    """SPEC §5.2, §5.5: valid output, verbatim head and tail, ledger covers every removal."""
    before = dump(session)
    result = compact(session, budget=SNAP, config=WIDE)
    assert dump(session) == before  # input untouched
    assert type(result.messages) is type(session)
    assert find_violations(result.messages) == []
    assert result.tokens_before > 10 * SNAP
    assert result.tokens_after <= SNAP and result.fits
    assert estimate_history_tokens(result.messages) == result.tokens_after
    assert [e.rung for e in result.ledger] == ["elide", "strip", "snapshot"]

    msgs_in, msgs_out = wire_messages(session), wire_messages(result.messages)
    snap = snapshot_entry(result)
    n_head, n_tail = snap.extra["head_messages"], snap.extra["tail_messages"]
    assert n_tail >= 1
    assert dump(msgs_out[:n_head]) == dump(msgs_in[:n_head])  # head kept verbatim
    assert dump(msgs_out[-n_tail:]) == dump(msgs_in[-n_tail:])  # tail byte-identical
    if isinstance(session, dict):
        assert result.messages["system"] == session["system"]

    # the head, then the old steps the plan keeps as text (SPEC §5.6: the imaged range
    # starts as late as the target allows; the demo's old steps are elided stubs, as
    # cheap as text), in place, then a bridge, then the snapshot: guide, pages
    first = [kind(m) for m in msgs_out].index("snapshot")
    assert first - 1 > n_head and snap.extra["leading_text_steps"] >= 1
    shortened = {r.index for e in result.ledger if e.rung in ("elide", "strip") for r in e.removed}
    for k in range(n_head, first - 1):  # in place: verbatim, or elided/stripped (ledgered)
        assert msgs_out[k]["role"] == msgs_in[k]["role"]
        assert dump(msgs_out[k]) == dump(msgs_in[k]) or k in shortened
    assert kind(msgs_out[first - 1]) == "bridge" and msgs_out[first - 1]["role"] == "assistant"
    snap_msg = msgs_out[first]
    assert snap_msg["role"] == "user" and kind(snap_msg) == "snapshot"
    parts = snap_msg["content"]
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith("[glyphfold snapshot]")
    images = [
        p for s in snapshots(result) for p in s["content"] if p["type"] in ("image", "image_url")
    ]
    assert len(images) == len(result.pages) == len(snap.pages) >= 1
    # the newest real user message lies in the middle: it stays text, between two snapshots
    assert snap.extra["segments"] == 2 and snap.extra["kept_steps"] == 1

    # every input message that is not in the output verbatim is in the ledger
    kept = {dump(m) for m in msgs_out}
    missing = {i for i, m in enumerate(msgs_in) if dump(m) not in kept}
    ledgered = {r.index for e in result.ledger for r in e.removed}
    assert missing <= ledgered
    # each imaged message names the page(s) its text went to
    assert all(r.detail.startswith("page") for r in snap.removed)
    last_page = max(int(r.detail.split(";")[0].split()[-1].split("-")[-1]) for r in snap.removed)
    assert last_page == len(result.pages)


def test_old_steps_that_cost_as_little_as_pixels_stay_text(session):
    """SPEC §5.6: the imaged range starts as late as the target allows. The demo's old
    steps are elided stubs, about as dear as pixels as they are as text: imaging them
    spends pages for nothing, so they stay text and only the newer steps are imaged."""
    late = compact(copy.deepcopy(session), budget=SNAP, config=WIDE)
    oldest = compact(
        copy.deepcopy(session),
        budget=SNAP,
        config=LadderConfig(elide=WIDE_ELIDE, snapshot=SnapshotConfig(start_late=False)),
    )
    a, b = snapshot_entry(late), snapshot_entry(oldest)
    assert late.fits and oldest.fits and not a.extra["lossy"] and not b.extra["lossy"]
    assert b.extra["leading_text_steps"] == 0 < a.extra["leading_text_steps"]
    assert a.extra["imaged_steps"] < b.extra["imaged_steps"]
    assert len(late.pages) < len(oldest.pages)
    assert find_violations(late.messages) == []
    # the steps left as text are exactly those of the oldest-first output's pages that
    # the late plan did not image: nothing is dropped either way
    assert a.extra["dropped_chars"] == b.extra["dropped_chars"] == 0
    imaged_late = {r.index for r in a.removed}
    assert imaged_late < {r.index for r in b.removed}
    msgs_in, msgs_out = wire_messages(session), wire_messages(late.messages)
    h = a.extra["head_messages"]
    for k in range(h, min(imaged_late)):  # the old steps before the pages stay in place
        assert msgs_out[k]["role"] == msgs_in[k]["role"]


def test_deterministic_byte_identical(session):
    """Same input and options -> byte-identical output, PNG pages included."""
    a = compact(copy.deepcopy(session), budget=SNAP)
    b = compact(copy.deepcopy(session), budget=SNAP)
    assert dump(a.messages) == dump(b.messages)
    assert [p.png for p in a.pages] == [p.png for p in b.pages]
    assert [e.to_dict() for e in a.ledger] == [e.to_dict() for e in b.ledger]


def test_pages_are_rendered_from_the_kept_source(session):
    """SPEC §5.3: the pages are exactly the render of the source kept in x_glyphfold."""
    from glyphfold.render.api import render_text

    result = compact(session, budget=SNAP, config=WIDE)
    shape = snapshot_entry(result).extra["shape"]
    assert not snapshot_entry(result).extra["lossy"]  # the pages draw the retained source
    pages = [p.png for p in result.pages]
    again, wire_pngs = [], []
    for snap in snapshots(result):
        source = snap["x_glyphfold"]["source"]
        again += [
            p.png
            for p in render_text(
                source, profile="anthropic", shape=shape, reflow=True, collapse=True
            ).pages
        ]
        wire_pngs += [
            base64.b64decode(
                p["source"]["data"]
                if p["type"] == "image"
                else p["image_url"]["url"].partition(",")[2]
            )
            for p in snap["content"]
            if p["type"] in ("image", "image_url")
        ]
    assert again == pages and wire_pngs == pages


def first_pass_with_text_steps(session, config=None):
    """A first compaction that keeps >= 2 middle steps as text after its snapshot."""
    if config is None:
        config = LadderConfig(elide=WIDE_ELIDE, snapshot=AS_01)
    for budget in range(10_000, 40_001, 2_000):
        first = compact(session, budget=budget, config=config)
        snaps = [e for e in first.ledger if e.rung == "snapshot"]
        if snaps and snaps[0].extra["text_steps"] >= 2 and snaps[0].extra["segments"] == 1:
            return first
    raise AssertionError("no budget kept two middle steps as text")


_MARK = ', "cache_control": {"type": "ephemeral"}'


def test_second_pass_keeps_the_blocks_sent_and_adds_a_new_one(session):
    """SPEC §5.10: pages already sent stay byte for byte in place; newly old steps
    become a new block after them; the ledger says frozen / new / merged."""
    first = first_pass_with_text_steps(session)
    as_json = json.loads(json.dumps(first.messages))  # what a harness stores and reloads
    before = copy.deepcopy(as_json)
    second = compact(as_json, budget=first.tokens_after - 1_000, rungs="snapshot")
    assert as_json == before
    assert find_violations(second.messages) == []
    entry = snapshot_entry(second)
    assert (entry.extra["frozen_blocks"], entry.extra["new_blocks"]) == (1, 1)
    assert entry.extra["merged_blocks"] == 0 and "merge_reason" not in entry.extra
    assert not entry.extra["lossy"] and "kept as sent" in entry.note
    m1, m2 = wire_messages(first.messages), wire_messages(second.messages)
    (at,) = [i for i, m in enumerate(m1) if kind(m) == "snapshot"]
    # everything up to the first block (and the block itself) is the same, byte for byte
    # but for our cache breakpoint, which moves to the newest block (one of ours)
    assert json.dumps(m2[: at + 1]).replace(_MARK, "") == json.dumps(m1[: at + 1]).replace(
        _MARK, ""
    )
    blocks = snapshots(second)
    assert len(blocks) == 2 and blocks[0]["x_glyphfold"] == m1[at]["x_glyphfold"]
    assert json.dumps(m2).count(_MARK) == json.dumps(m1).count(_MARK) <= 1
    assert blocks[1]["x_glyphfold"]["block"] != blocks[0]["x_glyphfold"]["block"]
    # the new block holds only the newly old steps: no pass-1 source in it
    assert plain_text(blocks[0]["x_glyphfold"]["source"])[:200] not in plain_text(
        blocks[1]["x_glyphfold"]["source"]
    )
    assert {p.png for p in first.pages}.isdisjoint(p.png for p in second.pages)
    assert second.tokens_after <= first.tokens_after - 1_000


def test_second_pass_rerenders_from_source_when_merging(session):
    """SPEC §5.3: a merging pass unfolds the previous source in front of newer steps."""
    first = first_pass_with_text_steps(session)
    as_json = json.loads(json.dumps(first.messages))  # what a harness stores and reloads
    # tighter: the steps kept as text must move into the imaged middle
    second = compact(
        as_json,
        budget=first.tokens_after - 1_000,
        rungs="snapshot",
        config=LadderConfig(snapshot=AS_01, freeze_blocks=False),
    )
    assert find_violations(second.messages) == []
    entry = snapshot_entry(second)
    assert entry.extra["dropped_chars"] == 0 and not entry.extra["lossy"]
    h1 = snapshot_entry(first).extra["head_messages"]
    assert entry.extra["head_messages"] == h1
    (src1,) = [s["x_glyphfold"]["source"] for s in snapshots(first)]
    src2 = snapshots(second)[0]["x_glyphfold"]["source"]
    # the old source comes back as text (never read back from pages), then newer steps
    # (role labels are reverse-video marks in the source: compare them as plain text)
    assert plain_text(src2).startswith("[earlier snapshot]\n" + plain_text(src1))
    assert sum(len(s["x_glyphfold"]["source"]) for s in snapshots(second)) > len(src1) + 1000
    rows = entry.removed
    assert any("re-rendered from its source" in r.detail for r in rows)
    # drawn again from text: the pages start differently (the "[earlier snapshot]" line);
    # once the page breaks fall where pass 1's fell, the same text gives the same pixels
    assert first.pages[0].png != second.pages[0].png
    assert [p.source_span for p in second.pages[: len(first.pages)]] != [
        p.source_span for p in first.pages
    ]
    # nothing of the earlier pages' pixels is reused: a pass-1 PNG appears in pass 2 only
    # as the render of the very same text (word wrap re-synchronises rows after the
    # "[earlier snapshot]" line, so an unchanged stretch can render byte for byte again)
    earlier = {p.png: src1[slice(*p.source_span)] for p in first.pages}
    sources = [s["x_glyphfold"]["source"] for s in snapshots(second)]
    for p in second.pages:
        if p.png in earlier:
            assert any(src[slice(*p.source_span)] == earlier[p.png] for src in sources)


def test_second_pass_with_drop_keeps_the_newest_source(session):
    """A tighter second pass drops the oldest source text, with a marker, still from text."""
    # a first pass imaged from the oldest step: its snapshot opens the next pass's middle
    oldest_first = LadderConfig(
        elide=WIDE_ELIDE,
        snapshot=SnapshotConfig(
            start_late=False, shape="regular", keep_user_text=False, transcript=CAPS_01
        ),
    )
    first = first_pass_with_text_steps(session, oldest_first)
    (src1,) = [s["x_glyphfold"]["source"] for s in snapshots(first)]
    cfg = LadderConfig(
        snapshot=SnapshotConfig(
            max_pages=len(first.pages), shape="regular", keep_user_text=False, transcript=CAPS_01
        )
    )
    second = compact(
        json.loads(json.dumps(first.messages)),
        budget=first.tokens_after - 1_000,
        rungs="snapshot",
        config=cfg,
    )
    entry = snapshot_entry(second)
    # the page cap leaves the frozen block no room for a new one: merged, and said why
    assert entry.extra["merged_blocks"] == 1 and entry.extra["merge_reason"] == "image limit"
    assert "merged, re-rendered from their source" in entry.note
    src2 = snapshots(second)[0]["x_glyphfold"]["source"]
    assert entry.extra["dropped_chars"] > 0 and entry.extra["lossy"]
    # the pages lost the oldest text; the retained source keeps every word (SPEC §5.9)
    assert entry.extra["retained_chars"] - entry.extra["source_chars"] > 0
    assert src1[-3000:] in src2
    assert find_violations(second.messages) == []


def test_canonical_in_canonical_out(session):
    """Every entry point returns the kind it was given (canonical History here)."""
    h = to_canonical(session)
    result = compact(h, budget=BUDGET)
    assert type(result.messages) is type(h)
    assert find_violations(result.messages) == []
    stripped = provider_messages(result.messages)
    assert all(m.raw is None or "x_glyphfold" not in m.raw for m in stripped.messages)


def test_provider_messages_strips_private_keys(session):
    """The wire export for a provider drops x_glyphfold; the JSON output keeps it."""
    result = compact(session, budget=SNAP)
    assert "x_glyphfold" in json.dumps(result.messages)
    clean = provider_messages(result.messages)
    assert "x_glyphfold" not in json.dumps(clean)
    assert result.for_provider() == clean
    assert find_violations(clean) == []
    assert len(wire_messages(clean)) == len(wire_messages(result.messages))


def test_stops_at_the_first_rung_that_fits(session):
    """Rungs run cheapest first and stop once under budget."""
    est = estimate_history_tokens(session, image_policy="all")  # how compact() prices
    result = compact(session, budget=est - 1000, config=WIDE)
    assert [e.rung for e in result.ledger] == ["elide"]
    untouched = compact(session, budget=est + 10)
    assert untouched.ledger == () and untouched.messages is session


def test_reserve_lowers_the_target(session):
    """The caller's reserve is kept free."""
    result = compact(session, budget=BUDGET + 5_000, reserve=5_000)
    assert result.target == BUDGET and result.tokens_after <= BUDGET


def test_dry_run_returns_the_plan(session):
    """A dry run reports per rung what it would remove and save, changing nothing."""
    seen = []
    unsubscribe = default_bus.subscribe(seen.append, types=HistoryTrimmed)
    try:
        before = dump(session)
        plan = compact(session, budget=8_000, dry_run=True, config=WIDE)
    finally:
        unsubscribe()
    assert plan.dry_run and plan.messages is session and dump(session) == before
    assert [e.rung for e in plan.plan][:3] == ["elide", "strip", "snapshot"]
    assert all(e.tokens_saved >= -100 for e in plan.plan)
    assert plan.tokens_after < plan.tokens_before
    assert seen == []  # nothing announced


def test_pins_are_honoured_by_every_rung(session):
    """Pinned messages survive elision, stripping, snapshots and trimming verbatim."""
    msgs = wire_messages(session)
    # an old, long, unremarkable read_file result that elision would stub
    idx = next(
        i
        for i, m in enumerate(msgs[: len(msgs) // 2])
        if i > 6
        and (
            m.get("role") == "tool"
            or (
                isinstance(m.get("content"), list)
                and any(b.get("type") == "tool_result" for b in m["content"])
            )
        )
        and len(json.dumps(m)) > 3000
        and "Traceback" not in json.dumps(m)
        and "failed" not in json.dumps(m)
    )
    plain = compact(copy.deepcopy(session), budget=BUDGET, config=WIDE)
    assert dump(msgs[idx]) not in {dump(m) for m in wire_messages(plain.messages)}
    est = estimate_history_tokens(session, image_policy="all")
    for rungs, budget in (
        ("elide", est - 1000),
        ("elide,strip,snapshot", 30_000),
        ("trim", 30_000),
        (None, 30_000),
    ):
        result = compact(
            copy.deepcopy(session), budget=budget, pins=[idx], rungs=rungs, config=WIDE
        )
        out = {dump(m) for m in wire_messages(result.messages)}
        assert dump(msgs[idx]) in out, rungs
        assert find_violations(result.messages) == []
        assert result.ledger, rungs


def test_pins_by_id_and_span_and_errors(session):
    """Pins accept tool call ids and spans; a bad pin is a clear error."""
    msgs = wire_messages(session)
    result = compact(session, budget=BUDGET + 15_000, pins=[(5, 7)])
    out = {dump(m) for m in wire_messages(result.messages)}
    assert dump(msgs[5]) in out and dump(msgs[6]) in out
    with pytest.raises(InputError, match="names no tool call"):
        compact(session, budget=BUDGET, pins=["no-such-id"])
    with pytest.raises(InputError, match="outside the history"):
        compact(session, budget=BUDGET, pins=[10_000])


def test_text_only_profile_skips_snapshots(session):
    """A profile without vision never images anything; trim guarantees progress."""
    result = compact(session, profile="text-only", budget=SNAP)
    assert "snapshot" not in [e.rung for e in result.ledger]
    assert result.pages == () and result.fits
    assert find_violations(result.messages) == []
    out = json.dumps(wire_messages(result.messages))
    assert '"image_url"' not in out and '"type": "image"' not in out  # no image at all
    (ev,) = [e for e in result.events if isinstance(e, HistoryTrimmed)]
    assert ev.dropped_steps >= 1  # the last fallback drops whole steps (SPEC §5.7)


def test_page_budget_drops_the_oldest_middle_visibly(session):
    """SPEC §5.9: over the page budget, tool output goes first, then steps; users last."""
    two = compact(
        session,
        budget=SNAP,
        config=LadderConfig(snapshot=SnapshotConfig(max_pages=2)),
        rungs="strip,snapshot,trim",
    )
    snap = snapshot_entry(two)
    assert len(two.pages) <= 2 and snap.extra["lossy"]
    # two pages hold (almost) every step once the tool output is elided: of the chars
    # not on the pages (all counted, SPEC §5.9), nearly all are capped or elided output
    assert snap.extra["compressed_chars"] > 0.98 * snap.extra["dropped_chars"] > 0
    details = " ".join(r.detail for r in snap.removed)
    assert "elided in the pages" in details or "tool output capped to" in details
    one = compact(
        session,
        budget=SNAP,
        config=LadderConfig(snapshot=SnapshotConfig(max_pages=1)),
        rungs="strip,snapshot,trim",
    )
    snap = snapshot_entry(one)
    assert len(one.pages) == 1 and snap.extra["dropped_chars"] > 0
    assert "words cut to fit" in snap.note
    # the cut is marked in the ledger; the retained source keeps every word (SPEC §5.9)
    assert snap.extra["retained_chars"] > snap.extra["source_chars"]
    dropped = [r for r in snap.removed if r.dest == "dropped"]
    assert dropped
    # user messages are the last thing the pages lose
    msgs = to_canonical(session).messages
    from glyphfold.compaction.history.turns import is_turn_start

    if any(is_turn_start(msgs[r.index]) for r in dropped):
        assert all(r.dest == "dropped" for r in snap.removed if not is_turn_start(msgs[r.index]))
    for result in (one, two):
        assert find_violations(result.messages) == []


def test_budget_below_the_floor_is_a_clear_error(session):
    """SPEC §5.7: below head + newest user message + newest step, a clear error; input untouched."""
    from glyphfold.compaction.ladder.api import floor_tokens

    before = dump(session)
    floor = floor_tokens(session)
    assert compact(session, budget=floor).fits  # the floor itself is reachable
    with pytest.raises(ContextOverflowError, match="newest step alone") as info:
        compact(session, budget=floor - 1)
    assert info.value.estimate > floor - 1 and info.value.window == floor - 1
    assert info.value.overshoot == info.value.estimate - (floor - 1)
    assert dump(session) == before


def test_bad_inputs_are_clear_errors(session):
    """Malformed history, unknown profile, bad options: clear errors, input untouched."""
    before = dump(session)
    with pytest.raises(UnknownProfileError):
        compact(session, profile="no-such-profile", budget=BUDGET)
    with pytest.raises(HistoryFormatError, match="message 1"):
        compact([{"role": "user", "content": "hi"}, {"role": 7}], budget=BUDGET)
    with pytest.raises(HistoryFormatError):
        compact({"nope": []}, budget=BUDGET)
    with pytest.raises(InputError, match="exactly one of budget"):
        compact(session)
    with pytest.raises(InputError, match="exactly one of budget"):
        compact(session, budget=1, window=2)
    with pytest.raises(InputError, match="unknown rung"):
        compact(session, budget=BUDGET, rungs="elide,squash")
    with pytest.raises(InputError, match="summarizer"):
        compact(session, budget=BUDGET, rungs="summary")
    with pytest.raises(InputError, match="reserve"):
        compact(session, budget=BUDGET, reserve=BUDGET)
    assert dump(session) == before


def test_window_and_ratio(session):
    """window= resolves the budget by SPEC §3.1 (window x ratio)."""
    result = compact(session, window=40_000, ratio=0.5)
    assert result.budget == 20_000 and result.fits


def test_recover_reaches_two_thirds_without_a_model(session):
    """SPEC §3.6/§5.1: reactive recovery reduces to <= 2/3 of the estimate, model-free."""
    calls = []
    est = estimate_history_tokens(session, image_policy="all")
    result = recover(
        session,
        error={"error": {"type": "invalid_request_error", "message": "prompt is too long"}},
        summarizer=lambda t: calls.append(t) or "x",
    )
    assert result.tokens_after <= est * 2 // 3
    assert calls == []  # no summary unless allowed
    assert find_violations(result.messages) == []
    assert "prompt is too long" in result.events[0].error
    with pytest.raises(InputError, match="model-free"):
        recover(session, rungs="summary")


def test_recover_raises_when_it_cannot_get_there():
    """One huge turn cannot be reduced: ContextOverflowError says why."""
    history = [{"role": "user", "content": "x " * 50_000}]
    with pytest.raises(ContextOverflowError, match="cannot compact") as info:
        recover(history)
    assert info.value.estimate is not None


def _summary_cfg(**kw):
    return LadderConfig(summary=SummaryConfig(**kw))


def test_summary_rung_with_bounded_requests(session):
    """The summary replaces the middle; no request exceeds the bound."""
    sizes = []

    def summarizer(text):
        sizes.append(len(text))
        return "Goals: compaction. Files: compaction/ladder.py. Ticket GLY-20417."

    result = compact(
        session,
        budget=BUDGET,
        rungs="summary",
        summarizer=summarizer,
        config=_summary_cfg(max_input_chars=20_000),
    )
    assert sizes and max(sizes) <= 20_000 and len(sizes) > 1
    (entry,) = result.ledger
    assert entry.rung == "summary" and entry.extra["calls"] == len(sizes)
    assert find_violations(result.messages) == []
    out = json.dumps(result.messages)
    assert "GLY-20417" in out and "[glyphfold summary of" in out


@pytest.mark.parametrize("failure", ["raise", "timeout"])
def test_summarizer_failure_falls_back_to_trim(session, failure):
    """A summarizer that raises or times out is skipped (ledger + event); trim still fits."""
    import time

    def summarizer(text):
        if failure == "raise":
            raise ConnectionError("network down")
        time.sleep(2)
        return "late"

    before = dump(session)
    result = compact(
        session,
        budget=BUDGET,
        rungs="summary,trim",
        summarizer=summarizer,
        config=_summary_cfg(timeout_s=0.1),
    )
    assert dump(session) == before
    assert [e.rung for e in result.ledger] == ["summary", "trim"]
    assert result.ledger[0].note.startswith("failed, skipped")
    assert any(isinstance(e, SummaryFailed) for e in result.events)
    assert result.fits and find_violations(result.messages) == []


def test_shake_runs_only_the_free_rungs(session):
    """/shake: elision and image stripping whatever the budget; nothing dropped."""
    result = shake(session)
    assert [e.rung for e in result.ledger] == ["elide", "strip"]
    assert len(wire_messages(result.messages)) == len(wire_messages(session))
    assert result.tokens_after < result.tokens_before
    assert find_violations(result.messages) == []
    out = json.dumps(result.messages)
    assert "[elided: read_file" in out
    assert "[image removed: 1280x800 PNG screenshot from browser_screenshot]" in out


def test_events_go_to_the_bus_not_in_dry_run(session):
    """Trim announces HistoryTrimmed on the bus (SPEC §2.6); the result lists the events."""
    bus_seen = []
    unsubscribe = default_bus.subscribe(bus_seen.append, types=HistoryTrimmed)
    try:
        result = compact(session, budget=BUDGET, rungs="trim")
    finally:
        unsubscribe()
    assert [type(e) for e in result.events] == [HistoryTrimmed]
    assert bus_seen == list(result.events)
    assert isinstance(EventBus(), EventBus)


def test_pinned_turn_splits_the_snapshot(session):
    """A pinned turn in the middle stays verbatim in place; the runs around it are imaged."""
    from glyphfold.compaction.history.turns import segment_turns

    turns = segment_turns(session).turns
    pin = turns[len(turns) // 2].start
    oldest_first = LadderConfig(snapshot=SnapshotConfig(start_late=False))  # the whole range
    result = compact(
        session, budget=SNAP, rungs="elide,strip,snapshot", pins=[pin], config=oldest_first
    )
    snap = snapshot_entry(result)
    # the pinned turn's first message and the newest real user message stay text
    assert snap.extra["segments"] == 3 and snap.extra["kept_steps"] == 2
    msgs_out = wire_messages(result.messages)
    kinds = [kind(m) for m in msgs_out]
    assert kinds.count("snapshot") == 3
    pinned = wire_messages(session)[pin]
    i = next(k for k, m in enumerate(msgs_out) if dump(m) == dump(pinned))
    assert kinds.index("snapshot") < i < len(kinds) - 1 - kinds[::-1].index("snapshot")
    assert find_violations(result.messages) == []
    assert result.fits


def test_openai_pages_ask_for_the_priced_detail(_sessions):
    """OpenAI image parts carry detail=high so the API does not downscale the pages."""
    result = compact(copy.deepcopy(_sessions["openai"]), budget=SNAP, profile="openai")
    snap = next(m for m in result.messages if m.get("x_glyphfold", {}).get("kind") == "snapshot")
    details = {p["image_url"].get("detail") for p in snap["content"] if p["type"] == "image_url"}
    assert details == {"high"}
    assert find_violations(result.messages) == []


def test_snapshot_steps_aside_when_a_page_cannot_be_encoded(session):
    """A renderer that cannot meet the byte limit: the rung is skipped, trim still fits."""
    from glyphfold.errors import EncodeError

    def failing_renderer(text, **kw):
        raise EncodeError("page is 9,000,000 bytes, over the 3,932,160-byte limit")

    result = compact(session, budget=SNAP, renderer=failing_renderer)
    snap = snapshot_entry(result)
    assert snap.note.startswith("skipped:") and snap.tokens_saved == 0
    assert result.ledger[-1].rung == "trim" and result.fits
    assert find_violations(result.messages) == []


def test_snapshot_works_in_a_forked_child(_sessions):
    """The factsheet worker thread does not survive fork(); a child gets a fresh one."""
    import multiprocessing as mp
    import sys

    if sys.platform != "linux":
        pytest.skip("fork start method is Linux-only here")
    session = copy.deepcopy(_sessions["anthropic"])
    compact(copy.deepcopy(session), budget=SNAP)  # the parent's pool now exists
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        pages = pool.apply_async(_pages_in_child, (session,)).get(timeout=120)
    assert pages >= 1


def _pages_in_child(session) -> int:
    return len(compact(session, budget=SNAP).pages)


def test_snapshot_never_makes_the_history_bigger():
    """A middle of a few short messages costs less as text than as a page: rung skipped."""
    history = [{"role": "system", "content": "be brief"}]
    for i in range(6):
        history += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    history += [{"role": "user", "content": "last " + "word " * 100}]
    result = compact(history, budget=200, rungs="snapshot,trim")
    snap = snapshot_entry(result)
    assert snap.note.startswith("skipped") and snap.tokens_saved == 0
    assert result.ledger[-1].rung == "trim"


def _anthropic_turn(n: int, *, answered: bool = True, size: int = 6000) -> list[dict]:
    call = f"toolu_{n:04d}"
    turn = [
        {"role": "user", "content": f"step {n}: read the file"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": f"f{n}.py"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call, "content": f"line {n}\n" * (size // 8)}
            ],
        },
    ]
    if answered:
        turn.append({"role": "assistant", "content": f"done with step {n}"})
    return turn


def test_alternation_kept_when_the_head_ends_on_a_tool_result():
    """A head turn that ends with tool results (no reply) gets a bridge before the snapshot."""
    history = {"system": "sys", "messages": _anthropic_turn(0, answered=False)}
    for n in range(1, 9):
        history["messages"] += _anthropic_turn(n)
    before = dump(history)
    result = compact(history, budget=4_000, rungs="snapshot")
    assert dump(history) == before
    assert find_violations(result.messages) == []
    kinds = [kind(m) for m in result.messages["messages"]]
    # head = the first request; the snapshot goes right after it, behind a bridge
    assert kinds[:3] == [None, "bridge", "snapshot"]
    assert result.messages["messages"][0] is history["messages"][0]


def test_ladder_events_reach_the_callers_bus(session):
    """SummaryFailed and HistoryTrimmed are announced on the bus the caller passes."""
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)

    def broken(text):
        raise RuntimeError("no key")

    result = compact(session, budget=BUDGET, rungs="summary,trim", summarizer=broken, bus=bus)
    # the ladder's own events, then the Compacted record of the whole call
    assert [type(e) for e in seen] == [SummaryFailed, HistoryTrimmed, Compacted]
    assert set(map(type, result.events)) >= {HistoryTrimmed, SummaryFailed}
    seen.clear()
    compact(session, budget=BUDGET, rungs="summary,trim", summarizer=broken, bus=bus, dry_run=True)
    assert seen == []


def test_every_profile_gives_a_valid_history(_sessions):
    """Each provider profile: output fits, validates; vision ones image the middle."""
    from glyphfold.render.profiles import get_profile, profile_names

    imaged = 0
    for name in profile_names():
        result = compact(copy.deepcopy(_sessions["openai"]), budget=SNAP, profile=name)
        assert result.fits, name
        assert find_violations(result.messages) == [], name
        snaps = [e for e in result.ledger if e.rung == "snapshot" and e.pages]
        if not get_profile(name).vision:
            assert not snaps, name
        imaged += bool(snaps)
    assert imaged >= len(profile_names()) - 2  # a profile may step aside (ledger note)


def test_recover_may_summarise_when_allowed(session):
    """allow_summary=True lets recover() use the summary rung (SPEC §5.1 makes it opt-in)."""
    calls = []

    def summarizer(text):
        calls.append(len(text))
        return "Goal: compaction feature. Open: edge cases. Ticket GLY-20417."

    est = estimate_history_tokens(session, image_policy="all")
    result = recover(session, allow_summary=True, summarizer=summarizer, rungs="summary,trim")
    assert calls and result.ledger[0].rung == "summary"
    assert result.tokens_after <= est * 2 // 3
    assert find_violations(result.messages) == []


def test_old_images_are_priced_as_sent_and_stripping_saves_them(session):
    """compact() prices every image it leaves in the wire output (image_policy="all"):
    the strip rung's saving is real; image_policy="spec" prices as SPEC §3.4 does."""
    before = copy.deepcopy(session)
    spec_est = estimate_history_tokens(session, image_policy="spec")
    all_est = estimate_history_tokens(session)  # the default: a wire history is sent as it is
    assert all_est == estimate_history_tokens(session, image_policy="all")
    assert all_est > spec_est  # the demo session carries an old screenshot in a tool result
    result = compact(session, budget=all_est - 1, rungs="strip")
    assert result.tokens_before == all_est
    (entry,) = result.ledger
    assert entry.rung == "strip" and entry.tokens_before - entry.tokens_after > 0
    spec = compact(session, budget=all_est - 1, rungs="strip", image_policy="spec")
    assert spec.tokens_before == spec_est
    assert session == before
