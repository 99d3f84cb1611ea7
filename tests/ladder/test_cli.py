"""CLI commands of the ladder: compact, context, shake, demo (issue 5)."""

from __future__ import annotations

import json

import pytest

from glyphfold.cli import main
from glyphfold.compaction.history.validate import find_violations


@pytest.fixture
def history_file(tmp_path, session):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(session), encoding="utf-8")
    return p


def test_compact_writes_history_pages_and_report(tmp_path, history_file, capsys):
    """compact: output JSON, pages, report, a short summary on stderr; exit 0."""
    out, pages, report = tmp_path / "out.json", tmp_path / "pages", tmp_path / "r.json"
    before = history_file.read_bytes()
    code = main(
        [
            "compact",
            str(history_file),
            "-o",
            str(out),
            "--budget",
            "8000",
            "--pages-dir",
            str(pages),
            "--report",
            str(report),
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "compacted:" in err and "snapshot:" in err
    compacted = json.loads(out.read_text())
    assert find_violations(compacted) == []
    rep = json.loads(report.read_text())
    assert rep["fits"] and rep["tokens_after"] <= 8000
    assert len(sorted(pages.glob("page-*.png"))) == len(rep["pages"]) >= 1
    assert history_file.read_bytes() == before


def test_compact_exit_codes(tmp_path, history_file, capsys):
    """1: cannot reach the budget; 2: bad input or usage (one line, no traceback)."""
    out = tmp_path / "out.json"
    assert main(["compact", str(history_file), "-o", str(out), "--budget", "50"]) == 1
    assert not out.exists()
    assert "cannot compact" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["compact", str(bad), "--budget", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid JSON" in err
    assert main(["compact", str(history_file), "--budget", "1000", "--profile", "nope"]) == 2
    assert main(["compact", str(tmp_path / "missing.json"), "--budget", "1000"]) == 2
    assert main(["compact", str(history_file)]) == 2  # no budget
    assert main(["compact", str(history_file), "--budget", "1", "--window", "2"]) == 2


def test_compact_dry_run_and_window(tmp_path, history_file, capsys):
    """--dry-run prints the human plan and writes nothing; the JSON only with --json."""
    out = tmp_path / "out.json"
    args = ["compact", str(history_file), "-o", str(out), "--window", "40000", "--ratio", "0.5"]
    assert main([*args, "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert not out.exists()
    assert captured.out.startswith("budget 20,000 tokens = window 40,000 x ratio 0.5\nplan: ")
    assert "\nsnapshot: " in captured.out and "{" not in captured.out
    assert main([*args, "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    rungs = [e["rung"] for e in plan["ledger"]]
    # the demo reads each file once: SPEC §5.8 elides none of it, the snapshot keeps it
    assert "snapshot" in rungs and rungs == sorted(rungs, key=["elide", "strip", "snapshot"].index)
    assert plan["budget"] == 20_000 and plan["dry_run"] and not out.exists()


def test_context_breakdown(history_file, capsys):
    """context: tokens by role, by kind, the largest messages, per-rung savings."""
    assert main(["context", str(history_file), "--budget", "20000", "--top", "3"]) == 0
    out = capsys.readouterr().out
    total = int(out.split(" tokens (estimate")[0].rsplit(" ", 1)[1].replace(",", ""))
    table = out.split("by content kind")[1].split("\n\n")[0].splitlines()[3:]
    assert sum(int(row.split()[-2].replace(",", "")) for row in table) == total
    for needle in (
        "by role",
        "by content kind",
        "tool results",
        "largest 3 messages",
        "what each rung would save",
        "elide",
        "snapshot",
        "over by",
    ):
        assert needle in out


def test_shake(tmp_path, history_file, capsys):
    """shake: only elision and image stripping."""
    out = tmp_path / "s.json"
    assert main(["shake", str(history_file), "-o", str(out)]) == 0
    text = out.read_text()
    assert "[elided: read_file" in text
    data = json.loads(text)
    msgs = data["messages"] if isinstance(data, dict) else data
    assert not any("x_glyphfold" in m for m in msgs)  # shake adds no snapshot
    assert find_violations(data) == []
    assert "shake:" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_writes_report(tmp_path, capsys):
    """demo: the built-in ~300k-token session to its budget, pages and index.html."""
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--budget", "12000"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["tokens_before"] > 250_000 and report["tokens_after"] <= 12_000
    pages = sorted((out / "pages").glob("page-*.png"))
    assert pages and len(pages) == len(report["pages"])
    html = (out / "index.html").read_text()
    assert "tokens before" in html and "pages/page-0001.png" in html and "The ledger" in html
    assert find_violations(json.loads((out / "compacted.json").read_text())) == []
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert main(["demo", "--out", str(blocked / "sub")]) == 2


def test_compact_provider_ready(tmp_path, history_file):
    """--provider-ready writes a history without x_glyphfold keys, still valid."""
    out = tmp_path / "send.json"
    args = ["compact", str(history_file), "-o", str(out), "--budget", "8000"]
    assert main([*args, "--provider-ready"]) == 0
    data = json.loads(out.read_text())
    msgs = data["messages"] if isinstance(data, dict) else data
    assert not any("x_glyphfold" in m for m in msgs)
    assert any(
        p.get("type") in ("image", "image_url")
        for m in msgs
        if isinstance(m.get("content"), list)
        for p in m["content"]
    )
    assert find_violations(data) == []
