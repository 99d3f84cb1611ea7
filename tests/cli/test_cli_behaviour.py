"""A CLI that behaves (issue 14): exit codes, typed options, --json, repairs, progress, numbers.

Each test names the finding it guards; each failed on the code before the fix.
"""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
from cli_helpers import ORPHAN, run, write

import glyphfold
from glyphfold import cli
from glyphfold.compaction.history.validate import find_violations

# --------------------------------------------------------------------------- exit codes


def test_trim_over_budget_exits_1_and_writes_nothing(tmp_path, session_file, capsys):
    """`trim` over budget exited 0: the newest turn alone over --budget is exit 1."""
    out = tmp_path / "t.json"
    code, stdout, err = run(capsys, "trim", session_file, "--budget", "100", "-o", out)
    assert code == 1 and not out.exists() and stdout == ""
    assert "cannot trim to the target" in err and "over the budget of 100" in err
    code, _, _ = run(capsys, "trim", session_file, "--budget", "1000000", "-o", out)
    assert code == 0 and out.exists()


@pytest.mark.slow
def test_demo_that_cannot_fit_exits_1(tmp_path, capsys):
    """`demo --budget 5000` exited 2 (bad usage) for "cannot fit": that is exit 1.

    (100: below what the head and the newest step alone need, whatever the rungs do.)
    """
    code, _, err = run(capsys, "demo", "--out", tmp_path / "d", "--budget", "100")
    assert code == 1
    assert "Traceback" not in err and "error:" not in err
    assert not (tmp_path / "d" / "index.html").exists()


def test_missing_store_is_exit_2_for_every_store_command(tmp_path, capsys):
    """`sessions` on a missing store exited 0 while `tree` exited 2: both 2, one line."""
    db = tmp_path / "none.db"
    for argv in (("sessions",), ("tree",), ("export", "abc")):
        code, _, err = run(capsys, *argv, "--db", db)
        assert code == 2 and err.count("\n") == 1 and "no store at" in err, argv
    assert not db.exists()


# --------------------------------------------------------------------------- typed options


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (("compact", "{f}", "--window", "100000", "--ratio", "7"), "--ratio: must be in (0, 1]"),
        (("compact", "{f}", "--window", "100000", "--ratio", "0"), "--ratio: must be in (0, 1]"),
        (("compact", "{f}", "--window", "100000", "--ratio", "nan"), "--ratio"),
        (("compact", "{f}", "--budget", "0"), "--budget: must be a positive"),
        (("compact", "{f}", "--budget", "-5"), "--budget: must be a positive"),
        (("compact", "{f}", "--budget", "1000", "--reserve", "1000"), "--reserve"),
        (("trim", "{f}", "--budget", "10", "--profile", "nosuch"), "unknown profile 'nosuch'"),
        (("trim", "{f}", "--max-turns", "-1"), "--max-turns: must be 0 or more"),
        (("context", "{f}", "--top", "-3"), "--top: must be 0 or more"),
        (("shake", "{f}", "-o", "-", "--profile", "nosuch"), "unknown profile"),
        (("demo", "--budget", "0"), "--budget: must be a positive"),
    ],
)
def test_bad_options_are_rejected(orphan_file, capsys, argv, pattern):
    """Out-of-range or unknown values were silently ignored; now exit 2, one line."""
    code, stdout, err = run(capsys, *(a.format(f=orphan_file) for a in argv))
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and pattern in err, err


def test_window_without_ratio_says_which_budget(session_file, capsys):
    """`--window N` without `--ratio` gave 32,000 with no word: the plan says so."""
    code, out, _ = run(capsys, "compact", session_file, "--window", "100000", "--dry-run")
    assert code == 0
    assert out.startswith("budget 32,000 tokens: the default 32,000 (no --ratio")
    code, out, _ = run(capsys, "compact", session_file, "--window", "20000", "--dry-run")
    assert out.startswith("budget 20,000 tokens: the default 32,000 capped by the window")


def test_version_and_top_level_help(capsys):
    """--version; help lists commands in a sensible order and the exit codes."""
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"glyphfold {glyphfold.__version__}"
    code, out, _ = run(capsys, "--help")
    assert code == 0
    listed = re.findall(r"^    (\w+)\s", out, flags=re.M)
    assert listed[:3] == ["demo", "compact", "context"]
    assert listed.index("render") < listed.index("shapes") < listed.index("sessions")
    assert "exit codes:" in out and "2  bad usage" in out and "docs/cli.md" in out


def test_profiles_help_says_what_it_prints(capsys):
    code, out, _ = run(capsys, "profiles", "--help")
    assert code == 0
    for column in ("box", "page", "tok/page", "images", "context"):
        assert f"  {column} " in out


