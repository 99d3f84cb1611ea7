"""A focus: compact(focus=...), acompact, the CLI's --focus, the adapters (issue 23).

SPEC §5 (summary rung), §5.9 (snapshots keep every word). Any callable ``text -> str``
is a summarizer; the focus heads every request and is written in the summary's
preamble, and it is written at the end of each snapshot's reading guide (the text that
tells the model what the pages are), with or without a summarizer.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from glyphfold import acompact
from glyphfold.cli import main
from glyphfold.compaction.ladder import summarizers
from glyphfold.compaction.ladder.api import compact
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.snapshot.build import FOCUS_GUIDE
from glyphfold.compaction.ladder.rungs.summary import SummaryConfig
from glyphfold.compaction.ladder.summarizers import summarize_bounded
from glyphfold.errors import InputError

BUDGET = 20_000
FOCUS = "the failing test GLY-77 and its fix"


def _recording(texts):
    def summarizer(text):  # a plain callable: no adapter, no prompt attribute
        texts.append(text)
        return "Goals: compaction. Ticket GLY-20417."

    return summarizer


def test_focus_reaches_a_plain_callable_and_the_preamble(session):
    texts = []
    result = compact(
        session, budget=BUDGET, rungs="summary", summarizer=_recording(texts), focus=FOCUS
    )
    assert texts and all(t.startswith("[focus: ") and FOCUS in t.split("\n")[0] for t in texts)
    out = json.dumps(result.messages)
    assert f"[written with the focus: {FOCUS}]" in out
    assert "GLY-20417" in out


def test_focus_heads_every_chunk_within_the_bound(session):
    texts = []
    compact(
        session,
        budget=BUDGET,
        rungs="summary",
        summarizer=_recording(texts),
        focus=FOCUS,
        config=LadderConfig(summary=SummaryConfig(max_input_chars=20_000)),
    )
    assert len(texts) > 1
    assert all(FOCUS in t.split("\n")[0] and len(t) <= 20_000 for t in texts)


def test_no_focus_sends_the_text_as_before():
    texts = []
    assert summarize_bounded("abc", _recording(texts), max_input_chars=1000) == (
        "Goals: compaction. Ticket GLY-20417.",
        1,
    )
    assert texts == ["abc"]


def test_acompact_takes_a_focus(session):
    texts = []
    result = asyncio.run(
        acompact(session, budget=BUDGET, rungs="summary", summarizer=_recording(texts), focus=FOCUS)
    )
    assert texts and FOCUS in texts[0]
    assert "[written with the focus:" in json.dumps(result.messages)


@pytest.mark.parametrize(
    "kw",
    [
        {"rungs": "elide,trim"},  # neither snapshot nor summary
        {"summarizer": lambda t: "s", "rungs": "elide,strip,trim"},
    ],
)
def test_focus_without_a_snapshot_or_summary_rung_is_refused(session, kw):
    with pytest.raises(InputError, match="focus="):
        compact(session, budget=BUDGET, focus=FOCUS, **kw)


def _snapshots(messages):
    """The snapshot messages of a compacted wire history (their x_glyphfold key)."""
    if isinstance(messages, dict):  # Anthropic: {"system": ..., "messages": [...]}
        messages = messages["messages"]
    return [m for m in messages if (m.get("x_glyphfold") or {}).get("kind") == "snapshot"]


def _guide(m):
    """A snapshot's reading guide: its first text part, in either wire format."""
    parts = m["content"]
    return next(p["text"] for p in parts if p.get("type") == "text")


def _pngs(m):
    out = []
    parts = m.get("content")
    for p in parts if isinstance(parts, list) else ():
        if p.get("type") == "image":
            out.append(p["source"]["data"])
        elif p.get("type") == "image_url":
            out.append(p["image_url"]["url"])
    return out


def test_focus_is_written_in_the_snapshots_reading_guide(session):
    """Issue 23: a focus reaches the pages too, with no summarizer at all: each reading
    guide ends with it; the pages (pixels) and the source they image are the same as
    without a focus (they keep every word, SPEC §5.9: the focus is an instruction)."""
    plain = compact(session, budget=BUDGET, rungs="snapshot,trim")
    focused = compact(session, budget=BUDGET, rungs="snapshot,trim", focus=FOCUS)
    snaps, plain_snaps = _snapshots(focused.messages), _snapshots(plain.messages)
    assert snaps and len(snaps) == len(plain_snaps)
    want = FOCUS_GUIDE.format(focus=FOCUS)
    for s, p in zip(snaps, plain_snaps, strict=True):
        assert _guide(s).endswith(want) and not _guide(p).endswith(want)
        assert _guide(s) == _guide(p) + want
        assert _pngs(s) and _pngs(s) == _pngs(p)  # the same pixels
        assert s["x_glyphfold"]["source"] == p["x_glyphfold"]["source"]
        assert FOCUS not in s["x_glyphfold"]["source"]
    # the guide is priced: the focused history is a little larger, still in budget
    assert plain.tokens_after < focused.tokens_after <= BUDGET


def test_with_a_summarizer_the_pages_still_carry_the_focus(session):
    texts = []
    result = compact(session, budget=BUDGET, summarizer=_recording(texts), focus=FOCUS)
    snaps = _snapshots(result.messages)
    assert snaps and all(_guide(s).endswith(FOCUS_GUIDE.format(focus=FOCUS)) for s in snaps)


