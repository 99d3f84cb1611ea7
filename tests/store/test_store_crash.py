"""Crash safety: SIGKILL a writer at random instants (SPEC §6.1)."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time

import pytest
from glyphfold.compaction.store import open_store
from writer import crash_turn

KILLS = 30


def _write_forever(url: str, conv: str, ready) -> None:
    """Append numbered 4-message turns until SIGKILLed (runs in the forked child)."""
    with open_store(url) as store:
        k = sum(1 for m in store.path_records(conv) if m.turn_start)
        store.commit_turn(conv, crash_turn(k))  # progress every round, however loaded the box
        ready.set()
        while True:
            k += 1
            store.commit_turn(conv, crash_turn(k))


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
    for _ in range(KILLS):
        ready = ctx.Event()
        proc = ctx.Process(target=_write_forever, args=(url, conv, ready), daemon=True)
        proc.start()
        try:
            assert ready.wait(timeout=60), "writer never started"
            time.sleep(rng.uniform(0.0, 0.08))
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
        assert proc.exitcode == -signal.SIGKILL
        with open_store(url) as store:
            assert store.check() == []  # includes PRAGMA integrity_check on SQLite
            now = _assert_whole_turns(store, conv)
        assert now >= turns
        grew += now > turns
        turns = now
    assert grew == KILLS  # the writer made progress before every kill
    assert turns >= KILLS