def test_every_help_cites_docs_not_spec(capsys):
    """--help cited "SPEC §3.1" of a SPEC.md the repository does not contain."""
    parser = cli.build_parser()
    texts = [parser.format_help()]
    for action in parser._subparsers._group_actions:
        texts += [p.format_help() for p in action.choices.values()]
    for text in texts:
        assert "SPEC" not in text
    assert sum("docs/" in t for t in texts) >= 10


# --------------------------------------------------------------------------- --json, --dry-run


def test_compact_json_is_one_object_with_the_figures(tmp_path, session_file, capsys):
    out, pages = tmp_path / "o.json", tmp_path / "pages"
    argv = ["compact", session_file, "--budget", "12000", "-o", out, "--pages-dir", pages]
    code, stdout, _ = run(capsys, *argv, "--json")
    assert code == 0
    data = json.loads(stdout)
    for key in ("tokens_before", "tokens_after", "budget", "fits", "ledger", "pages"):
        assert key in data
    assert data["fits"] and data["tokens_after"] <= 12000 and data["output"] == str(out)
    assert len(data["page_files"]) == len(data["pages"]) == len(list(pages.glob("page-*.png")))
    assert find_violations(json.loads(out.read_text())) == []
    code, _, err = run(capsys, "compact", session_file, "--budget", "12000", "--json")
    assert code == 2 and "give -o FILE" in err


def test_dry_run_prints_the_human_plan_and_json_only_on_request(session_file, capsys):
    """--dry-run printed 13 KB of ledger JSON; now the plan, the JSON only with --json."""
    code, out, _ = run(capsys, "compact", session_file, "--budget", "12000", "--dry-run")
    assert code == 0 and "{" not in out and len(out) < 1000
    assert out.splitlines()[1].startswith("plan: ")
    code, out, _ = run(capsys, "compact", session_file, "--budget", "12000", "--dry-run", "--json")
    assert json.loads(out)["dry_run"] is True


def test_compact_refuses_to_print_pages_to_a_terminal(session_file, capsys, monkeypatch):
    """Without -o, compact printed base64 PNGs to the terminal: refused, before the work."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    code = cli.main(["compact", str(session_file), "--budget", "12000"])
    assert code == 2 and tty.getvalue() == ""
    assert "not printing the compacted history" in capsys.readouterr().err
    assert cli.main(["compact", str(session_file), "--budget", "12000", "-o", "-"]) == 0
    assert json.loads(tty.getvalue())  # -o - prints it anyway


def test_context_trim_json(tmp_path, session_file, capsys):
    code, out, _ = run(capsys, "context", session_file, "--budget", "12000", "--json")
    data = json.loads(out)
    assert code == 0 and sum(data["by_kind"].values()) == data["tokens"]
    assert sum(r["tokens"] for r in data["by_role"].values()) == data["tokens"]
    assert [r["rung"] for r in data["rungs"]] == ["elide", "strip", "snapshot"]
    code, out, _ = run(
        capsys, "trim", session_file, "--max-turns", "2", "-o", tmp_path / "t.json", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["kept_turns"] == 2 and data["dropped_turns"] > 0
    assert data["tokens_after"] < data["tokens_before"]


# --------------------------------------------------------------------------- orphans


@pytest.mark.parametrize("command", ["compact", "shake", "trim"])
def test_orphans_are_swept_with_a_reported_repair(tmp_path, orphan_file, capsys, command):
    """Orphan tool results passed through compact/shake/trim with exit 0, unreported."""
    out = tmp_path / "out.json"
    extra = {"compact": ["--budget", "1000"], "shake": [], "trim": ["--budget", "1000"]}[command]
    code, _, err = run(capsys, command, orphan_file, "-o", out, *extra)
    assert code == 0
    assert "repaired the input: removed 1 orphan tool result(s) (#4 'ghost')" in err
    fixed = json.loads(out.read_text())
    assert find_violations(fixed) == []
    assert len(fixed) == len(ORPHAN) - 1


def test_import_sweeps_orphans(tmp_path, orphan_file, capsys):
    db = f"sqlite:///{tmp_path / 's.db'}"
    code, out, err = run(capsys, "import", "--db", db, orphan_file)
    assert code == 0 and "repaired the input" in err
    conv = out.split()[-1]
    code, out, _ = run(capsys, "export", "--db", db, conv)
    assert find_violations(json.loads(out)) == []


def test_pins_follow_the_messages_the_sweep_moves(tmp_path, capsys):
    """A pin by index names the same message after the sweep removed one before it."""
    f = write(tmp_path / "h.json", ORPHAN)  # the orphan is message 4, the reply 5
    code, _, _ = run(capsys, "compact", f, "--budget", "1000", "--pin", "5", "--dry-run")
    assert code == 0
    code, _, err = run(capsys, "compact", f, "--budget", "1000", "--pin", "4", "--dry-run")
    assert code == 2 and "--pin 4" in err


# --------------------------------------------------------------------------- progress, quiet


class _TtyErr(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_only_and_quiet(tmp_path, session_file, monkeypatch):
    """Long work was silent: progress on stderr when it is a terminal, off with --quiet."""
    argv = ["compact", str(session_file), "--budget", "12000", "-o", str(tmp_path / "o.json")]
    for quiet, expect in ((False, True), (True, False)):
        err = _TtyErr()
        monkeypatch.setattr(sys, "stderr", err)
        assert cli.main([*argv, *(["--quiet"] if quiet else [])]) == 0
        assert ("glyphfold: compacting 26 messages" in err.getvalue()) is expect
        assert ("compacted:" in err.getvalue()) is expect  # the summary too
    err = io.StringIO()  # not a terminal: the summary, no progress line
    monkeypatch.setattr(sys, "stderr", err)
    assert cli.main(argv) == 0
    assert "compacting 26" not in err.getvalue() and "compacted:" in err.getvalue()


# --------------------------------------------------------------------------- printed numbers


def _image_history() -> dict:
    """An Anthropic history whose old tool result carries a small image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (60, 60), 255).save(buf, format="PNG")
    import base64

    data = base64.b64encode(buf.getvalue()).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    return {
        "system": "s",
        "messages": [
            {"role": "user", "content": "take a screenshot"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image]}],
            },
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "next task"},
        ],
    }


