"""Schema versions, file-level failures and SQLite settings (SPEC §6.1, issue 6)."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from histories import openai_turn

from glyphfold.compaction.store import open_backend, open_store, schema
from glyphfold.errors import StoreError


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _make_v1_store(url: str) -> tuple[str, list[int]]:
    """Write a store exactly as schema version 1 left it, with one conversation."""
    backend = open_backend(url)
    try:
        with backend.write(schema_lock=True) as tx:
            schema.apply(tx.run, schema.MIGRATIONS[0], backend.dialect)
            tx.run("INSERT INTO glyphfold_meta (key, value) VALUES (?, ?)", ("schema_version", "1"))
            tx.run(
                "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                ("old-conv", "from v1", 1.0, 1.0),
            )
            parent, ids = None, []
            for depth, text in enumerate(["hello", "hi there"]):
                role = "user" if depth == 0 else "assistant"
                parent = tx.insert(
                    "INSERT INTO messages (conversation_id, parent_id, depth, role, turn_start, "
                    "ends_turn, tool_call_ids, tool_result_ids, tokens, payload, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        "old-conv",
                        parent,
                        depth,
                        role,
                        int(depth == 0),
                        depth,
                        "[]",
                        "[]",
                        5,
                        f'{{"role": "{role}", "content": "{text}"}}',
                        1.0,
                    ),
                )
                ids.append(parent)
            tx.run("UPDATE conversations SET tip_id = ? WHERE id = ?", (parent, "old-conv"))
            tx.run(
                "INSERT INTO checkpoints (conversation_id, label, message_id, created_at) "
                "VALUES (?, ?, ?, ?)",
                ("old-conv", "v1-label", parent, 1.0),
            )
    finally:
        backend.close()
    return "old-conv", ids


def test_older_schema_is_upgraded_in_place(store_url):
    """Opening a store written by an older version upgrades it; the data survives."""
    conv, ids = _make_v1_store(store_url)
    with open_store(store_url) as store:
        assert store.schema_version() == schema.SCHEMA_VERSION == 4
        assert store.path(conv) == [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi there"},
        ]
        store.commit_turn(conv, openai_turn(1))
        assert store.rewind(conv, "v1-label").to_message == ids[-1]
        assert store.record_compaction(conv, [], [], ids[:1]).dropped_checkpoints == ()
        assert store.check() == []


def test_newer_schema_is_refused_untouched(store_url, tmp_path):
    """A store from a newer glyphfold is refused with a clear error and not modified."""
    with open_store(store_url) as store:
        conv = store.create_conversation()
        store.commit_turn(conv, openai_turn(0))
    backend = open_backend(store_url)
    with backend.write() as tx:
        tx.run("UPDATE glyphfold_meta SET value = ? WHERE key = ?", ("99", "schema_version"))
    backend.close()
    db = tmp_path / "store.db"
    before = _digest(db) if db.exists() else None
    newer = rf"schema version 99, newer than .* \({schema.SCHEMA_VERSION}\)"
    with pytest.raises(StoreError, match=newer):
        open_store(store_url)
    if before is not None:
        assert _digest(db) == before
    backend = open_backend(store_url)
    with backend.read() as tx:
        assert tx.one("SELECT value FROM glyphfold_meta WHERE key = ?", ("schema_version",)) == (
            "99",
        )
    backend.close()


def test_corrupt_file_is_refused_untouched(tmp_path):
    """A file that is not a SQLite database -> StoreError, the file unchanged."""
    path = tmp_path / "garbage.db"
    path.write_bytes(bytes(range(256)) * 64)
    before = _digest(path)
    with pytest.raises(StoreError, match=r"not a usable SQLite database.*nothing was modified"):
        open_store(f"sqlite:///{path}")
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.db"]


def test_truncated_store_reports_problems(tmp_path):
    """A store file cut short is reported (on open, on read, or by check()), never silently."""
    path = tmp_path / "cut.db"
    with open_store(f"sqlite:///{path}") as store:
        conv = store.create_conversation()
        for n in range(60):
            store.commit_turn(conv, openai_turn(n, tools=3))
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(size // 2)
    with pytest.raises(StoreError), open_store(f"sqlite:///{path}") as store:
        assert len(store.path(conv)) == 60 * 5
        problems = store.check()
        if problems:
            raise StoreError("; ".join(problems))


def test_foreign_sqlite_database_is_refused(tmp_path):
    """A SQLite file of another application is not taken over."""
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    before = _digest(path)
    with pytest.raises(StoreError, match="not a glyphfold store"):
        open_store(f"sqlite:///{path}")
    assert _digest(path) == before


@pytest.mark.parametrize(("option", "expected"), [("", 2), ("?synchronous=normal", 1)])
def test_sqlite_runs_in_wal_with_documented_durability(tmp_path, option, expected):
    """SQLite uses WAL; synchronous=FULL (2) by default, NORMAL (1) on request."""
    with open_store(f"sqlite:///{tmp_path / 's.db'}{option}") as store:
        conn = store._backend._conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == expected


def test_default_store_lives_under_xdg_data_home(tmp_path, monkeypatch):
    """With no URL the store is $XDG_DATA_HOME/glyphfold/transcripts.db (dirs created)."""
    monkeypatch.delenv("GLYPHFOLD_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with open_store() as store:
        store.create_conversation()
    assert (tmp_path / "xdg" / "glyphfold" / "transcripts.db").is_file()
    monkeypatch.setenv("GLYPHFOLD_DB", f"sqlite:///{tmp_path / 'env.db'}")
    with open_store() as store:
        assert store.conversations() == []
    assert (tmp_path / "env.db").is_file()


def test_bare_path_opens_sqlite(tmp_path):
    """A plain file path (no scheme) is a SQLite store."""
    with open_store(tmp_path / "plain.db") as store:
        assert store.dialect == "sqlite"
        store.create_conversation()
    assert (tmp_path / "plain.db").is_file()
