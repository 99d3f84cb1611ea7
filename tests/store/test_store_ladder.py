"""A real ladder run stored with record_compaction (SPEC §5 + §6.6), on both backends."""

from __future__ import annotations

import json

from histories import openai_turn

import glyphfold
from glyphfold.compaction.ladder.ledger import ledger_to_json


def _long_turn(n: int) -> list[dict]:
    turn = openai_turn(n, tools=2)
    for m in turn:
        if m["role"] == "tool":
            m["content"] = m["content"] * 40  # old tool output worth eliding
    return turn


def test_ladder_run_is_stored_and_drops_checkpoints_it_trimmed(store):
    """Ledger JSON round-trips; replaced messages restore verbatim; the checkpoint drops."""
    conv = store.create_conversation()
    store.commit_turn(conv, _long_turn(0))
    early = store.checkpoint(conv, "early")
    for n in range(1, 12):
        store.commit_turn(conv, _long_turn(n))
    late = store.checkpoint(conv, "late")
    records = store.path_records(conv)
    result = glyphfold.compact(store.path(conv), budget=2500, profile="text-only")
    assert result.fits
    # elision keeps positions, so every rung's indices are indices into the stored path
    assert all(
        len(e.removed) == 0 or max(r.index for r in e.removed) < len(records) for e in result.ledger
    )
    replaced = sorted(
        {records[r.index].id for e in result.ledger for r in e.removed if r.dest == "trimmed"}
    )
    record = store.record_compaction(conv, result.ledger, [], replaced)
    assert record.ledger == json.loads(json.dumps(ledger_to_json(result.ledger)))
    assert store.compactions(conv)[0].ledger == record.ledger
    assert early.message_id in replaced and late.message_id not in replaced
    assert record.dropped_checkpoints == ("early",)
    by_id = {m.id: m.payload for m in records}
    assert store.restore_compaction(record.id) == [by_id[i] for i in replaced]
    assert store.rewind(conv, "late").to_message == late.message_id
