"""Transcript store benchmarks: commit_turn throughput, resume/path latency at 10k messages.

Run: ``python -m pytest benchmarks/bench_store.py --benchmark-enable -p no:cacheprovider``
(PostgreSQL: ``$GLYPHFOLD_TEST_PG_URL`` or a throwaway cluster started here).
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path

import pytest

from glyphfold.compaction.store import open_store

_PGSERVER = Path(__file__).resolve().parents[1] / "tests" / "store" / "pgserver.py"
MESSAGES = 10_000
TURN_MESSAGES = 4


def _pgserver():
    spec = importlib.util.spec_from_file_location("glyphfold_bench_pgserver", _PGSERVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def turn(n: int) -> list[dict]:
    """A realistic 4-message turn (~1.5 KB): prompt, tool call, tool result, reply."""
    call = f"call_{n}"
    return [
        {"role": "user", "content": f"step {n}: run the tests and fix what fails"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "pytest -x -q"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": "F.." + "x" * 1200},
        {"role": "assistant", "content": f"test {n} fixed by adjusting the fixture"},
    ]


@pytest.fixture(scope="module")
def pg_admin():
    import psycopg

    url = os.environ.get("GLYPHFOLD_TEST_PG_URL")
    server = None
    if not url:
        server = _pgserver()
        try:
            url, root = server.start()
        except Exception as exc:
            pytest.skip(f"no PostgreSQL: {exc}")
    psycopg.connect(url).close()
    yield url
    if server is not None:
        server.stop(root)


@pytest.fixture(params=["sqlite-full", "sqlite-normal", "postgresql"])
def url(request, tmp_path):
    if request.param.startswith("sqlite"):
        sync = request.param.split("-")[1]
        yield f"sqlite:///{tmp_path / 'bench.db'}?synchronous={sync}"
        return
    import psycopg

    admin = request.getfixturevalue("pg_admin")
    name = f"gf_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin.rpartition("/")[0] + "/" + name
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_commit_turn(benchmark, url):
    """One 4-message turn appended in one transaction (compare-and-set on the tip)."""
    with open_store(url) as store:
        conv = store.create_conversation()
        for n in range(20):  # warm caches and the statement cache
            store.commit_turn(conv, turn(n))
        counter = iter(range(20, 10**9))
        benchmark.group = "store-commit"
        benchmark.extra_info.update(messages_per_turn=TURN_MESSAGES, backend=url.split(":")[0])
        benchmark.pedantic(
            lambda: store.commit_turn(conv, turn(next(counter))), rounds=300, iterations=1
        )


@pytest.fixture
def big(url):
    """A store holding one 10,000-message conversation (2,500 turns)."""
    with open_store(url) as store:
        conv = store.create_conversation()
        for n in range(MESSAGES // TURN_MESSAGES):
            store.commit_turn(conv, turn(n))
    with open_store(url) as store:
        yield store, conv


def test_resume_10k(benchmark, big):
    """resume(): most recent turns within a 32k-token budget out of 10,000 messages."""
    store, conv = big
    out = store.resume(conv, budget=32_000)
    benchmark.group = "store-resume"
    benchmark.extra_info.update(messages=MESSAGES, kept=len(out), budget=32_000)
    benchmark.pedantic(lambda: store.resume(conv, budget=32_000), rounds=30, warmup_rounds=2)


def test_path_10k(benchmark, big):
    """path(): all 10,000 messages root -> tip, decoded to wire dicts."""
    store, conv = big
    benchmark.group = "store-path"
    benchmark.extra_info.update(messages=MESSAGES)
    result = benchmark.pedantic(lambda: store.path(conv), rounds=10, warmup_rounds=1)
    assert len(result) == MESSAGES
