"""A focus for the summary rung: compact(focus=...), acompact, the CLI's --focus (issue 23).

SPEC §5 (summary rung). Any callable ``text -> str`` is a summarizer; the focus heads
every request and is written in the summary's preamble.
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
        {},  # no summarizer: no summary rung
        {"summarizer": lambda t: "s", "rungs": "elide,snapshot,trim"},  # summary not in rungs
    ],
)
def test_focus_without_a_summary_rung_is_refused(session, kw):
    with pytest.raises(InputError, match="focus="):
        compact(session, budget=BUDGET, focus=FOCUS, **kw)


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


def test_cli_focus_needs_the_summary_rung(history_file, capsys):
    base = ["compact", str(history_file), "--budget", str(BUDGET)]
    assert main([*base, "--focus", FOCUS]) == 2
    assert "--focus is for the summary rung" in capsys.readouterr().err
    assert main([*base, "--summary-model", "m"]) == 2
    assert "--summary-model is for the summary rung" in capsys.readouterr().err
    args = [*base, "--summarizer", "anthropic", "--rungs", "elide,trim", "--focus", FOCUS]
    assert main(args) == 2
    assert "add summary to --rungs" in capsys.readouterr().err


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
        CompactionPolicy(budget=BUDGET, focus=FOCUS)


def test_compactor_takes_a_focus_and_checks_it_when_built(session):
    """A focus changes the summary, so it is part of the Compactor's seed (its digests)."""
    from glyphfold.compaction.ladder.compactor import Compactor

    plain = Compactor(BUDGET, summarizer=lambda t: "s")
    focused = Compactor(BUDGET, summarizer=lambda t: "s", focus=FOCUS)
    assert plain.seed != focused.seed and "focus" not in plain.seed
    with pytest.raises(InputError, match="focus="):
        Compactor(BUDGET, focus=FOCUS)
