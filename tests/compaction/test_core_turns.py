"""Turn segmentation, pairing, orphan sweep and tool-result bounding (SPEC §1, §2.7, §2.8)."""

from __future__ import annotations

import random
import re

import pytest
from core_histories import format_name, snapshot, wire_histories, wire_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.events import EventBus, OrphansSwept
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import ToolCall, ToolResult
from glyphfold.compaction.history.turns import (
    bound_tool_result,
    is_turn_start,
    pair_tool_calls,
    repair_orphans,
    segment_turns,
    sweep_orphans,
)
from glyphfold.compaction.history.validate import find_violations, validate_history
from glyphfold.errors import InputError

FAST = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_segmentation_spec_example_openai():
    """SPEC §1: leading system outside turns; [Tool results] user message joins the turn."""
    wire = [
        {"role": "system", "content": "s"},
        {"role": "developer", "content": "d"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "running"},
        {"role": "user", "content": "[Tool results]\nok"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "r"},
        {"role": "assistant", "content": "a2"},
    ]
    before = snapshot(wire)
    seg = segment_turns(wire)
    assert seg.leading_end == 2
    assert [(t.start, t.end) for t in seg.turns] == [(2, 6), (6, 10)]
    assert seg.newest.start == 6
    assert wire == before


def test_segmentation_anthropic_tool_result_messages_join_previous_turn():
    """SPEC §1: Anthropic user messages carrying tool_result blocks are not real user messages."""
    wire = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "q1"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": "r"},
                    {"type": "text", "text": "and also this"},
                ],
            },
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": [{"type": "text", "text": "q2"}]},
        ],
    }
    seg = segment_turns(wire)
    assert seg.leading_end == 0
    assert [(t.start, t.end) for t in seg.turns] == [(0, 4), (4, 5)]


def test_no_real_user_message_means_no_turn():
    wire = [{"role": "system", "content": "s"}, {"role": "user", "content": "[Tool results] x"}]
    seg = segment_turns(wire)
    assert seg.turns == ()
    assert seg.leading_end == 2
    assert seg.newest is None


@FAST
@given(wire_histories())
def test_turns_partition_and_never_split_a_tool_exchange(case):
    """SPEC §2.1: every call and its result fall in the same turn; turns tile the history."""
    fmt, wire = case
    before = snapshot(wire)
    h = to_canonical(wire, format=format_name(fmt))
    seg = segment_turns(h)
    n = len(h.messages)
    pos = seg.leading_end
    turn_of = [-1] * n
    for k, t in enumerate(seg.turns):
        assert t.start == pos
        assert is_turn_start(h.messages[t.start])
        for i in range(t.start, t.end):
            turn_of[i] = k
            if i > t.start:
                assert not is_turn_start(h.messages[i])
        pos = t.end
    assert pos == n
    p = pair_tool_calls(h)
    assert p.ok
    for cid, ci in p.calls.items():
        assert turn_of[ci] == turn_of[p.results[cid]]
    assert wire == before


def _call(cid):
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_sweep_openai_removes_orphans_and_reports():
    """SPEC §2.7: orphan results and unanswered calls are removed, and the repair is reported."""
    wire = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "ghost", "content": "lost"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "ra"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c")]},
        {"role": "user", "content": "next"},
    ]
    before = snapshot(wire)
    with pytest.raises(Exception, match="message 1"):
        validate_history(wire)
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    out = sweep_orphans(wire, bus=bus)
    validate_history(out)
    assert wire == before
    assert out[0] is wire[0]
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "assistant", "user"]
    assert [c["id"] for c in out[1]["tool_calls"]] == ["a"]
    assert "tool_calls" not in out[3]
    assert "tool call removed" in out[3]["content"]
    (ev,) = seen
    assert isinstance(ev, OrphansSwept)
    assert ev.removed_results == ((1, "ghost"),)
    assert ev.removed_calls == ((2, "b"), (4, "c"))


