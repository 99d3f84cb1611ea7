"""Turn-atomic trimming, breadcrumb, HistoryTrimmed, reactive recovery (SPEC §2, §3.3, §3.6)."""

from __future__ import annotations

import logging

import pytest
from core_histories import format_name, render, simple_plan, snapshot, wire_histories, wire_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.events import EventBus, HistoryTrimmed
from glyphfold.compaction.history.markers import BREADCRUMB, is_breadcrumb_text, marker_kind
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import History, Text
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.trim import (
    DEFAULT_MAX_TURNS,
    recover_from_overflow,
    trim_conversation_to_recent_turns,
    trim_history,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from glyphfold.compaction.history.turns import pair_tool_calls, segment_turns
from glyphfold.compaction.history.validate import validate_history
from glyphfold.errors import ContextOverflowError, InputError

FAST = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
FMTS = ["openai", "anthropic", "anthropic-list"]


def _strip_crumbs(h: History) -> list:
    """Messages without the breadcrumb messages (and their acknowledgements)."""
    return [m for m in h.messages if marker_kind(m) is None]


def _crumbs(h: History) -> list[str]:
    return [
        b.text
        for m in h.messages
        for b in m.blocks
        if isinstance(b, Text) and is_breadcrumb_text(b.text)
    ]


@pytest.mark.parametrize("fmt", FMTS)
def test_nothing_to_trim_returns_the_same_object(fmt):
    """SPEC §2.5: no change -> the input itself (same order, structure, objects)."""
    wire = render(simple_plan(3), fmt)
    before = snapshot(wire)
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    assert trim_to_recent_turns(wire, 10**9, bus=bus) is wire
    assert trim_to_recent_turn_count(wire, 3, bus=bus) is wire
    assert trim_to_recent_turn_count(wire, bus=bus) is wire  # default 50
    h = to_canonical(wire)
    assert trim_conversation_to_recent_turns(h, 3, bus=bus) is h
    assert seen == []
    assert wire == before


@pytest.mark.parametrize("fmt", FMTS)
def test_budget_zero_disables_proactive_trimming(fmt):
    """SPEC §3.1: an explicit 0 budget disables proactive trimming."""
    wire = render(simple_plan(30), fmt)
    assert trim_to_recent_turns(wire, 0, bus=EventBus()) is wire


@pytest.mark.parametrize("fmt", FMTS)
def test_limit_zero_and_huge_newest_turn_keep_the_newest_turn(fmt):
    """SPEC §2.4: the newest complete turn stays, even at limit 0 or above budget."""
    plan = simple_plan(5)
    plan["turns"][-1]["user"] = "z" * 40_000
    wire = render(plan, fmt)
    before = snapshot(wire)
    h = to_canonical(wire)
    seg = segment_turns(h)
    newest = h.messages[seg.newest.start :]
    for out in (
        trim_to_recent_turn_count(wire, 0, bus=EventBus()),
        trim_to_recent_turns(wire, 10, bus=EventBus()),
    ):
        validate_history(out)
        oh = to_canonical(out)
        assert _strip_crumbs(oh)[-len(newest) :] == list(newest)
        assert len(segment_turns(oh).turns) == 1
    assert wire == before


@pytest.mark.parametrize("fmt", FMTS)
def test_breadcrumb_and_event(fmt):
    """SPEC §2.6: breadcrumb before the first kept turn; HistoryTrimmed with the counts."""
    wire = render(simple_plan(10), fmt)
    before = snapshot(wire)
    bus = EventBus()
    seen: list[HistoryTrimmed] = []
    bus.subscribe(seen.append, types=HistoryTrimmed)
    out = trim_to_recent_turn_count(wire, 4, bus=bus)
    validate_history(out)
    (ev,) = seen
    assert ev.reason == "turn_limit"
    assert (ev.dropped_turns, ev.kept_turns, ev.dropped_messages) == (6, 4, 24)
    assert ev.tokens_after == estimate_history_tokens(out) < ev.tokens_before
    assert "24 messages in 6 turns" in ev.breadcrumb
    oh = to_canonical(out)
    assert _crumbs(oh) == [ev.breadcrumb]
    seg = segment_turns(oh)
    if fmt == "openai":  # a system message closing the leading system block
        assert oh.messages[seg.leading_end - 1].role == "system"
        assert oh.messages[seg.leading_end - 1].text == ev.breadcrumb
        assert wire_messages(out)[0] is wire_messages(wire)[0]
    else:  # a user-side message of its own before the kept part, then an acknowledgement
        crumb, ack = oh.messages[:2]
        assert (crumb.role, crumb.text, marker_kind(crumb)) == ("user", ev.breadcrumb, BREADCRUMB)
        assert (ack.role, marker_kind(ack)) == ("assistant", BREADCRUMB)
        assert seg.leading_end == 2
        # the kept turn is verbatim: the breadcrumb is never written into it
        assert wire_messages(out)[2] is wire_messages(wire)[len(wire_messages(wire)) - 16]
        if fmt == "anthropic":
            assert out["system"] == wire["system"] and out["model"] == wire["model"]
    # untouched kept messages are the very same dicts
    assert wire_messages(out)[-1] is wire_messages(wire)[-1]
    assert wire == before


@pytest.mark.parametrize("fmt", FMTS)
def test_repeated_trims_deduplicate_the_breadcrumb(fmt):
    """SPEC §2.6: one breadcrumb however often the history is trimmed; counts add up."""
    wire = render(simple_plan(12), fmt)
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    a = trim_to_recent_turn_count(wire, 8, bus=bus)
    b = trim_to_recent_turn_count(a, 5, bus=bus)
    c = trim_to_recent_turn_count(b, 2, bus=bus)
    for x in (a, b, c):
        validate_history(x)
    crumbs = _crumbs(to_canonical(c))
    assert len(crumbs) == 1
    assert "40 messages in 10 turns" in crumbs[0]
    assert [e.dropped_turns for e in seen] == [4, 3, 3]
    assert trim_to_recent_turn_count(c, 2, bus=bus) is c


@pytest.mark.parametrize("fmt", FMTS)
def test_token_budget_trim_fits(fmt):
    """SPEC §2.2: oldest whole turns go until the estimate fits the budget."""
    wire = render(simple_plan(40), fmt)
    before = snapshot(wire)
    total = estimate_history_tokens(wire)
    res = trim_history(wire, budget=total // 3, bus=EventBus())
    assert res.event.reason == "token_budget"
    assert res.tokens_after == estimate_history_tokens(res.history) <= total // 3
    # dropping one turn fewer would not have fit: the trim is minimal
    fewer = trim_to_recent_turn_count(wire, res.event.kept_turns + 1, bus=EventBus())
    assert estimate_history_tokens(fewer) > total // 3
    assert wire == before


def test_raising_subscriber_is_logged_and_others_still_receive(caplog):
    """SPEC §2.6: a broken subscriber breaks neither the trim nor the other subscribers."""
    wire = render(simple_plan(6), "openai")
    bus = EventBus()
    got = []

    def boom(event):
        raise RuntimeError("dashboard down")

    bus.subscribe(boom)
    bus.subscribe(got.append)
    with caplog.at_level(logging.ERROR, logger="glyphfold.events"):
        out = trim_to_recent_turn_count(wire, 2, bus=bus)
    validate_history(out)
    assert len(got) == 1
    assert "dashboard down" in caplog.text
    unsubscribe = bus.subscribe(got.append)
    unsubscribe()
    assert len(bus) == 2


def test_default_turn_limit_is_50():
    """SPEC §2.3: the default limit is 50 turns."""
    assert DEFAULT_MAX_TURNS == 50
    wire = render(simple_plan(53, tools=False), "openai")
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    out = trim_to_recent_turn_count(wire, bus=bus)
    assert len(segment_turns(out).turns) == 50
    assert seen[0].dropped_turns == 3


@pytest.mark.parametrize("fmt", FMTS)
def test_recover_from_overflow_two_thirds(fmt):
    """SPEC §3.6: reduce to two thirds of the current estimate, whole turns only."""
    wire = render(simple_plan(30), fmt)
    before = snapshot(wire)
    total = estimate_history_tokens(wire)
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    err = {
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 250000 tokens > 200000 maximum",
        }
    }
    out = recover_from_overflow(wire, err, bus=bus)
    validate_history(out)
    assert estimate_history_tokens(out) <= total * 2 // 3
    assert seen[0].reason == "overflow_recovery"
    assert pair_tool_calls(out).ok
    assert wire == before


def test_recover_rejects_other_errors_and_hopeless_histories():
    wire = render(simple_plan(3), "openai")
    with pytest.raises(InputError, match="not a context-overflow"):
        recover_from_overflow(wire, RuntimeError("rate limit exceeded: 30000 tokens per min"))
    single = render(simple_plan(1), "openai")
    with pytest.raises(ContextOverflowError, match="no older turn"):
        recover_from_overflow(single, bus=EventBus())


def test_invalid_limits():
    wire = render(simple_plan(2), "openai")
    with pytest.raises(InputError, match="max_turns must be >= 0"):
        trim_to_recent_turn_count(wire, -1)
    with pytest.raises(InputError, match="budget must be an int"):
        trim_to_recent_turns(wire, 1.5)
    with pytest.raises(InputError, match="needs budget"):
        trim_history(wire)


@FAST
@given(
    wire_histories(max_turns=10),
    st.one_of(
        st.integers(0, 5).map(lambda n: ("turns", n)),
        st.integers(0, 4000).map(lambda n: ("budget", n)),
    ),
)
def test_trim_properties(case, limit):
    """SPEC §2.1-2.6 over generated histories in both formats.

    No orphan; newest turn verbatim; leading system kept; every dropped message
    counted; the provider accepts the result; the input is not mutated.
    """
    fmt, wire = case
    fmt = format_name(fmt)
    before = snapshot(wire)
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    kind, n = limit
    res = (
        trim_history(wire, budget=n, bus=bus, format=fmt)
        if kind == "budget"
        else trim_history(wire, max_turns=n, bus=bus, format=fmt)
    )
    out = res.history
    assert wire == before
    assert type(out) is type(wire)
    validate_history(out, format=fmt)
    h_in, h_out = to_canonical(wire, format=fmt), to_canonical(out, format=fmt)
    seg_in, seg_out = segment_turns(h_in), segment_turns(h_out)
    if res.event is None:
        assert out is wire
        assert seen == []
        return
    ev = res.event
    assert seen == [ev]
    # leading messages kept (the Anthropic system prompt too)
    assert h_out.system == h_in.system
    kept_leading = [m for m in h_out.messages[: seg_out.leading_end] if marker_kind(m) is None]
    assert kept_leading == list(h_in.messages[: seg_in.leading_end])
    # newest turn verbatim
    newest_in = list(h_in.messages[seg_in.newest.start :])
    assert _strip_crumbs(h_out)[-len(newest_in) :] == newest_in
    # every dropped message counted, in whole turns
    assert ev.dropped_turns + ev.kept_turns == len(seg_in.turns)
    assert len(seg_out.turns) == ev.kept_turns >= 1
    start, end = ev.dropped_range
    assert end - start == ev.dropped_messages
    assert list(h_in.messages[end:])[1:] == list(h_out.messages[-(len(h_in.messages) - end) :])[1:]
    assert len(_crumbs(h_out)) == 1
    assert ev.tokens_after == estimate_history_tokens(out)
    if kind == "budget" and ev.kept_turns > 1:
        assert ev.tokens_after <= n


# --------------------------------------------------------------------------- the one algorithm


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_drop_spans_one_breadcrumb_before_each_kept_part(fmt):
    """SPEC §5.7: whole steps go; a breadcrumb of its own sits before each kept part."""
    from glyphfold.compaction.history.trim import Span, drop_spans

    wire = render(simple_plan(6), fmt)
    h = to_canonical(wire)
    turns = segment_turns(h).turns
    keep = turns[2]  # a kept turn between two dropped runs
    spans = [Span(turns[0].start, keep.start, turns=2), Span(keep.end, turns[4].start, turns=2)]
    done = drop_spans(h, spans)
    validate_history(done.history)
    out = done.history.messages
    crumbs = [m for m in out if marker_kind(m) == BREADCRUMB and is_breadcrumb_text(m.text)]
    assert [c.text for c in crumbs] == list(done.breadcrumbs) and len(crumbs) == 2
    # the kept messages are the very same objects, in order; nothing was written into them
    kept = [m for m in out if marker_kind(m) is None]
    expect = [*h.messages[: turns[0].start], *h.messages[keep.start : keep.end]]
    expect += h.messages[turns[4].start :]
    assert len(kept) == len(expect) and all(a is b for a, b in zip(kept, expect, strict=True))
    assert done.indices == tuple(range(turns[0].start, keep.start)) + tuple(
        range(keep.end, turns[4].start)
    )
    # a second trim of the kept turn between them folds both earlier breadcrumbs into
    # one: counts add up, never stacked
    lead = segment_turns(done.history).leading_end
    again = drop_spans(done.history, [Span(lead, _first_real(done.history), turns=1)])
    validate_history(again.history)
    texts = [m.text for m in again.history.messages if marker_kind(m) == BREADCRUMB]
    texts = [t for t in texts if is_breadcrumb_text(t)]
    total = turns[4].start - turns[0].start
    assert texts == [
        f"[Earlier conversation omitted: {total:,} messages in 5 turns were removed "
        "to fit the context window.]"
    ]


def _first_real(h: History) -> int:
    from glyphfold.compaction.history.turns import is_turn_start

    lead = segment_turns(h).leading_end
    return next(i for i in range(lead + 1, len(h.messages)) if is_turn_start(h.messages[i]))


def test_drop_spans_rejects_bad_spans():
    from glyphfold.compaction.history.trim import Span, drop_spans

    h = to_canonical(render(simple_plan(4), "openai"))
    with pytest.raises(InputError, match="overlap"):
        drop_spans(h, [Span(1, 5, turns=1), Span(4, 8, turns=1)])
    with pytest.raises(InputError, match="empty"):
        drop_spans(h, [Span(3, 3)])


def test_step_breadcrumb_text():
    """One wording for turns and steps; the counts are read back from it."""
    from glyphfold.compaction.history.markers import breadcrumb_counts, breadcrumb_text

    text = breadcrumb_text(30, 2, 5)
    assert "30 messages in 2 turns and 5 steps were removed" in text
    assert breadcrumb_counts(text) == (30, 2, 5)
    assert breadcrumb_counts(breadcrumb_text(1, steps=1)) == (1, 0, 1)
    assert breadcrumb_counts("unrelated") == (0, 0, 0)
