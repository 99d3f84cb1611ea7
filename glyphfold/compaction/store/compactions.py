"""Stored ladder runs: ledger, snapshot sources, replaced messages (SPEC §5.3, §6.6).

Recording a compaction drops the checkpoints whose message it replaced: they are
marked, never moved, and each emits a :class:`CheckpointDropped` event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.events import CheckpointDropped, publish
from glyphfold.compaction.store import conversations as convs
from glyphfold.compaction.store.backend import Tx
from glyphfold.compaction.store.conversations import Ctx
from glyphfold.compaction.store.records import CompactionRecord
from glyphfold.compaction.store.rows import (
    MESSAGE_COLUMNS,
    dumps,
    ledger_default,
    loads_many,
    message,
)
from glyphfold.compaction.store.tree import message_in
from glyphfold.errors import InputError, NotFoundError


def _validated(
    ledger: Any, snapshot_sources: Iterable[str], replaced_message_ids: Iterable[int]
) -> tuple[str, list[str], list[int]]:
    """(ledger JSON, sources, replaced ids) checked before anything is locked."""
    sources = list(snapshot_sources)
    for i, s in enumerate(sources):
        if not isinstance(s, str):
            msg = f"snapshot source {i} is a {type(s).__name__}, expected str"
            raise InputError(msg)
    replaced = list(dict.fromkeys(replaced_message_ids))
    for r in replaced:
        check_int("a replaced message id", r)
    try:
        ledger_json = json.dumps(
            ledger, ensure_ascii=False, separators=(",", ":"), default=ledger_default
        )
    except (TypeError, ValueError) as exc:
        msg = f"ledger is not JSON-serialisable: {exc}"
        raise InputError(msg) from None
    return ledger_json, sources, replaced


def record(
    ctx: Ctx,
    conversation: str,
    ledger: Any,
    snapshot_sources: Iterable[str],
    replaced_message_ids: Iterable[int],
) -> CompactionRecord:
    """Store a ladder run; drop (mark) the checkpoints on the messages it replaced."""
    ledger_json, sources, replaced = _validated(ledger, snapshot_sources, replaced_message_ids)
    now = time.time()
    with ctx.write(f"conversation {conversation}") as tx:
        convs.lock(ctx, tx, conversation)
        conv = convs.get(ctx, tx, conversation)
        for r in replaced:
            message_in(tx, conversation, r)
        replaced_set = set(replaced)
        hit = sorted(
            (label, mid)
            for label, mid in tx.all(
                "SELECT label, message_id FROM checkpoints "
                "WHERE conversation_id = ? AND dropped_by IS NULL AND message_id IS NOT NULL",
                (conversation,),
            )
            if mid in replaced_set
        )
        dropped = tuple(label for label, _ in hit)
        compaction_id = tx.insert(
            "INSERT INTO compactions (conversation_id, tip_id, ledger, dropped_checkpoints, "
            "created_at) VALUES (?, ?, ?, ?, ?)",
            (conversation, conv.tip_id, ledger_json, dumps(list(dropped)), now),
        )
        _insert_parts(tx, compaction_id, sources, replaced)
        for label, _ in hit:
            tx.run(
                "UPDATE checkpoints SET dropped_by = ? WHERE conversation_id = ? AND label = ?",
                (compaction_id, conversation, label),
            )
    for label, mid in hit:
        publish(CheckpointDropped(conversation, label, mid, compaction_id), ctx.bus)
    return CompactionRecord(
        compaction_id,
        conversation,
        conv.tip_id,
        json.loads(ledger_json),
        tuple(sources),
        tuple(replaced),
        dropped,
        now,
    )


def _insert_parts(tx: Tx, compaction_id: int, sources: list[str], replaced: list[int]) -> None:
    for i, s in enumerate(sources):
        tx.run(
            "INSERT INTO compaction_sources (compaction_id, idx, source_text) VALUES (?, ?, ?)",
            (compaction_id, i, dumps(s)),  # JSON (schema v4): NUL stores alike on both
        )
    for r in replaced:
        tx.run(
            "INSERT INTO compaction_messages (compaction_id, message_id) VALUES (?, ?)",
            (compaction_id, r),
        )


def list_compactions(ctx: Ctx, conversation: str) -> list[CompactionRecord]:
    """Every stored compaction of the conversation, oldest first."""
    with ctx.backend.read() as tx:
        convs.get(ctx, tx, conversation)
        ids = [
            r[0]
            for r in tx.all(
                "SELECT id FROM compactions WHERE conversation_id = ? ORDER BY id",
                (conversation,),
            )
        ]
        return [load(ctx, tx, i) for i in ids]


def load(ctx: Ctx, tx: Tx, compaction_id: int) -> CompactionRecord:
    """One stored compaction by id (NotFoundError when there is none)."""
    row = tx.one(
        "SELECT id, conversation_id, tip_id, ledger, dropped_checkpoints, created_at "
        "FROM compactions WHERE id = ?",
        (compaction_id,),
    )
    if row is None:
        msg = f"no compaction {compaction_id} in {ctx.where}"
        raise NotFoundError(msg)
    sources = tx.all(
        "SELECT source_text FROM compaction_sources WHERE compaction_id = ? ORDER BY idx",
        (compaction_id,),
    )
    replaced = tx.all(
        "SELECT message_id FROM compaction_messages WHERE compaction_id = ? ORDER BY message_id",
        (compaction_id,),
    )
    return CompactionRecord(
        row[0],
        row[1],
        row[2],
        json.loads(row[3]),
        tuple(loads_many([s[0] for s in sources])),
        tuple(r[0] for r in replaced),
        tuple(json.loads(row[4])),
        row[5],
    )


def restore(ctx: Ctx, compaction_id: int) -> list[dict[str, Any]]:
    """The wire messages a compaction replaced, in order."""
    with ctx.backend.read() as tx:
        rec = load(ctx, tx, compaction_id)
        rows = [
            tx.one(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?", (m,))
            for m in rec.replaced_message_ids
        ]
    return [message(r).payload for r in rows if r is not None]
