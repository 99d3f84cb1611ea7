"""Stores that cannot be trusted or written: damaged pages, read-only media, newer schemas,
and upgrades of old stores holding what old versions could not index (issue 13).

Each gives one clear line and modifies nothing, on both backends where both apply.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from faults import (
    OLD_TEXT,
    damage_page,
    digest,
    execute,
    incompressible_ids,
    leftmost_leaf,
    old_store,
    read_only_dir,
    small_disk,
    wide_turn,
)
from histories import openai_turn

from glyphfold import cli
from glyphfold.compaction.store import open_store, schema
from glyphfold.errors import CorruptStoreError, StoreError

# -- damaged SQLite pages -----------------------------------------------------------------


def _store_with_history(path, turns: int = 60) -> str:
    with open_store(f"sqlite:///{path}") as store:
        conv = store.create_conversation(title="to be damaged")
        for n in range(turns):
            store.commit_turn(conv, openai_turn(n, tools=3))
    return conv


def test_damaged_page_is_one_line_and_import_writes_nothing(tmp_path, capsys):
    """A damaged page: every command says so in one line (no traceback), check() lists it,
    and import refuses to write into the damaged file (it wrote, spreading the damage)."""
    path = tmp_path / "store.db"
    conv = _store_with_history(path)
    damage_page(path, leftmost_leaf(path, "messages"))
    before = digest(path)
    (tmp_path / "h.json").write_text(json.dumps(openai_turn(99)), encoding="utf-8")
    url = f"sqlite:///{path}"
    for argv in (
        ["sessions", "--db", url],
        ["tree", "--db", url, conv],
        ["export", "--db", url, conv],
        ["import", "--db", url, str(tmp_path / "h.json")],
    ):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is damaged" in err and "nothing was written" in err
    assert digest(path) == before
    with open_store(url) as store:
        with pytest.raises(CorruptStoreError, match="nothing was written"):
            store.import_history(openai_turn(1))
        with pytest.raises(CorruptStoreError):
            store.load(store.dump(conv))
        problems = store.check()
    assert problems[0] == "sqlite: database disk image is malformed (the page check stopped there)"
    assert cli.main(["check", "--db", url]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}")
    assert out[1:] == [f"  {p}" for p in problems]
    assert digest(path) == before


def test_check_command_exit_codes(store_url, tmp_path, capsys):
    """`glyphfold check`: 0 sound, 1 inconsistent, 2 bad input."""
    with open_store(store_url) as store:
        conv = store.create_conversation()
        ids = store.commit_turn(conv, openai_turn(0))
    assert cli.main(["check", "--db", store_url]) == 0
    assert capsys.readouterr().out.strip().endswith("ok (1 conversation, 4 messages)")
    execute(store_url, "UPDATE conversations SET tip_id = ? WHERE id = ?", (ids[0], conv))
    assert cli.main(["check", "--db", store_url]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("1 problem") and f"tip {ids[0]} is not a turn boundary" in out[1]
    assert cli.main(["check", "--db", str(tmp_path / "missing.db")]) == 2
    assert not (tmp_path / "missing.db").exists()
    assert cli.main(["check", "--db", "mysql://x@y/z"]) == 2
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert cli.main(["check", "--db", str(tmp_path / "junk.db")]) == 2
    assert capsys.readouterr().err.count("\n") == 3


# -- read-only stores ----------------------------------------------------------------------


def test_store_on_read_only_media_reads_and_refuses_writes(tmp_path, capsys):
    """Read-only media: reads work, writes get one clear line (it was: "not a usable
    SQLite database"), nothing is modified."""
    folder = tmp_path / "media"
    folder.mkdir()
    conv = _store_with_history(folder / "store.db", turns=3)
    (tmp_path / "h.json").write_text(json.dumps(openai_turn(9)), encoding="utf-8")
    with read_only_dir(folder) as view:
        path = view / "store.db"
        before = digest(path)
        url = f"sqlite:///{path}"
        with open_store(url) as store:
            assert len(store.path(conv)) == 3 * 6
            assert store.check() == []
            with pytest.raises(StoreError, match=r"cannot be written.*nothing was modified"):
                store.commit_turn(conv, openai_turn(3))
        for argv in (["sessions"], ["tree", conv], ["export", conv], ["check"]):
            assert cli.main([argv[0], "--db", url, *argv[1:]]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert cli.main(["import", "--db", url, str(tmp_path / "h.json")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot be written" in err and "usable" not in err
        assert digest(path) == before
        assert sorted(p.name for p in view.iterdir()) == ["store.db"]


def test_read_only_postgresql_store_alike(pg_url, pg_admin_url):
    """The PostgreSQL counterpart: a read-only database reads, and refuses writes alike."""
    import psycopg

    with open_store(pg_url) as store:
        conv = store.create_conversation()
        store.commit_turn(conv, openai_turn(0))
    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
    with open_store(pg_url) as store:
        assert store.path(conv) == openai_turn(0)
        assert store.check() == []
        with pytest.raises(StoreError, match=r"cannot be written.*nothing was modified"):
            store.commit_turn(conv, openai_turn(1))
        with pytest.raises(StoreError, match="cannot be written"):
            store.import_history(openai_turn(2))


def test_full_disk_keeps_whole_turns(tmp_path):
    """The disk fills up mid-conversation: one line, the turn that did not fit is not
    there, every earlier turn is, and the store stays sound for reading."""
    with small_disk(tmp_path / "small") as disk:
        url = f"sqlite:///{disk / 'store.db'}"
        with open_store(url) as store:
            conv = store.create_conversation()
            committed = 0
            with pytest.raises(StoreError, match="disk is full") as info:
                for n in range(10_000):
                    store.commit_turn(conv, openai_turn(n, tools=3))
                    committed += 1
            assert "\n" not in str(info.value) and committed > 5
            with pytest.raises(StoreError, match="disk is full"):
                store.import_history([m for n in range(50) for m in openai_turn(n, tools=3)])
        with open_store(url) as store:
            whole = [m for n in range(committed) for m in openai_turn(n, tools=3)]
            assert store.path(conv) == whole
            assert len(store.conversations()) == 1
            assert store.check() == []


# -- a newer schema is refused untouched ----------------------------------------------------


def test_newer_schema_store_is_not_switched_to_wal(tmp_path):
    """A refused newer-schema store in rollback-journal mode stays byte for byte as it was
    (it was switched to WAL although the message said it was not modified)."""
    path = tmp_path / "newer.db"
    _store_with_history(path, turns=2)
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("UPDATE glyphfold_meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match=r"newer than .*not modified"):
        open_store(f"sqlite:///{path}")
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["newer.db"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


# -- upgrades of stores that old versions wrote ---------------------------------------------


def _cases(url: str) -> list[tuple[int, list[dict]]]:
    wide = wide_turn(incompressible_ids(80))
    if url.startswith("sqlite"):
        return [(2, wide), (3, wide)]
    # PostgreSQL: a v2 store could hold the wide message; v3 as shipped could not
    return [(2, wide), (3, openai_turn(0, tools=3))]


@pytest.mark.parametrize("case", [0, 1])
def test_old_store_holding_a_wide_message_is_upgraded(store_url, case):
    """v2 (and v3 as first shipped) stores upgrade to v4: the wide message stays readable,
    the old index is gone, digests and sources read back as they were written."""
    version, turn = _cases(store_url)[case]
    conv, _ = old_store(store_url, version, turn)
    with open_store(store_url) as store:
        assert store.schema_version() == schema.SCHEMA_VERSION == 4
        assert store.path(conv) == turn
        assert store.rewinds(conv)[0].digest == OLD_TEXT
        assert store.compactions(conv)[0].snapshot_sources == (OLD_TEXT,)
        store.commit_turn(conv, wide_turn(incompressible_ids(90)))
        assert store.check() == []
        with store._backend.read() as tx:
            if store.dialect == "sqlite":
                names = {r[0] for r in tx.all("SELECT name FROM sqlite_master")}
            else:
                names = {r[0] for r in tx.all("SELECT indexname FROM pg_indexes")}
        assert "messages_path" in names and "messages_walk" not in names
