"""Hostile input against the store, the same suite on SQLite and PostgreSQL (issue 13).

Big tool-call lists, NUL characters, hung writers, crashes in the middle of an
import, edited parent pointers: each gives the same clear outcome on both
backends, and ``check()`` finds every inconsistency it can leave behind.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
from faults import execute, hung_writer, incompressible_ids, wide_turn
from histories import openai_turn

from glyphfold.compaction.store import open_store
from glyphfold.errors import (
    CorruptStoreError,
    InputError,
    LockTimeoutError,
    NotFoundError,
    StoreError,
)

SYSTEM = {"role": "system", "content": "You are a careful coding agent."}


# -- no index holds unbounded user data ------------------------------------------


def test_message_with_many_tool_calls_is_stored(store):
    """80 parallel calls (~3.6 KB of ids) and one 3,000-char id: stored on both backends."""
    conv = store.create_conversation()
    wide = wide_turn(incompressible_ids(80))
    long_id = wide_turn(incompressible_ids(1, chars=3000))
    store.commit_turn(conv, wide)
    store.commit_turn(conv, long_id)
    assert store.path(conv) == wide + long_id
    assert store.resume(conv, budget=10**6) == wide + long_id
    records = store.path_records(conv)
    assert len(records[1].tool_call_ids) == 80
    assert store.check() == []


def test_checkpoint_labels_are_bounded(store):
    """A label is an index key: 200 characters at most, the same error on both backends."""
    conv = store.create_conversation()
    store.commit_turn(conv, openai_turn(0))
    longest = "".join(incompressible_ids(5))[:200]  # 200 incompressible characters
    store.checkpoint(conv, longest)
    assert store.rewind(conv, longest).label == longest
    with pytest.raises(InputError, match="at most 200"):
        store.checkpoint(conv, longest + "x")
    assert [c.label for c in store.checkpoints(conv)] == [longest]


def _indexed_columns(store) -> dict[str, set[str]]:
    backend = store._backend
    with backend.read() as tx:
        if store.dialect == "sqlite":
            names = [r[0] for r in tx.all("SELECT name FROM sqlite_master WHERE type = 'index'")]
            return {n: {r[2] for r in tx.all(f"PRAGMA index_info('{n}')")} for n in names}
        rows = tx.all(
            "SELECT i.relname, a.attname FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey) "
            "JOIN pg_namespace s ON s.oid = t.relnamespace WHERE s.nspname = current_schema()"
        )
    out: dict[str, set[str]] = {}
    for index, column in rows:
        out.setdefault(index, set()).add(column)
    return out


def test_no_index_holds_unbounded_user_data(store):
    """Only ids, numbers, roles and bounded labels are index keys (PostgreSQL's 2,704 bytes)."""
    unbounded = {
        "payload", "tool_call_ids", "tool_result_ids", "title", "system_json", "digest",
        "source_text", "ledger", "abandoned_ids", "dropped_checkpoints",
    }  # fmt: skip
    indexed = _indexed_columns(store)
    assert "messages_path" in indexed
    assert {i: c & unbounded for i, c in indexed.items() if c & unbounded} == {}


# -- hostile strings are data -----------------------------------------------------------

HOSTILE = "x'); DROP TABLE messages; -- \" ' % _ \\ ? %s $1 ;"


def test_hostile_strings_are_only_data(store):
    """SQL in titles, labels, ids, ledgers and message text is stored as text, never run."""
    conv = store.create_conversation(title=HOSTILE)
    turn = [{"role": "user", "content": HOSTILE}, {"role": "assistant", "content": HOSTILE}]
    ids = store.commit_turn(conv, turn)
    store.checkpoint(conv, HOSTILE)
    store.record_compaction(conv, {HOSTILE: HOSTILE}, [HOSTILE], ids[:1])
    store.commit_turn(conv, openai_turn(1))
    assert store.rewind(conv, HOSTILE, digest=HOSTILE).digest == HOSTILE
    for prefix in (HOSTILE, "%", "_", "\\"):
        with pytest.raises(NotFoundError):
            store.resolve(prefix)
    assert store.conversation(conv).title == HOSTILE
    assert store.path(conv) == turn
    assert store.compactions(conv)[0].ledger == {HOSTILE: HOSTILE}
    assert store.check() == []


# -- NUL characters -----------------------------------------------------------------


def test_nul_characters_behave_alike(store):
    """NUL round-trips in messages, ledgers, snapshot sources and digests; ids, titles and
    labels with NUL get the same clear error on both backends, and nothing is written."""
    nul = "before\x00after"
    conv = store.create_conversation(title="nul")
    turn = [{"role": "user", "content": nul}, {"role": "assistant", "content": "ok " + nul}]
    ids = store.commit_turn(conv, turn)
    store.checkpoint(conv, "cp")
    assert store.path(conv) == turn
    rec = store.record_compaction(conv, {"note": nul}, [nul, "plain"], ids[:1])
    assert store.compaction(rec.id).snapshot_sources == (nul, "plain")
    assert store.compaction(rec.id).ledger == {"note": nul}
    store.commit_turn(conv, openai_turn(1))
    store.checkpoint(conv, "cp2", message_id=ids[-1])
    assert store.rewind(conv, "cp2", digest=nul).digest == nul
    assert store.rewinds(conv)[0].digest == nul
    before = (len(store.conversations()), len(store.checkpoints(conv)))
    with pytest.raises(InputError, match="NUL"):
        store.create_conversation(title=nul)
    with pytest.raises(InputError, match="NUL"):
        store.checkpoint(conv, nul)
    with pytest.raises(InputError, match="NUL"):
        store.import_history(openai_turn(2), title=nul)
    with pytest.raises(NotFoundError, match="no conversation"):
        store.resolve(nul)
    with pytest.raises(NotFoundError, match="no conversation"):
        store.path(nul)
    with pytest.raises(NotFoundError, match="no checkpoint"):
        store.rewind(conv, nul)
    assert (len(store.conversations()), len(store.checkpoints(conv))) == before
    assert store.check() == []


# -- lock timeout -------------------------------------------------------------------


def _in_thread(fn, timeout_s: float):
    """Run ``fn`` in a thread; (result or exception, seconds) — fails if it hangs."""
    out: list = []

    def target():
        try:
            out.append(fn())
        except Exception as exc:  # returned to the test
            out.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    worker.start()
    worker.join(timeout_s)
    assert not worker.is_alive(), f"still waiting after {timeout_s} s: no lock timeout"
    return out[0], time.monotonic() - start


@pytest.mark.parametrize("via", ["keyword", "url"])
def test_writer_behind_a_hung_writer_times_out(store_url, via):
    """A hung writer holds the lock: the next write fails after lock_timeout_s with one
    error naming the conversation, writes nothing, and works again once the lock is free."""
    with open_store(store_url) as store:
        conv = store.create_conversation()
        store.commit_turn(conv, openai_turn(0))
    if via == "keyword":
        opened = open_store(store_url, lock_timeout_s=0.5)
    else:
        opened = open_store(store_url + ("&" if "?" in store_url else "?") + "lock_timeout_s=0.5")
    with opened as store, hung_writer(store_url, conv):
        for write in (
            lambda: store.commit_turn(conv, openai_turn(1)),
            lambda: store.checkpoint(conv, "cp"),
            lambda: store.record_compaction(conv, [], ["src"], []),
        ):
            result, seconds = _in_thread(write, timeout_s=20)
            assert isinstance(result, LockTimeoutError), result
            assert f"conversation {conv}" in str(result) and "0.5 s" in str(result)
            assert "\n" not in str(result)
            assert 0.4 < seconds < 10
    with open_store(store_url) as store:
        assert len(store.path(conv)) == len(openai_turn(0))
        assert store.checkpoints(conv) == [] and store.compactions(conv) == []
        store.commit_turn(conv, openai_turn(1))


def test_lock_timeout_is_validated():
    with pytest.raises(InputError, match="lock_timeout_s"):
        open_store("sqlite:///:memory:", lock_timeout_s=-1)
    with pytest.raises(StoreError, match="lock_timeout_s"):
        open_store("sqlite:///x.db?lock_timeout_s=soon")


# -- imports are atomic -------------------------------------------------------------


class _Crash(BaseException):
    """Stands for SIGKILL: not an Exception, so no handler of the store swallows it."""


def _crash_after(store, inserts: int) -> None:
    """Make the store's backend die after ``inserts`` INSERT statements."""
    backend = store._backend
    write = backend.write
    count = [0]

    class Dying:
        def __init__(self, tx):
            self._tx = tx

        def __getattr__(self, name):
            return getattr(self._tx, name)

        def insert(self, sql, params=()):
            count[0] += 1
            if count[0] > inserts:
                raise _Crash
            return self._tx.insert(sql, params)

    import contextlib

    @contextlib.contextmanager
    def dying_write(**kw):
        with write(**kw) as tx:
            yield Dying(tx)

    backend.write = dying_write


def test_import_is_one_transaction(store_url):
    """A crash in the middle of an import leaves no conversation at all (it was: the
    first turns, which check() called consistent)."""
    history = [SYSTEM, *openai_turn(0), *openai_turn(1), *openai_turn(2)]
    with open_store(store_url) as store:
        _crash_after(store, len(history) - 3)
        with pytest.raises(_Crash):
            store.import_history(history, title="half")
    with open_store(store_url) as store:
        assert store.conversations() == []
        assert store.check() == []
        conv = store.import_history(history, title="whole")
        assert store.path(conv) == history
        assert [m.ends_turn for m in store.path_records(conv)].count(True) == 3


def test_check_finds_a_half_imported_conversation(store_url):
    """An imported conversation that lost its last turn (an old crashed import, an edit)."""
    history = [*openai_turn(0), *openai_turn(1)]
    with open_store(store_url) as store:
        conv = store.import_history(history)
        records = store.path_records(conv)
        assert store.check() == []
    first_turn = len(openai_turn(0))
    execute(store_url, "UPDATE conversations SET tip_id = ? WHERE id = ?",
            (records[first_turn - 1].id, conv))  # fmt: skip
    for r in reversed(records[first_turn:]):
        execute(store_url, "DELETE FROM messages WHERE id = ?", (r.id,))
    with open_store(store_url) as store:
        (problem,) = store.check()
        assert f"conversation {conv}" in problem and "half-imported" in problem
        assert f"holds {first_turn} messages but its import wrote {len(history)}" in problem


# -- parent-pointer cycles ------------------------------------------------------------

_CYCLE_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a loop must not eat the box
    from glyphfold import cli
    url, conv = sys.argv[1:]
    for argv in (["export", conv], ["export", "--tree", conv], ["tree", conv], ["sessions"]):
        code = cli.main([argv[0], "--db", url, *argv[1:]])
        print("exit", argv[0], code, flush=True)
    """
)


def test_parent_cycle_is_reported_not_walked(store_url):
    """An edited store whose parent pointers loop: export/tree/sessions stop with one line
    (they looped with memory growing), the library raises CorruptStoreError, check() names it."""
    with open_store(store_url) as store:
        conv = store.create_conversation()
        first = store.commit_turn(conv, openai_turn(0))
        store.commit_turn(conv, openai_turn(1))
        last = store.commit_turn(conv, openai_turn(2))
    execute(store_url, "UPDATE messages SET parent_id = ? WHERE id = ?", (last[-1], first[0]))
    proc = subprocess.run(
        [sys.executable, "-c", _CYCLE_SCRIPT, store_url, conv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.split("\n")[:4] == [
        "exit export 2", "exit export 2", "exit tree 2", "exit sessions 2"
    ], proc.stderr[-2000:]  # fmt: skip
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 4 and "Traceback" not in proc.stderr
    assert all("parent pointers form a cycle" in e and conv in e for e in errors)
    with open_store(store_url) as store:
        for call in (store.path, store.export, store.branches, store.dump):
            with pytest.raises(CorruptStoreError, match="cycle"):
                call(conv)
        problems = store.check()
    assert any(f"conversation {conv}: parent pointers form a cycle of" in p for p in problems)


# -- check() finds what it can be given -------------------------------------------------


def test_check_finds_each_inconsistency(store_url):
    """Each edit a bug or a hand could make is one problem line naming what is wrong."""
    with open_store(store_url) as store:
        a = store.create_conversation()
        b = store.create_conversation()
        a_ids = store.commit_turn(a, openai_turn(0, tools=2))
        store.checkpoint(a, "cp")
        b_ids = store.commit_turn(b, openai_turn(1))
        store.record_compaction(b, [], [], b_ids[:1])
        assert store.check() == []
    mid_turn = a_ids[1]
    execute(store_url, "UPDATE conversations SET tip_id = ? WHERE id = ?", (mid_turn, a))
    execute(store_url, "UPDATE checkpoints SET message_id = ? WHERE label = 'cp'", (b_ids[-1],))
    execute(store_url, "UPDATE compaction_messages SET message_id = ?", (a_ids[0],))
    execute(store_url, "UPDATE messages SET parent_id = ? WHERE id = ?", (a_ids[0], b_ids[1]))
    with open_store(store_url) as store:
        problems = store.check()
    expected = [
        f"conversation {a}: tip {mid_turn} is not a turn boundary it owns",
        f"conversation {a}: checkpoint 'cp' marks {b_ids[-1]}, which is not a turn boundary",
        f"replaced message {a_ids[0]} is not in its conversation",
        f"message {b_ids[1]}: bad parent {a_ids[0]}",
        f"message {b_ids[0]} (conversation {b}): a branch ends inside a turn",
    ]
    for text in expected:
        assert any(text in p for p in problems), (text, problems)
    assert len(problems) == len(expected)
