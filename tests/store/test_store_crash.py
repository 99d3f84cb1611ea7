"""Crash safety: SIGKILL a writer at random instants (SPEC §6.1).

The writer commits turns, records compactions, imports histories and loads tree
dumps in a loop; after every kill each of them is either whole or absent.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import time
from collections import Counter

import pytest
from faults import OLD_TEXT, old_store
from writer import crash_turn, import_history_of

from glyphfold.compaction.store import open_backend, open_store

KILLS = 30
IMPORT_TURNS = 40  # an import long enough for kills to land inside it


def _dump_of(tag: str) -> dict:
    """A tree dump (two branches) that a load imports as conversation ``tag``."""
    history = import_history_of(tag, 6)
    messages = [
        {"id": i, "parent": i - 1 if i else None, "ends_turn": i % 2 == 0, "payload": m}
        for i, m in enumerate(history)
    ]
    messages.append({"id": 99, "parent": 4, "payload": {"role": "user", "content": f"{tag} alt"}})
    messages.append({"id": 100, "parent": 99, "payload": {"role": "assistant", "content": "b"}})
    return {
        "format": "glyphfold-transcript",
        "version": 1,
        "conversation": {"title": tag, "tip": len(history) - 1},
        "messages": messages,
        "checkpoints": [{"label": "mid", "message": 4}],
    }


def _write_forever(url: str, conv: str, ready, progress: str) -> None:
    """Append numbered 4-message turns, compact every second one, import a history or
    load a dump every third, until SIGKILLed (runs in the forked child). Each step is
    announced in ``progress`` first, so the parent knows what the kill interrupted."""
    log = open(progress, "a", buffering=1)  # noqa: SIM115 (lives until the kill)
    with open_store(url) as store:
        k = sum(1 for m in store.path_records(conv) if m.turn_start)
        ids = store.commit_turn(conv, crash_turn(k))  # progress every round, however loaded
        ready.set()
        while True:
            if k % 2 == 0:
                log.write("record_compaction\n")
                store.record_compaction(conv, {"k": k}, [f"compaction {k}", "x" * 4000], ids)
            if k % 3 == 0:
                log.write("import_history\n")
                store.import_history(import_history_of(f"crash {k}", IMPORT_TURNS), title=f"i{k}")
            if k % 3 == 1:
                log.write("load\n")
                store.load(_dump_of(f"crash {k}"))
            k += 1
            log.write("commit_turn\n")
            ids = store.commit_turn(conv, crash_turn(k))


def _assert_whole_turns(store, conv) -> int:
    """Every turn on the path is complete and numbered 0..K-1; returns K."""
    records = store.path_records(conv)
    assert len(records) % 4 == 0, f"half a turn stored: {len(records)} messages"
    for k in range(len(records) // 4):
        turn = records[4 * k : 4 * k + 4]
        assert turn[0].payload["content"].startswith(f"turn {k} ")
        assert turn[2].payload["tool_call_id"] == f"call_{k}"
        assert turn[3].payload["content"] == f"end {k}" and turn[3].ends_turn
    if records:
        assert store.tip(conv) == records[-1].id
    return len(records) // 4


def _assert_whole_compactions(store, conv) -> None:
    """Every recorded compaction has its ledger, both sources and its turn's 4 messages."""
    by_turn = {}
    for m in store.path_records(conv):
        if m.turn_start:
            k = int(m.payload["content"].split()[1])
        by_turn.setdefault(k, []).append(m.id)
    for rec in store.compactions(conv):
        k = rec.ledger["k"]
        assert rec.snapshot_sources == (f"compaction {k}", "x" * 4000)
        assert list(rec.replaced_message_ids) == by_turn[k]