def test_validate_compact_context_count_the_same_tokens(tmp_path, capsys):
    """The same file was 72,990 tokens in `validate` and 72,994 in `compact`.

    Cause: validate priced images as the seed's harness sends them (not an old tool
    result's image) while compact priced every image in the file. Every command now
    prices a history file as it is sent: every image.
    """
    f = write(tmp_path / "img.json", _image_history())
    _, out, _ = run(capsys, "validate", f, "--json")
    validated = json.loads(out)["tokens"]
    _, out, _ = run(capsys, "compact", f, "--budget", "100000", "--dry-run", "--json")
    compacted = json.loads(out)["tokens_before"]
    _, out, _ = run(capsys, "context", f, "--json")
    context = json.loads(out)["tokens"]
    _, _, err = run(capsys, "trim", f, "--budget", "100000", "-o", tmp_path / "t.json")
    trimmed = int(err.split("~")[1].split()[0].replace(",", ""))
    assert validated == compacted == context == trimmed


def test_profiles_print_the_page_as_rendered(capsys):
    """profiles said 1568x728 / 1,523 tokens while the pages written are 1568x720 / 1,506."""
    _, out, _ = run(capsys, "profiles", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    page = glyphfold.render_text("x\n" * 200, profile="anthropic").pages[0]
    assert rows["anthropic"]["full_page"] == [page.width, page.height] == [1568, 720]
    assert rows["anthropic"]["full_page_tokens"] == page.image_tokens == 1506
    _, out, _ = run(capsys, "profiles")
    line = next(ln for ln in out.splitlines() if ln.startswith("anthropic "))
    assert "1568x720" in line and "1,506" in line


def test_render_warns_when_pages_cost_more_than_text(tmp_path, capsys):
    """`render` of code cost 3.5x the text with no word: a warning names the cheaper way."""
    src = write(tmp_path / "code.py", None)
    src.write_text("x = 1\n" * 3000, encoding="utf-8")  # short lines: one row each
    code, _, err = run(capsys, "render", src, "--out", tmp_path / "o", "--no-reflow")
    assert code == 0
    assert "warning: these pages cost" in err and "more than the text itself" in err
    assert "--reflow" in err  # folding newlines packs the short lines
    # the default folds newlines, as snapshot pages do: no warning for the same file
    code, _, err = run(capsys, "render", src, "--out", tmp_path / "o")
    assert code == 0 and "warning" not in err
    dense = tmp_path / "dense.txt"
    dense.write_text("word " * 4000, encoding="utf-8")
    _, _, err = run(capsys, "render", dense, "--out", tmp_path / "p", "--shape", "dense")
    assert "warning" not in err


def test_results_print_a_summary_not_png_bytes(session):
    """Printing a RenderResult or CompactionResult showed ~1.2 MB of inlined PNG bytes."""
    r = glyphfold.render_text("hello world\n" * 2000)
    assert len(repr(r)) < 300 and "\\x89PNG" not in repr(r)
    assert repr(r).startswith("<RenderResult ") and f"{r.image_tokens:,} image tokens" in repr(r)
    assert "\\x89PNG" not in repr(r.pages[0])
    c = glyphfold.compact(session, budget=12_000)
    assert c.pages and len(repr(c)) < 300 and "PNG" not in repr(c)
    assert repr(c).startswith(f"<CompactionResult {c.tokens_before:,} -> {c.tokens_after:,}")
