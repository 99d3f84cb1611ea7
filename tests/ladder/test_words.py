"""SPEC §5.9: the snapshot holds the words.

No per-result cap while the pages fit; the denser shape before any cut; words cut only
at the last, oldest first, and counted; the retained source keeps every word, so a
later pass with more room restores it. The task's own words (real user messages, the
request) stay text. Stubs are never stubbed again.
"""

from __future__ import annotations

import json

import pytest
import shapes

from glyphfold.compaction.history.markers import glyphfold_meta
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import Message, Text, ToolCall, ToolResult
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.api import compact
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.notable import elision_stub
from glyphfold.compaction.ladder.rungs.snapshot import SnapshotConfig
from glyphfold.compaction.ladder.rungs.snapshot.source import LEVELS, Source, level_config
from glyphfold.compaction.ladder.transcript import TranscriptConfig, plain_text

SNAP_ONLY = "snapshot"


def big_result(k: int, lines: int = 400) -> str:
    """A long file read: every line different, an id at its end (no cap may lose it)."""
    body = [f"    line {n}: value_{k}_{n} = compute({n}, {k})" for n in range(lines)]
    return "\n".join([f"# src/module_{k}.py", *body, f"# END-OF-FILE-{k}-{k * 7919:x}"])


def reads(fmt: str, steps: int = 6, lines: int = 400):
    b = shapes.Builder(fmt).user("Read the modules and tell me what they compute.")
    for k in range(steps):
        b.step(
            f"Reading module {k}.",
            [("read_file", {"path": f"src/module_{k}.py"}, big_result(k, lines), False)],
        )
    b.assistant("All modules read.")
    return b.wire()


def snapshots(result):
    msgs = result.messages["messages"] if isinstance(result.messages, dict) else result.messages
    return [m for m in msgs if m.get("x_glyphfold", {}).get("kind") == "snapshot"]


