"""SPEC §5.8: elision removes only what carries no notable event, and says why.

Superseded results (read again, re-run, rewritten), exact duplicates, progress noise,
confirmations and empty outputs qualify; file contents, search results, test runs and
errors stay for the snapshot. Checked on unit cases and on the real sessions of
../shared/realdata (skipped when absent).
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from glyphfold.compaction.history.messages import coerce
from glyphfold.compaction.history.model import ToolResult
from glyphfold.compaction.ladder.api import compact, shake
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.common import result_text
from glyphfold.compaction.ladder.rungs.elide import ElideConfig, elision_reasons
from glyphfold.compaction.ladder.rungs.notable import error_text, is_stub
from glyphfold.compaction.ladder.rungs.superseded import (
    Call,
    action_of,
    argument_reasons,
    is_test_run,
    qualifying_reasons,
    text_reason,
)

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
if not REALDATA.is_dir():
    REALDATA = Path("/work/shared/realdata")
FILE = "x = 1\n" * 300


def editor(cmd, path, **kw):
    return {"command": cmd, "path": path, **kw}


def test_actions_read_write_and_shell():
    """Tool names and arguments as real agents write them."""
    assert action_of("str_replace_editor", editor("view", "/a.py")).reads == ("/a.py",)
    assert action_of("str_replace_editor", editor("view", "/a.py")).whole
    part = action_of("str_replace_editor", editor("view", "/a.py", view_range=[1, 9]))
    assert part.reads == ("/a.py",) and not part.whole
    assert action_of("str_replace_editor", editor("create", "/a.py")).writes == ("/a.py",)
    assert action_of("str_replace_editor", editor("str_replace", "/a.py")).edits == ("/a.py",)
    assert action_of("read_file", json.dumps({"path": "./src//x.py"})).reads == ("src/x.py",)
    sh = action_of("bash", {"command": "cat a.txt && echo hi > out.log; sed -i s/a/b/ c.py"})
    assert sh.reads == ("a.txt",) and sh.whole
    assert sh.writes == ("out.log",) and sh.edits == ("c.py",)
    assert (
        action_of("bash", {"command": "ls  -la"}).key
        == action_of("bash", {"command": "ls -la"}).key
    )
    assert action_of("weird", "not json").key.startswith("weird")


def _calls(*specs):
    return [Call(f"c{k}", n, a, r, v) for k, (n, a, r, v) in enumerate(specs)]


def test_superseded_results_qualify_with_what_supersedes_them():
    """Read again, re-run, rewritten: the reason names the later call."""
    calls = _calls(
        ("str_replace_editor", editor("view", "/a.py"), FILE, False),  # c0: read again by c3
        ("bash", {"command": "git status"}, "M a.py\n" * 80, False),  # c1: re-run as c4
        ("read_file", {"path": "b.py"}, FILE + "b", False),  # c2: rewritten by c5
        ("str_replace_editor", editor("view", "/a.py"), FILE + "#", False),
        ("bash", {"command": "git status"}, "M a.py\nM b.py\n" * 40, False),
        ("write_file", {"path": "b.py", "content": "new"}, "ok", False),
        ("read_file", {"path": "c.py"}, FILE + "c", False),  # c6: read once: file content
    )
    why = qualifying_reasons(calls)
    assert why["c0"] == "reread by #c3"
    assert why["c1"] == "rerun as #c4"
    assert why["c2"] == "rewritten by #c5"
    assert "c3" not in why and "c4" not in why and "c6" not in why


def test_a_partial_edit_or_a_partial_read_supersedes_nothing():
    calls = _calls(
        ("read_file", {"path": "a.py"}, FILE, False),
        ("str_replace_editor", editor("str_replace", "a.py", old_str="x", new_str="y"), "", False),
        ("str_replace_editor", editor("view", "a.py", view_range=[1, 5]), "x = 1\n", False),
    )
    assert "c0" not in qualifying_reasons(calls)


def test_test_runs_and_errors_are_never_superseded_by_a_rerun():
    """A test run or an error re-run later: the earlier verdict is not in the later one."""
    run1 = "===== test session starts =====\n" + "." * 400 + "\n3 failed, 9 passed in 1.2s"
    run2 = "===== test session starts =====\n" + "." * 400 + "\n12 passed in 1.1s"
    assert is_test_run(run1) and is_test_run(run2)
    calls = _calls(
        ("bash", {"command": "pytest -q"}, run1, True),
        ("bash", {"command": "pytest -q"}, run2, True),
    )
    assert qualifying_reasons(calls) == {}
    same = _calls(
        ("bash", {"command": "pytest -q"}, run2, True),
        ("bash", {"command": "pytest -q"}, run2, True),
    )
    assert qualifying_reasons(same) == {"c0": "duplicate of #c1"}  # word for word: nothing new


def test_duplicates_progress_confirmations_and_empty_outputs():
    calls = _calls(
        ("search", {"q": "foo"}, FILE, False),
        ("search", {"q": "bar"}, FILE, False),
    )
    assert qualifying_reasons(calls) == {"c0": "duplicate of #c1"}
    pip = "\n".join(
        ["Collecting numpy", "  Downloading numpy-2.0.whl (18 MB)", "Installing collected packages"]
        + [f"  {k}% |#####     |" for k in range(10, 100, 10)]
        + ["Successfully installed numpy-2.0"]
    )
    assert text_reason(pip) == "progress"
    assert text_reason("File created successfully at: /testbed/x.py") == "confirmation"
    assert text_reason("   \n") == "empty"
    assert text_reason(FILE) is None  # file content does not qualify
    assert text_reason("def f():\n    return 1\n" * 10) is None


def test_argument_bodies_are_stubbed_only_when_the_file_is_written_or_read_again():
    calls = _calls(
        ("write_file", {"path": "a.py", "content": FILE}, "ok", False),
        ("write_file", {"path": "b.py", "content": FILE}, "ok", False),
        ("write_file", {"path": "a.py", "content": FILE + "2"}, "ok", False),
    )
    assert argument_reasons(calls) == {"c0": "superseded by #c2"}


def _openai_loop(results):
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix the bug"}]
    for k, (name, args, text) in enumerate(results):
        cid = f"call_{k}"
        msgs.append(
            {
                "role": "assistant",
                "content": f"step {k}",
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "content": text})
    return msgs


def test_the_rung_keeps_file_contents_and_stubs_what_is_read_again():
    """compact(): a file read once stays whole; one read again later is a stub saying so."""
    steps = [("read_file", {"path": f"f{k}.py"}, f"# file {k}\n" + FILE) for k in range(6)]
    steps.insert(1, ("read_file", {"path": "f0.py"}, "# file 0 again\n" + FILE))
    steps += [("bash", {"command": f"echo {k}"}, str(k)) for k in range(6)]
    h = _openai_loop(steps)
    cfg = LadderConfig(min_saving_tokens=0, tail_tokens=0)
    res = compact(h, budget=500, rungs="elide", config=cfg, dry_run=True)
    (entry,) = res.ledger
    stubs = [r for r in entry.removed if r.dest == "stub"]
    assert [r.id for r in stubs] == ["call_0"]  # only the superseded read
    assert stubs[0].detail.endswith("; reread by #call_1]") and is_stub(stubs[0].detail)
    assert f" {len(steps[0][2]):,} chars, sha1 " in stubs[0].detail  # the original's size
    # the 0.1 rule would stub every long old read
    wide = LadderConfig(
        min_saving_tokens=0, tail_tokens=0, elide=ElideConfig(policy="unremarkable")
    )
    res = compact(h, budget=500, rungs="elide", config=wide, dry_run=True)
    assert len([r for r in res.ledger[0].removed if r.dest == "stub"]) > 1


def test_shake_defaults_to_the_wide_rule_and_takes_the_spec_rule():
    steps = [("read_file", {"path": f"f{k}.py"}, FILE) for k in range(8)]
    h = _openai_loop([(n, a, t + str(k)) for k, (n, a, t) in enumerate(steps)])
    wide = LadderConfig(tail_tokens=0, elide=ElideConfig(policy="unremarkable"))
    spec = LadderConfig(tail_tokens=0)
    assert shake(h, config=wide).tokens_after < shake(h, config=spec).tokens_after
    assert shake(h).tokens_after < shake(h, config=spec).tokens_after or shake(h).ledger == ()


def test_policy_is_validated():
    with pytest.raises(ValueError, match="policy"):
        ElideConfig(policy="everything")


@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata absent")
def test_real_sessions_elide_only_what_qualifies():
    """On every real session: every stub is a qualifying result (its reason in the stub),
    never an error or a test run; results that qualify for nothing stay whole."""
    cfg = ElideConfig()
    seen = 0
    for f in sorted(glob.glob(str(REALDATA / "*.openai.json"))):
        raw = json.loads(Path(f).read_text())
        h, _ = coerce(raw, format="openai")  # the file name says it
        reasons = elision_reasons(h, cfg).results or {}
        texts = {
            b.call_id: (result_text(b), b.is_error)
            for m in h.messages
            for b in m.blocks
            if isinstance(b, ToolResult)
        }
        res = shake(raw, config=LadderConfig(elide=cfg))
        for e in res.ledger:
            for r in e.removed:
                if r.dest != "stub" or not r.detail.startswith("[elided: ") or r.id not in texts:
                    continue
                text, is_error = texts[r.id]
                assert r.id in reasons, (f, r.id)
                assert r.detail.endswith(f"; {reasons[r.id]}]"), (f, r.detail)
                if not reasons[r.id].startswith("duplicate"):
                    assert not is_error and not error_text(text, cfg) and not is_test_run(text)
                seen += 1
    assert seen >= 3  # the sessions do re-run commands