def _assert_whole_imports(store, conv) -> int:
    """Every imported or loaded conversation holds all it brought; returns how many."""
    n = 0
    for c in store.conversations():
        if c.id == conv:
            continue
        n += 1
        if c.title.startswith("i"):
            k = int(c.title[1:])
            assert store.path(c.id) == import_history_of(f"crash {k}", IMPORT_TURNS)
        else:
            dump = _dump_of(c.title)
            assert store.path(c.id) == [m["payload"] for m in dump["messages"][:13]]
            assert len(store.branches(c.id)) == 2
            assert [cp.label for cp in store.checkpoints(c.id)] == ["mid"]
    return n


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigkill_leaves_last_complete_turn(backend, tmp_path, request):
    """SIGKILL at random points, 30 times: always whole turns, integrity_check ok."""
    url = (
        f"sqlite:///{tmp_path / 'crash.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    with open_store(url) as store:
        conv = store.create_conversation(title="crash")
    rng = random.Random(1234)
    # fork, not exec: the child starts writing in ~ms instead of paying a fresh
    # interpreter's imports, so the 30 kills stay cheap; no store is open here
    ctx = multiprocessing.get_context("fork")
    turns = 0
    grew = 0
    imported = 0
    progress = tmp_path / "progress.log"
    interrupted: Counter[str] = Counter()
    for _ in range(KILLS):
        ready = ctx.Event()
        progress.write_text("")
        proc = ctx.Process(
            target=_write_forever, args=(url, conv, ready, str(progress)), daemon=True
        )
        proc.start()
        try:
            assert ready.wait(timeout=60), "writer never started"
            time.sleep(rng.uniform(0.0, 0.08))
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
        assert proc.exitcode == -signal.SIGKILL
        steps = progress.read_text().split()
        interrupted[steps[-1] if steps else "commit_turn"] += 1
        with open_store(url) as store:
            assert store.check() == []  # includes PRAGMA integrity_check on SQLite
            now = _assert_whole_turns(store, conv)
            _assert_whole_compactions(store, conv)
            imported = _assert_whole_imports(store, conv)
        assert now >= turns
        grew += now > turns
        turns = now
    assert grew == KILLS  # the writer made progress before every kill
    assert turns >= KILLS
    request.node.user_properties.append(("imported_conversations", imported))
    # what the kills interrupted (in flight, or just finished): shown with -s
    print(f"\n{backend}: {KILLS} kills interrupted {dict(interrupted)}; {turns} turns, "
          f"{imported} imported conversations, each whole")  # fmt: skip


UPGRADE_KILLS = 8


def _upgrade(url: str, opening) -> None:
    """Open (and so upgrade) the store, then exit (runs in the forked child)."""
    opening.set()
    open_store(url).close()
    os._exit(0)


def _v2_copies(backend: str, tmp_path, request):
    """(url of a fresh copy of one v2 store holding 3,000 messages) -> callable per round."""
    turns = [crash_turn(k) for k in range(750)]
    if backend == "sqlite":
        template = tmp_path / "v2.db"
        old_store(f"sqlite:///{template}", 2, *turns)

        def fresh(i: int) -> str:
            copy = tmp_path / f"round{i}.db"
            shutil.copy(template, copy)
            return f"sqlite:///{copy}"

        return fresh
    import psycopg

    template_url = request.getfixturevalue("pg_url")
    old_store(template_url, 2, *turns)
    admin = request.getfixturevalue("pg_admin_url")
    template = template_url.rsplit("/", 1)[1]
    made: list[str] = []

    def fresh_pg(i: int) -> str:
        name = f"{template}_r{i}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        made.append(name)
        return template_url.rsplit("/", 1)[0] + "/" + name

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in made:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    request.addfinalizer(drop)
    return fresh_pg


def _upgraded_whole(url: str) -> None:
    with open_store(url) as store:
        assert store.schema_version() == 4
        assert store.check() == []
        assert len(store.path("old")) == 3000
        assert store.compactions("old")[0].snapshot_sources == (OLD_TEXT,)


def _version_untouched(url: str, backend: str) -> int:
    """The schema version after a kill; a v2 store must be exactly as it was."""
    raw = open_backend(url)
    try:
        with raw.read() as tx:
            (version,) = tx.one("SELECT value FROM glyphfold_meta WHERE key = ?",
                                ("schema_version",))  # fmt: skip
            if version == "2":  # rolled back: no index of v3/v4, every message there
                sql = (
                    "SELECT name FROM sqlite_master WHERE type = 'index'"
                    if backend == "sqlite"
                    else "SELECT indexname FROM pg_indexes"
                )
                names = {r[0] for r in tx.all(sql)}
                assert "messages_conversation" in names and "messages_path" not in names
                assert tx.one("SELECT COUNT(*) FROM messages") == (3000,)
    finally:
        raw.close()
    return int(version)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigkill_during_upgrade_leaves_old_or_new_schema(backend, tmp_path, request):
    """SIGKILL while a v2 store (3,000 messages) is upgraded to v4: the store is v2 as it
    was or v4 complete, never in between; it opens, and everything is still there.
    A store the kill left at v2 is killed again in the next round (a fresh copy only
    after an upgrade finished), so the rounds cost little."""
    fresh = _v2_copies(backend, tmp_path, request)
    copies = iter(range(10**6))
    timing = fresh(next(copies))
    start = time.monotonic()
    open_store(timing).close()
    upgrade_s = time.monotonic() - start  # how long an upgrade takes here: kill within it
    rng = random.Random(99)
    ctx = multiprocessing.get_context("fork")
    found: Counter[int] = Counter()
    url = fresh(next(copies))
    for _ in range(UPGRADE_KILLS):
        opening = ctx.Event()
        proc = ctx.Process(target=_upgrade, args=(url, opening), daemon=True)
        proc.start()
        assert opening.wait(timeout=60)
        time.sleep(rng.uniform(0.0, upgrade_s))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        version = _version_untouched(url, backend)
        found[version] += 1
        if version != 2:
            _upgraded_whole(url)
            url = fresh(next(copies))
    _upgraded_whole(url)  # a store killed mid-upgrade, maybe many times, still upgrades
    assert set(found) <= {2, 4}
    print(f"\n{backend}: upgrade takes {upgrade_s * 1000:.0f} ms; {UPGRADE_KILLS} kills left "
          f"schema versions {dict(found)}")  # fmt: skip