def test_sweep_synthesize_mode_answers_missing_calls():
    """SPEC §2.7 (configurable): unanswered calls get a synthetic error result instead."""
    wire = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "ra"},
        {"role": "user", "content": "next"},
    ]
    before = snapshot(wire)
    res = repair_orphans(wire, mode="synthesize")
    validate_history(res.history)
    assert res.event.synthesized == ("b",)
    assert res.history[3]["tool_call_id"] == "b"
    assert "missing" in res.history[3]["content"]
    assert wire == before
    anth = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "f", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}],
            },
        ]
    }
    before = snapshot(anth)
    res = repair_orphans(anth, mode="synthesize")
    validate_history(res.history)
    msgs = res.history["messages"]
    assert [b["tool_use_id"] for b in msgs[2]["content"]] == ["a", "b"]
    assert msgs[2]["content"][1]["is_error"] is True
    assert msgs[4]["content"][0]["tool_use_id"] == "c"
    assert anth == before
    with pytest.raises(InputError, match="mode"):
        repair_orphans(anth, mode="fix")


def test_sweep_anthropic_keeps_alternation_with_placeholders():
    """Removing every block of a message leaves a placeholder so roles still alternate."""
    wire = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
            },
            {"role": "user", "content": "no results here"},
            {"role": "assistant", "content": "hm"},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "x"}],
            },
        ]
    }
    before = snapshot(wire)
    out = sweep_orphans(wire, bus=EventBus())
    validate_history(out, format="anthropic")  # its tool blocks are gone: plain text left
    assert out["messages"][1]["content"][0]["type"] == "text"
    assert out["messages"][4]["content"][0]["text"].startswith("[Tool results]")
    assert wire == before


@FAST
@given(
    wire_histories(min_turns=1),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["remove", "synthesize"]),
)
def test_sweep_repairs_any_corruption(case, seed, mode):
    """SPEC §2.7: after randomly deleting messages, the sweep leaves no orphan call or result."""
    fmt, wire = case
    before = snapshot(wire)
    assert sweep_orphans(wire, bus=EventBus()) is wire  # valid input: same object back
    rng = random.Random(seed)
    msgs = list(wire_messages(wire))
    for _ in range(rng.randint(1, 3)):
        if msgs:
            del msgs[rng.randrange(len(msgs))]
    broken = {**wire, "messages": msgs} if isinstance(wire, dict) else msgs
    res = repair_orphans(broken, mode=mode)
    assert pair_tool_calls(res.history).ok
    if fmt == "openai":
        validate_history(res.history, format=fmt)  # "openai"
    else:  # deletions can also break alternation, which the sweep does not claim to fix
        rules = {v.rule for v in find_violations(res.history, format=format_name(fmt))}
        assert not rules & {"orphan-call", "orphan-result", "tool-result-first"}
    assert wire == before


def test_duplicate_call_ids_are_orphans():
    wire = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
        {"role": "tool", "tool_call_id": "a", "content": "r again"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
    ]
    p = pair_tool_calls(wire)
    assert p.orphan_results == ((3, "a"),)
    assert p.orphan_calls == ((4, "a"),)
    assert p.calls == {"a": 1}
    out = sweep_orphans(wire, bus=EventBus())
    validate_history(out)
    assert len(out) == 4


def test_pairing_maps_calls_to_results():
    h = to_canonical(
        {
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
            ]
        }
    )
    p = pair_tool_calls(h)
    assert p.calls == {"x": 1}
    assert p.results == {"x": 2}
    assert isinstance(h.messages[1].blocks[0], ToolCall)
    assert isinstance(h.messages[2].blocks[0], ToolResult)


@given(st.text(max_size=3000), st.integers(64, 2000))
@settings(max_examples=80, deadline=None, database=None)
def test_bound_tool_result_keeps_head_and_tail(text, max_chars):
    """SPEC §2.8: one result is bounded with a visible marker; never longer than the bound."""
    out = bound_tool_result(text, max_tool_result_chars=max_chars)
    if len(text) <= max_chars:
        assert out is text
        return
    assert len(out) == max_chars
    m = re.search(r"\n\[\.\.\. ([\d,]+) chars cut \.\.\.\]\n", out)
    assert m is not None
    head, tail = out[: m.start()], out[m.end() :]
    cut = int(m.group(1).replace(",", ""))
    assert len(head) + len(tail) + cut == len(text)
    assert text.startswith(head)
    assert text.endswith(tail)


