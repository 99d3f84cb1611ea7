"""Load: 8 writer processes x 500 turns into 50 conversations, with compactions recorded and
histories imported meanwhile (issues 6 and 13)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from writer import COMPACT_EVERY, IMPORT_EVERY, IMPORT_TURNS, import_history_of

from glyphfold.compaction.store import open_store

WRITER = Path(__file__).with_name("writer.py")
WORKERS = 8
TURNS = 500
CONVERSATIONS = 50


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_parallel_writers_lose_and_duplicate_nothing(backend, tmp_path, request):
    """No lost or duplicated turn: counted, and every parent chain is intact."""
    url = (
        f"sqlite:///{tmp_path / 'load.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    with open_store(url) as store:
        convs = [store.create_conversation(title=f"load {i}") for i in range(CONVERSATIONS)]
    # keep the caller's PYTHONPATH: a checkout run without an install finds glyphfold there
    paths = [str(WRITER.parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), "load", url, str(w), str(TURNS), str(w), *convs],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for w in range(WORKERS)
    ]
    outputs = [p.communicate(timeout=400) for p in procs]
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err.decode()[-2000:]
        assert out.startswith(b"conflicts ")
    conflicts = sum(int(out.split()[1]) for out, _ in outputs)
    request.node.user_properties.append(("conflicts_retried", conflicts))
    print(f"\n{backend}: {WORKERS} writers x {TURNS} turns, {conflicts} conflicts retried")
    markers: Counter[str] = Counter()
    with open_store(url) as store:
        assert store.check() == []
        total = 0
        for conv in convs:
            records = store.path_records(conv)
            total += len(records)
            assert store.conversation(conv).message_count == len(records)  # no stray rows
            for k, (user, reply) in enumerate(zip(records[::2], records[1::2], strict=True)):
                assert user.parent_id == (records[2 * k - 1].id if k else None)
                assert reply.parent_id == user.id
                assert reply.payload["content"] == "ack " + user.payload["content"]
                markers[user.payload["content"]] += 1
        _assert_compactions_and_imports(store, convs)
    expected = {f"w{w} t{i}" for w in range(WORKERS) for i in range(TURNS)}
    assert set(markers) == expected  # nothing lost
    assert max(markers.values()) == 1  # nothing duplicated
    assert total == WORKERS * TURNS * 2


def _assert_compactions_and_imports(store, convs) -> None:
    """Every compaction names the turn it was recorded for; every import is whole."""
    recorded = set()
    for conv in convs:
        for rec in store.compactions(conv):
            (source,) = rec.snapshot_sources
            assert source == f"w{rec.ledger['w']} t{rec.ledger['t']}"
            user, reply = (store.get_message(m) for m in rec.replaced_message_ids)
            assert user.conversation_id == reply.conversation_id == conv
            assert user.payload["content"] == source
            recorded.add(source)
    compacted = range(0, TURNS, COMPACT_EVERY)
    assert recorded == {f"w{w} t{i}" for w in range(WORKERS) for i in compacted}
    imports = {c.title: c for c in store.conversations() if c.id not in set(convs)}
    tags = {f"w{w} i{i}" for w in range(WORKERS) for i in range(0, TURNS, IMPORT_EVERY)}
    assert set(imports) == tags
    for tag, conv in imports.items():
        assert store.path(conv.id) == import_history_of(tag, IMPORT_TURNS)
