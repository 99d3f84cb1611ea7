"""Compactions in worker processes (issue 21, "Done when": small requests under load).

The ladder runs in ``compact_workers`` spawned processes; each conversation's compactor
stays in the proxy, so a compaction made in a worker is appended to, byte for byte, by
the next request, and the body sent upstream is the one the thread path sends.
"""

from __future__ import annotations

import json
import os

import httpx

from tests.serve.histories import openai_history

WINDOW = 20_000
MODEL = "fake-model"


def _post(srv, body: dict) -> httpx.Response:
    headers = {"authorization": "Bearer sk-pool"}
    return httpx.post(srv.url + "/v1/chat/completions", json=body, headers=headers, timeout=180)


def _loop(srv, fake, full: list) -> tuple[list[str], list[bytes]]:
    caches = []
    for n in (40, 42, 44):
        r = _post(srv, {"model": MODEL, "messages": full[:n]})
        assert r.status_code == 200, r.text
        caches.append(r.headers["x-glyphfold-cache"])
    return caches, [r.body for r in fake.accepted()]


def test_the_ladder_runs_in_workers_and_the_conversation_appends(serve, fake):
    full = openai_history(40, chars=4_000)
    pooled = serve(windows={MODEL: WINDOW}, compact_in="process", compact_workers=1)
    pool = pooled.proxy.pool
    caches, bodies = _loop(pooled, fake, full)
    assert caches[0] == "compact" and caches[1:] == ["append", "append"]
    workers = list(pool._executor()._processes)  # the pids of the spawned workers
    assert workers and os.getpid() not in workers
    first = json.loads(bodies[0])["messages"]
    second = json.loads(bodies[1])["messages"]
    assert json.dumps(second[: len(first)]) == json.dumps(first)  # appended byte for byte
    threaded = serve(windows={MODEL: WINDOW}, compact_in="thread")
    assert threaded.proxy.pool is None
    caches_t, bodies_t = _loop(threaded, fake, full)
    assert caches_t == caches and bodies_t == bodies  # the same bytes upstream either way


def test_compact_in_is_checked():
    import pytest

    from glyphfold.serve import ServeConfig

    with pytest.raises(ValueError, match="compact_in must be 'process' or 'thread'"):
        ServeConfig(compact_in="fork")


def test_a_dead_worker_fails_one_compaction_and_the_next_starts_new_workers():
    import signal

    import pytest

    from glyphfold.errors import GlyphfoldError
    from glyphfold.serve.workers import CompactionPool

    history = openai_history(12, chars=4_000)
    pool = CompactionPool(1)
    try:
        (pid,) = [f.result(timeout=120) for f in pool.warm_up()]
        os.kill(pid, signal.SIGKILL)  # as the OOM killer would
        with pytest.raises(GlyphfoldError, match="worker process died"):
            pool.compact(history, budget=4_000, profile="openai", format="openai")
        result = pool.compact(history, budget=4_000, profile="openai", format="openai")
        assert result.tokens_after <= 4_000 and result.history is None
    finally:
        pool.shutdown()