def test_bound_tool_result_marker_counts_the_cut():
    text = "a" * 5000 + "b" * 5000
    out = bound_tool_result(text, max_tool_result_chars=1000)
    assert len(out) == 1000
    assert out.startswith("a") and out.endswith("b")
    kept = len(out) - len(out[out.index("\n[...") : out.index("...]\n") + 5])
    assert f"[... {10000 - kept:,} chars cut ...]" in out
    with pytest.raises(InputError, match="64"):
        bound_tool_result(text, max_tool_result_chars=10)
    with pytest.raises(InputError, match="int"):
        bound_tool_result(text, max_tool_result_chars=True)


# --------------------------------------------------------------------------- steps and regions


def _agent_run(fmt: str, steps: int = 6) -> list | dict:
    """system + one request + ``steps`` tool steps (two parallel calls each) + a reply."""
    msgs: list = [{"role": "user", "content": "Make the test suite pass."}]
    for k in range(steps):
        ids = [f"c{k}a", f"c{k}b"]
        if fmt == "openai":
            msgs.append(
                {
                    "role": "assistant",
                    "content": f"step {k}",
                    "tool_calls": [
                        {
                            "id": c,
                            "type": "function",
                            "function": {"name": "run", "arguments": "{}"},
                        }
                        for c in ids
                    ],
                }
            )
            msgs += [{"role": "tool", "tool_call_id": c, "content": "x" * 400} for c in ids]
        else:
            msgs.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"step {k}"}]
                    + [{"type": "tool_use", "id": c, "name": "run", "input": {}} for c in ids],
                }
            )
            msgs.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": c, "content": "x" * 400} for c in ids
                    ],
                }
            )
    msgs.append({"role": "assistant", "content": "still failing"})
    if fmt == "openai":
        return [{"role": "system", "content": "sys"}, *msgs]
    return {"system": "sys", "messages": msgs}


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_steps_pair_each_call_with_its_results(fmt):
    """SPEC §1: a step is an assistant message and the results answering its calls."""
    from glyphfold.compaction.history.steps import segment_steps

    h = to_canonical(_agent_run(fmt))
    steps = segment_steps(h)
    # every message in exactly one step, in order
    assert [i for s in steps for i in s.indices] == list(range(len(h.messages)))
    kinds = [s.kind for s in steps]
    lead = ["system"] if fmt == "openai" else []
    assert kinds == [*lead, "user", *["step"] * 7]
    size = 3 if fmt == "openai" else 2  # the call + two tool messages, or + one user message
    assert [len(s) for s in steps if s.kind == "step"] == [size] * 6 + [1]
    # a cut between two steps never separates a call from its result
    for s in steps:
        calls = {c.id for i in s.indices for c in h.messages[i].tool_calls}
        results = {r.call_id for i in s.indices for r in h.messages[i].tool_results}
        assert calls == results


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_one_long_turn_has_a_middle(fmt):
    """SPEC §1: head = leading system + first request; tail = newest steps; middle between."""
    from glyphfold.compaction.history.steps import split_regions
    from glyphfold.compaction.history.tokens import token_costs

    h = to_canonical(_agent_run(fmt))
    costs = token_costs(h).messages
    lead = 1 if fmt == "openai" else 0
    assert len(segment_turns(h).turns) == 1
    newest = split_regions(h, costs=costs, tail_tokens=0)
    assert newest.head_end == lead + 1  # the system prompt and "Make the test suite pass."
    assert newest.tail_start == len(h.messages) - 1  # the newest step alone
    assert len(newest.middle_steps) == 6
    assert newest.users == (lead,) and newest.users_in("head") == (lead,)
    assert newest.newest_user == lead and not newest.newest_user_in_middle
    # a tail allowance takes as many newest steps as fit
    step = sum(costs[newest.middle_steps[-1].start : newest.middle_steps[-1].end])
    wider = split_regions(h, costs=costs, tail_tokens=costs[-1] + 2 * step)
    assert len(wider.tail_steps) == 3 and len(wider.middle_steps) == 4
    # the same tail given as a number of messages, widened to a step boundary
    again = split_regions(h, tail_messages=len(h.messages) - wider.tail_start - 1)
    assert again.tail_start == wider.tail_start
    # never into the head
    assert split_regions(h, costs=costs, tail_tokens=10**9).tail_start == newest.head_end
    with pytest.raises(InputError, match="exactly one"):
        split_regions(h, costs=costs, tail_tokens=0, tail_messages=1)
    with pytest.raises(InputError, match="needs costs"):
        split_regions(h, tail_tokens=5)