def test_a_snapshot_rung_object_keeps_its_own_focus(session):
    from glyphfold.compaction.ladder.rungs.snapshot import Snapshot

    result = compact(session, budget=BUDGET, rungs=[Snapshot(focus="GLY-9")])
    assert all(_guide(s).endswith("for: GLY-9.") for s in _snapshots(result.messages))
    with pytest.raises(ValueError, match="focus must be a non-empty str"):
        Snapshot(focus="  ")


@pytest.mark.parametrize("bad", ["", "   ", 3])
def test_bad_focus_is_refused(session, bad):
    with pytest.raises(ValueError, match="focus must be a non-empty str"):
        compact(session, budget=BUDGET, summarizer=lambda t: "s", focus=bad)


@pytest.fixture
def history_file(tmp_path, session):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(session), encoding="utf-8")
    return p


def test_cli_focus_and_summary_model(tmp_path, history_file, monkeypatch):
    built, texts = [], []

    def from_env(cls, **kwargs):
        built.append(kwargs)
        return _recording(texts)

    monkeypatch.setattr(summarizers.AnthropicSummarizer, "from_env", classmethod(from_env))
    out = tmp_path / "out.json"
    args = ["compact", str(history_file), "-o", str(out), "--budget", str(BUDGET)]
    args += ["--rungs", "summary,trim", "--summarizer", "anthropic"]
    args += ["--summary-model", "claude-x", "--focus", FOCUS, "-q"]
    assert main(args) == 0
    assert built == [{"model": "claude-x"}]
    assert texts and FOCUS in texts[0]
    assert f"[written with the focus: {FOCUS}]" in out.read_text()


def test_cli_focus_needs_a_rung_that_uses_it(history_file, capsys):
    base = ["compact", str(history_file), "--budget", str(BUDGET)]
    assert main([*base, "--rungs", "elide,trim", "--focus", FOCUS]) == 2
    assert "add snapshot (or summary with --summarizer) to --rungs" in capsys.readouterr().err
    assert main([*base, "--summary-model", "m"]) == 2
    assert "--summary-model is for the summary rung" in capsys.readouterr().err
    args = [*base, "--summarizer", "anthropic", "--rungs", "elide,trim", "--focus", FOCUS]
    assert main(args) == 2
    assert "--focus" in capsys.readouterr().err


def test_cli_focus_without_a_summarizer_writes_the_guide(tmp_path, history_file):
    """`glyphfold compact --focus` with the default ladder (no summarizer): the output's
    snapshots carry the focus in their reading guide, and so does `--provider-ready`."""
    for extra in ([], ["--provider-ready"]):
        out = tmp_path / "out.json"
        args = ["compact", str(history_file), "-o", str(out), "--budget", str(BUDGET)]
        assert main([*args, "--focus", FOCUS, "-q", *extra]) == 0
        snaps = _snapshots(json.loads(out.read_text())) if not extra else None
        written = json.loads(out.read_text())
        msgs = written["messages"] if isinstance(written, dict) else written
        guides = [_guide(m) for m in msgs if _pngs(m)]
        assert snaps is None or len(snaps) == len(guides)
        assert guides and all(g.endswith(FOCUS_GUIDE.format(focus=FOCUS)) for g in guides)


def test_adapters_take_a_focus_and_check_it_when_built(session):
    """The adapters' shared options (issue 23): focus= goes to compact; without a
    summarizer it fails when the adapter is built, not 20 steps later."""
    from glyphfold.integrations.policy import CompactionPolicy

    texts = []
    policy = CompactionPolicy(
        budget=BUDGET, rungs="summary", summarizer=_recording(texts), focus=FOCUS
    )
    result = policy.compact(session, profile="anthropic")
    assert texts and FOCUS in texts[0]
    assert "[written with the focus:" in json.dumps(result.messages)
    with pytest.raises(InputError, match="focus="):
        CompactionPolicy(budget=BUDGET, rungs="elide,trim", focus=FOCUS)
    snap = CompactionPolicy(budget=BUDGET, rungs="snapshot,trim", focus=FOCUS)
    written = json.dumps(snap.compact(session, profile="anthropic").messages)
    assert FOCUS_GUIDE.format(focus=FOCUS) in written


def test_compactor_takes_a_focus_and_checks_it_when_built(session):
    """A focus changes the summary, so it is part of the Compactor's seed (its digests)."""
    from glyphfold.compaction.ladder.compactor import Compactor

    plain = Compactor(BUDGET, summarizer=lambda t: "s")
    focused = Compactor(BUDGET, summarizer=lambda t: "s", focus=FOCUS)
    assert plain.seed != focused.seed and "focus" not in plain.seed
    with pytest.raises(InputError, match="focus="):
        Compactor(BUDGET, rungs="elide,trim", focus=FOCUS)
    pages = Compactor(BUDGET, focus=FOCUS)  # the default ladder images: the guide has it
    assert "focus" in pages.seed
    written = json.dumps(pages(session).messages)
    assert FOCUS_GUIDE.format(focus=FOCUS) in written
