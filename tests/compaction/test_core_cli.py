"""CLI: ``glyphfold validate`` and ``glyphfold trim`` (exit codes 0 / 1 / 2)."""

from __future__ import annotations

import json

from core_histories import render, simple_plan, snapshot

from glyphfold.cli import main
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.compaction.history.validate import validate_history


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj), encoding="utf-8")
    return str(p)


def test_validate_ok_and_violations(tmp_path, capsys):
    good = render(simple_plan(3), "anthropic")
    assert main(["validate", _write(tmp_path, "good.json", good)]) == 0
    assert "ok: anthropic" in capsys.readouterr().out
    bad = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "ghost", "content": "x"},
    ]
    assert main(["validate", "--json", _write(tmp_path, "bad.json", bad)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["violations"][0]["index"] == 1
    assert report["violations"][0]["rule"] == "orphan-result"


def test_validate_bad_input_exits_2(tmp_path, capsys):
    p = tmp_path / "broken.json"
    p.write_text("[{", encoding="utf-8")
    assert main(["validate", str(p)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.json")]) == 2
    mixed = [
        {"role": "tool", "tool_call_id": "x", "content": "r"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
    ]
    assert main(["validate", _write(tmp_path, "mixed.json", mixed)]) == 2
    assert "message 1" in capsys.readouterr().err


def test_trim_cli(tmp_path, capsys):
    """SPEC §2.3/2.6 from the command line: whole turns, event summary on stderr."""
    wire = render(simple_plan(10), "openai")
    src = _write(tmp_path, "h.json", wire)
    before = snapshot(wire)
    out = tmp_path / "out.json"
    assert main(["trim", src, "--max-turns", "3", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dropped 28 messages in 7 turns, kept 3 turns" in err
    trimmed = json.loads(out.read_text(encoding="utf-8"))
    validate_history(trimmed)
    assert len(segment_turns(trimmed).turns) == 3
    assert main(["trim", src, "--budget", "0"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == wire
    assert "nothing to trim" in captured.err
    assert main(["trim", src, "--recover"]) == 0
    assert "overflow_recovery" in capsys.readouterr().err
    one = _write(tmp_path, "one.json", render(simple_plan(1), "openai"))
    assert main(["trim", one, "--recover"]) == 1
    assert main(["trim", src, "--budget", "-5"]) == 2
    assert wire == before