def test_regions_report_where_the_real_user_messages_lie():
    """The newest real user message may lie in the middle (it stays text, SPEC §5.5)."""
    from glyphfold.compaction.history.steps import split_regions
    from glyphfold.compaction.history.tokens import token_costs

    wire = _agent_run("openai", steps=3)
    wire[3:3] = []
    wire.insert(len(wire) - 3, {"role": "user", "content": "now also update the docs"})
    h = to_canonical(wire)
    reg = split_regions(h, costs=token_costs(h).messages, tail_tokens=0)
    assert reg.users == (1, len(wire) - 4)
    assert reg.users_in("head") == (1,) and reg.users_in("middle") == (len(wire) - 4,)
    assert reg.newest_user_in_middle and reg.region_of(len(wire) - 1) == "tail"


def test_glyphfold_markers_are_never_real_user_messages():
    """A snapshot, summary or breadcrumb message does not start a turn (SPEC §1)."""
    from glyphfold.compaction.history.markers import (
        BREADCRUMB,
        MARKER_KINDS,
        SNAPSHOT,
        SUMMARY,
        marked_message,
    )

    for kind in (SNAPSHOT, SUMMARY, BREADCRUMB):
        m = marked_message("user", "[glyphfold snapshot] ...", kind)
        assert not is_turn_start(m)
    assert set(MARKER_KINDS) == {"snapshot", "snapshot_ack", "summary", "breadcrumb", "bridge"}
    with pytest.raises(ValueError, match="marker kind"):
        marked_message("user", "x", "note")  # type: ignore[arg-type]
    wire = [{"role": "user", "content": "q", "x_glyphfold": {"kind": "snapshot"}}]
    assert not is_turn_start(to_canonical(wire, format="openai").messages[0])  # the wire key too


def test_a_compaction_block_is_a_barrier():
    """What precedes Anthropic's compaction block is not counted; the block is in the head."""
    from glyphfold.compaction.history.steps import split_regions
    from glyphfold.compaction.history.tokens import token_costs

    wire = _agent_run("anthropic", steps=4)
    msgs = wire["messages"]
    barrier = {"type": "compaction", "content": "Summary of the work so far: two fixes landed."}
    msgs[5] = {"role": "assistant", "content": [barrier, *msgs[5]["content"]]}
    h = to_canonical(wire)
    costs = token_costs(h)
    assert costs.messages[:5] == (0,) * 5 and costs.messages[5] > 0
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    assert reg.barrier == 5 and reg.head_end == 7  # the barrier's whole step is head
    assert all(s.start >= 7 for s in reg.middle_steps)


def test_a_history_is_segmented_once(monkeypatch):
    """The steps of a history are found once and kept on it (issue 22: the rungs and the
    snapshot's tails split the same 10^5 messages six times); a changed history (a new
    object) is segmented again, and every tail of the same history gets its own regions."""
    from glyphfold.compaction.history import steps as steps_mod
    from glyphfold.compaction.history.model import History, new_message

    msgs = [new_message("user", "task")]
    for k in range(6):
        msgs += [new_message("assistant", f"step {k}"), new_message("user", f"more {k}")]
    h = History("openai", tuple(msgs))
    calls = []
    real = steps_mod._segment
    monkeypatch.setattr(steps_mod, "_segment", lambda m: calls.append(1) or real(m))
    tails = [steps_mod.split_regions(h, tail_messages=t) for t in (1, 3, 5)]
    assert len(calls) == 1
    assert [r.tail_start for r in tails] == [12, 10, 8]
    assert all(r.steps == tails[0].steps for r in tails)
    shorter = h.replace_messages(h.messages[:-2])
    assert steps_mod.split_regions(shorter, tail_messages=1).tail_start == 10
    assert len(calls) == 2  # another history: segmented again
    assert h == History("openai", tuple(msgs))  # the kept steps are no part of equality