def snap_entry(result):
    (e,) = [e for e in result.ledger if e.rung == "snapshot"]
    return e


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_no_result_is_cut_while_its_pages_fit(fmt):
    """A 17,000-char result on the pages whole: no '[... chars cut ...]', nothing counted."""
    wire = reads(fmt)
    est = estimate_history_tokens(wire)
    result = compact(wire, budget=est * 6 // 10, rungs=SNAP_ONLY)
    e = snap_entry(result)
    assert not e.extra["lossy"] and e.extra["dropped_chars"] == 0
    src = "".join(s["x_glyphfold"]["source"] for s in snapshots(result))
    assert "chars cut" not in src
    imaged = e.extra["imaged_steps"]
    assert imaged >= 2
    for k in range(imaged):
        tag = f"END-OF-FILE-{k}-{k * 7919:x}"
        if f"Reading module {k}." in src:
            assert tag in src  # the end of a long result is on the pages
    assert find_violations(result.messages) == []


def test_the_denser_shape_comes_before_any_cut():
    """Where regular pages cannot hold the middle, dense pages hold it whole (SPEC §5.9)."""
    wire = reads("openai", steps=8)
    est = estimate_history_tokens(wire)
    found = None
    for frac in (0.5, 0.4, 0.33, 0.28, 0.24, 0.2):
        budget = int(est * frac)
        regular = compact(
            wire,
            budget=budget,
            rungs=SNAP_ONLY,
            config=LadderConfig(snapshot=SnapshotConfig(shape="regular")),
            dry_run=True,
        )
        if snap_entry(regular).extra["lossy"]:
            found = budget, regular
            break
    assert found is not None, "no budget made regular pages lossy"
    budget, regular = found
    ladder = compact(wire, budget=budget, rungs=SNAP_ONLY)
    e = snap_entry(ladder)
    assert e.extra["shape"] == "dense" and not e.extra["lossy"] and e.extra["dropped_chars"] == 0
    assert snap_entry(regular).extra["dropped_chars"] > 0
    assert ladder.fits


def test_cuts_are_counted_and_the_source_keeps_every_word():
    """A lossy pass counts every character not on the pages; its retained source holds them."""
    wire = reads("openai", steps=8)
    est = estimate_history_tokens(wire)
    result = compact(wire, budget=est // 6, rungs=SNAP_ONLY)
    e = snap_entry(result)
    assert e.extra["lossy"] and e.extra["dropped_chars"] > 0
    assert "words cut to fit" in e.note
    (snap,) = snapshots(result)
    source = snap["x_glyphfold"]["source"]
    assert e.extra["retained_chars"] == len(source) > e.extra["source_chars"]
    for k in range(e.extra["imaged_steps"]):
        assert f"END-OF-FILE-{k}-{k * 7919:x}" in source  # every word retained
    # what the pages lack is exactly what was counted (markers aside)
    assert e.extra["dropped_chars"] <= len(source) - e.extra["source_chars"] + 2_000
    # a later pass unfolds the retained source: every word is back in its text
    h = to_canonical(result.messages)
    m = next(m for m in h.messages if glyphfold_meta(m).get("kind") == "snapshot")
    piece = Source([m], {}, TranscriptConfig()).piece(0, 0)
    for k in range(e.extra["imaged_steps"]):
        assert f"END-OF-FILE-{k}-{k * 7919:x}" in piece


def test_an_earlier_snapshot_is_shortened_first_oldest_first():
    """On a later lossy pass the earlier snapshot (the oldest text) loses words first."""
    wire = reads("openai", steps=8)
    est = estimate_history_tokens(wire)
    first = compact(wire, budget=est // 2, rungs=SNAP_ONLY)
    h = to_canonical(first.messages)
    m = next(m for m in h.messages if glyphfold_meta(m).get("kind") == "snapshot")
    src = Source([m], {}, TranscriptConfig())
    assert src.tool_output[0]  # an earlier snapshot can be shortened by levels
    full, capped, elided = src.piece(0, 0), src.piece(0, 1), src.piece(0, LEVELS + 1)
    assert len(elided) < len(capped) < len(full)
    assert "chars cut" in capped and "[elided: result, " in elided


def test_a_stub_is_never_stubbed_again():
    """Stub of a stub: the elided level keeps the stub of the ORIGINAL output (size, hash)."""
    original = "x = 1\n" * 5_000
    stub = elision_stub(original, tool_name="read_file", reason="reread by #c9")
    msgs = [
        Message("assistant", (ToolCall("c1", "read_file", {"path": "a.py"}),)),
        Message("tool", (ToolResult("c1", (Text(stub),)),)),
    ]
    src = Source(msgs, {"c1": "read_file"}, TranscriptConfig())
    assert stub in plain_text(src.piece(1, LEVELS + 1))
    assert "30,000 chars" in stub and src.piece(1, LEVELS + 1).count("[elided:") == 1


def test_level_caps_are_absolute_without_a_configured_cap():
    base = TranscriptConfig()
    assert base.max_result_chars is None and level_config(base, 0) is base
    caps = [level_config(base, k).max_result_chars for k in range(1, LEVELS + 1)]
    assert caps == sorted(caps, reverse=True) and caps[0] >= 4_000
    old = TranscriptConfig(max_result_chars=6000, max_args_chars=2000)
    assert level_config(old, 1).max_result_chars == 3000
    with pytest.raises(ValueError, match="max_result_chars"):
        TranscriptConfig(max_result_chars=10)


def qa_session(fmt: str):
    """A question-answering session: a preamble, then the question, then long answers."""
    b = shapes.Builder(fmt).user("You are helping with statistics homework. Be precise.")
    b.assistant("Understood. What is the question?")
    b.user("QUESTION-7f3a: compute the adjusted R-squared for n=10, k=2, R2=0.6.")
    for t in range(6):
        words = " ".join(f"step{t}_{k} of the derivation continues." for k in range(90))
        b.assistant(f"Answer part {t}: {words}")
        b.user(f"Follow-up {t}: and what about case {t}?")
    b.assistant("Done: 0.4857.")
    return b.wire()


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_every_real_user_message_stays_text_while_it_can(fmt):
    """The task imaged and cut: the question (second user message) stays text, verbatim;
    with room, every user message does; none is ever cut before the rest."""
    wire = qa_session(fmt)
    est = estimate_history_tokens(wire)
    roomy = compact(wire, budget=est * 3 // 4, rungs=SNAP_ONLY)
    text = json.dumps(roomy.for_provider())
    for t in range(6):
        assert f"Follow-up {t}: and what about case {t}?" in text
    assert snap_entry(roomy).extra["users_as_text"] == "all"
    for budget in (est // 2, est * 2 // 5):
        result = compact(wire, budget=budget, rungs=SNAP_ONLY)
        text = json.dumps(result.for_provider())
        assert "QUESTION-7f3a: compute the adjusted R-squared" in text  # text, not pixels
        e = snap_entry(result)
        assert not e.extra["lossy"]  # (it may also stay text as an old step left before the pages)
        assert all(r.dest != "dropped" for r in e.removed)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_run_of_user_messages_at_the_end_is_the_request(fmt):
    """A harness that ends with a summary, a caveat and a command: all three stay text."""
    b = shapes.Builder(fmt).user("Build the parser.")
    for k in range(12):
        b.step(f"Step {k}.", [("run", {"cmd": f"make {k}"}, shapes.listing(k, 80), False)])
    b.assistant("Parser built.")
    summary = "SUMMARY-91c2: " + " ".join(f"fact{k} was established." for k in range(300))
    b.user(summary)
    b.user("Caveat: the messages above were generated by the user while running commands.")
    b.user("/compact")
    wire = b.wire()
    est = estimate_history_tokens(wire)
    result = compact(wire, budget=est // 2)
    text = json.dumps(result.for_provider())
    assert summary in text and "Caveat: the messages above" in text and "/compact" in text
    assert find_violations(result.messages) == []
