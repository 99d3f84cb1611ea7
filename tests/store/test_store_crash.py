"""Crash safety: SIGKILL a writer at random instants (SPEC §6.1)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from glyphfold.compaction.store import open_store

WRITER = Path(__file__).with_name("writer.py")
KILLS = 30


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
    env = {**os.environ, "PYTHONPATH": str(WRITER.parent)}
    turns = 0
    grew = 0
    for _ in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), "crash", url, conv],
            stdout=subprocess.PIPE,
            env=env,
        )
        try:
            assert proc.stdout.readline().strip() == b"ready"
            time.sleep(rng.uniform(0.0, 0.08))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        with open_store(url) as store:
            assert store.check() == []  # includes PRAGMA integrity_check on SQLite
            now = _assert_whole_turns(store, conv)
        assert now >= turns
        grew += now > turns
        turns = now
    assert turns > KILLS  # the writer made real progress between kills
    assert grew >= KILLS // 2
