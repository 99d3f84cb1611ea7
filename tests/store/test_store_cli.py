"""``glyphfold tree`` / ``sessions`` / ``export`` as a newcomer runs them (issue 6)."""

from __future__ import annotations

import json

import pytest
from histories import openai_turn

from glyphfold import cli
from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.validate import validate_history
from glyphfold.compaction.store import open_store

MINE = ("tree", "sessions", "export", "import")


@pytest.fixture(autouse=True)
def _only_store_commands(monkeypatch):
    # other engineers' commands land separately; the parser imports every listed module
    monkeypatch.setattr(cli, "COMMANDS", {k: v for k, v in cli.COMMANDS.items() if k in MINE})


@pytest.fixture
def demo(store_url):
    """A conversation with a rewind, an abandoned branch, checkpoints and a compaction."""
    with open_store(store_url) as store:
        conv = store.create_conversation(title="fix the flaky test")
        t0 = store.commit_turn(conv, openai_turn(0, tools=2))
        store.checkpoint(conv, "before-refactor")
        store.commit_turn(conv, openai_turn(1, tools=3))
        store.rewind(conv, "before-refactor")
        store.commit_turn(conv, openai_turn(2, tag="retry"))
        store.checkpoint(conv, "retry-ok")
        store.record_compaction(conv, [{"rung": "snapshot"}], ["source"], t0)
        path = store.path(conv)
    return store_url, conv, path


def test_sessions_lists_conversations(demo, capsys):
    url, conv, path = demo
    assert cli.main(["sessions", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "1 conversation" in out
    row = next(line for line in out.splitlines() if line.startswith(conv[:12]))
    abandoned = 6  # the explored turn the rewind left behind
    assert "fix the flaky test" in row and "openai" in row
    assert f" {len(path) + abandoned} " in row


def test_tree_draws_branches_tip_checkpoints_and_compactions(demo, capsys):
    url, conv, _ = demo
    assert cli.main(["tree", "--db", url, conv[:8]]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"conversation {conv}")
    assert "2 branches" in lines[0]
    assert any(line.startswith("├─ current branch (1 turn)") for line in lines)
    assert any(line.startswith("└─ abandoned branch (1 turn)") for line in lines)
    assert "⚑ before-refactor (dropped by compaction 1)" in out
    assert "⚑ retry-ok" in out and "◀ tip" in out
    assert "✂ compaction 1" in out
    tip_line = next(line for line in lines if "◀ tip" in line)
    assert "step retry2" in tip_line
    assert "rewind to 'before-refactor'" in out and "read_file" in out


def test_export_prints_the_working_history(demo, capsys, tmp_path):
    url, conv, path = demo
    assert cli.main(["export", "--db", url, conv]) == 0
    assert json.loads(capsys.readouterr().out) == path
    assert cli.main(["export", "--db", url, conv, "--tree"]) == 0
    dump = json.loads(capsys.readouterr().out)
    with open_store(url) as store:
        assert store.path(store.load(dump)) == path


def test_cli_errors_are_one_line_and_create_nothing(tmp_path, capsys, store_url):
    missing = tmp_path / "nothing-here.db"
    assert cli.main(["sessions", "--db", str(missing)]) == 2  # as tree and export
    assert "no store at" in capsys.readouterr().err
    assert cli.main(["tree", "--db", f"sqlite:///{missing}"]) == 2
    assert cli.main(["export", "--db", str(missing), "abc"]) == 2
    assert not missing.exists()
    capsys.readouterr()
    with open_store(store_url) as store:
        store.create_conversation()
    assert cli.main(["export", "--db", store_url, "no-such-conversation"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no conversation 'no-such-conversation'" in err
    with open_store(store_url) as store:
        conv = store.conversations()[0].id
        store.commit_turn(conv, openai_turn(0))
    capsys.readouterr()
    assert cli.main(["export", "--db", store_url, conv, "--format", "anthropic"]) == 0
    converted = json.loads(capsys.readouterr().out)
    validate_history(converted)
    assert converted == convert_history(openai_turn(0), to="anthropic")
    assert cli.main(["tree", "--db", "mysql://x@y/z"]) == 2
    assert "unknown store URL scheme" in capsys.readouterr().err


def test_tree_folds_long_runs_and_survives_deep_chains(tmp_path, capsys):
    """A 1,500-turn conversation: folded by default (no recursion limit), --all shows all."""
    url = f"sqlite:///{tmp_path / 'long.db'}?synchronous=normal"
    with open_store(url) as store:
        conv = store.create_conversation()
        for n in range(1500):
            store.commit_turn(conv, openai_turn(n, tools=0))
            if n == 700:
                store.checkpoint(conv, "midway")
    assert cli.main(["tree", "--db", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) < 20
    assert any("⚑ midway" in line and "step 700:" in line for line in lines)
    folded = [int(line.split()[1].replace(",", "")) for line in lines if line.startswith("⋮")]
    assert sum(folded) == 1500 - 7
    assert cli.main(["tree", "--db", url, "--all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 1500


def test_import_round_trips_export_and_rejects_orphan_parents(demo, capsys, tmp_path):
    """`export --tree` then `import` gives the same tree; a dangling parent imports nothing."""
    url, conv, path = demo
    assert cli.main(["export", "--db", url, conv, "--tree"]) == 0
    dump = json.loads(capsys.readouterr().out)
    (tmp_path / "tree.json").write_text(json.dumps(dump), encoding="utf-8")
    assert cli.main(["import", "--db", url, str(tmp_path / "tree.json")]) == 0
    new = capsys.readouterr().out.split()[-1]
    with open_store(url) as store:
        assert store.path(new) == path
        assert len(store.branches(new)) == 2
        before = len(store.conversations())
    dump["messages"][2]["parent"] = 424242
    (tmp_path / "broken.json").write_text(json.dumps(dump), encoding="utf-8")
    assert cli.main(["import", "--db", url, str(tmp_path / "broken.json")]) == 2
    assert "names parent 424242" in capsys.readouterr().err
    (tmp_path / "plain.json").write_text(json.dumps(openai_turn(7)), encoding="utf-8")
    assert cli.main(["import", "--db", url, str(tmp_path / "plain.json"), "--title", "p"]) == 0
    capsys.readouterr()
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert cli.main(["import", "--db", url, str(tmp_path / "bad.json")]) == 2
    with open_store(url) as store:
        assert len(store.conversations()) == before + 1
