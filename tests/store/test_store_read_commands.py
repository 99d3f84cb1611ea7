"""Read commands leave a store's file as they found it; one damaged conversation does not hide
the others; ids SQLite cannot hold are a clear error (issue 21 item 15).

Backups and ``VACUUM INTO`` copies are rollback-journal files: opening one switched it to
WAL (the header's journal bytes and its change counter changed) while the command printed
"nothing was written".
"""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path

import pytest
from faults import damage_page, leftmost_leaf
from histories import openai_turn

from glyphfold import cli
from glyphfold.compaction.store import open_store
from glyphfold.errors import NotFoundError


def _header(path: Path) -> tuple[int, int, int]:
    """(write version, read version, change counter) of a SQLite file's header."""
    data = path.read_bytes()[:100]
    return data[18], data[19], struct.unpack(">I", data[24:28])[0]


def _two_conversations(path: Path) -> tuple[str, str]:
    """Conversation A (oldest rows: the damaged leaf) and B, in a rollback-journal copy."""
    live = path.with_name("live.db")
    with open_store(f"sqlite:///{live}") as store:
        a = store.create_conversation(title="damaged one")
        for n in range(60):
            store.commit_turn(a, openai_turn(n, tools=3))
        b = store.create_conversation(title="healthy one")
        for n in range(3):
            store.commit_turn(b, openai_turn(n))
    with sqlite3.connect(live) as conn:  # a backup: VACUUM INTO writes a rollback-journal file
        conn.execute("VACUUM INTO ?", (str(path),))
    assert _header(path)[:2] == (1, 1)  # rollback journal (2, 2 would be WAL)
    return a, b


@pytest.mark.parametrize("damaged", [False, True])
def test_read_commands_do_not_touch_a_rollback_journal_copy(tmp_path, capsys, damaged):
    path = tmp_path / "backup.db"
    a, _b = _two_conversations(path)
    if damaged:
        damage_page(path, leftmost_leaf(path, "messages"))
    before = path.read_bytes()
    url = f"sqlite:///{path}"
    for argv in (
        ["sessions", "--db", url],
        ["sessions", "--db", url, "--json"],
        ["tree", "--db", url, a],
        ["export", "--db", url, a],
        ["check", "--db", url],
    ):
        cli.main(argv)
        capsys.readouterr()
        assert _header(path)[:2] == (1, 1), f"{argv} switched the file to WAL"
        assert path.read_bytes() == before, f"{argv} wrote to the file"


def test_sessions_lists_the_healthy_conversation_when_another_is_damaged(tmp_path, capsys):
    path = tmp_path / "backup.db"
    a, b = _two_conversations(path)
    damage_page(path, leftmost_leaf(path, "messages"))
    url = f"sqlite:///{path}"
    assert cli.main(["sessions", "--db", url]) == 1
    out, err = capsys.readouterr()
    assert b[:12] in out and "healthy one" in out
    assert a[:12] in out and "damaged" in out
    assert "is damaged" in err and "glyphfold check" in err
    assert cli.main(["sessions", "--db", url, "--json"]) == 1

    rows = {c["id"]: c for c in json.loads(capsys.readouterr().out)["conversations"]}
    assert rows[b]["messages"] == sum(len(openai_turn(n)) for n in range(3))
    assert rows[b]["damaged"] is None and rows[b]["branches"] == 1
    assert "malformed" in rows[a]["damaged"]


@pytest.mark.parametrize("bad", [2**70, -(2**70), 2**63])
def test_ids_sqlite_cannot_hold_are_a_clear_error(tmp_path, capsys, bad):
    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        conv = store.create_conversation()
        store.commit_turn(conv, openai_turn(0))
        with pytest.raises(NotFoundError, match="64-bit"):
            store.get_message(bad)
        with pytest.raises(NotFoundError, match="64-bit"):
            store.branch(conv, bad)
    assert cli.main(["export", "--db", url, str(bad)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
