"""Rows in and out: the SQL column lists, the JSON codec and the record builders.

Every concern module (tree, checkpoints, compactions, resume, transfer) reads
and writes message rows through these, so a column is spelled in one place.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from glyphfold.compaction.history.wire import join_envelope
from glyphfold.compaction.store.backend import Tx
from glyphfold.compaction.store.records import StoredMessage


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "argument not given" where None is a meaningful value (a tip of None: the empty path)
UNSET: Any = _Unset()

MESSAGE_COLUMNS = (
    "id, conversation_id, parent_id, depth, role, turn_start, ends_turn, "
    "tool_call_ids, tool_result_ids, tokens, payload, created_at"
)
_INSERT_MESSAGE = (
    f"INSERT INTO messages ({MESSAGE_COLUMNS.split(', ', 1)[1]}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
CONVERSATION_COLUMNS = (
    "c.id, c.title, c.format, c.tip_id, "
    "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id), "
    "c.created_at, c.updated_at, c.forked_from, c.forked_from_message"
)


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept as is (the stored form of payloads and id lists)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def ledger_default(value: Any) -> Any:
    """``json.dumps`` fallback for ledgers: ``to_dict()``, dataclasses, sets and tuples."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    msg = f"cannot store a {type(value).__name__} in a ledger; give JSON-compatible data"
    raise TypeError(msg)


def loads_many(texts: Sequence[str]) -> list[Any]:
    """Parse stored JSON texts in one C-level call (each is a complete value from ``dumps``)."""
    return json.loads("[" + ",".join(texts) + "]") if texts else []


def message(row: tuple[Any, ...]) -> StoredMessage:
    """A StoredMessage from one row of ``MESSAGE_COLUMNS``."""
    return StoredMessage(
        id=row[0],
        conversation_id=row[1],
        parent_id=row[2],
        depth=row[3],
        role=row[4],
        turn_start=bool(row[5]),
        ends_turn=bool(row[6]),
        tool_call_ids=tuple(json.loads(row[7])),
        tool_result_ids=tuple(json.loads(row[8])),
        tokens=row[9],
        payload=json.loads(row[10]),
        created_at=row[11],
    )


def messages(rows: Sequence[tuple[Any, ...]]) -> list[StoredMessage]:
    """StoredMessages from rows of ``MESSAGE_COLUMNS`` (three JSON parses in all)."""
    payloads = loads_many([r[10] for r in rows])
    calls = loads_many([r[7] for r in rows])
    results = loads_many([r[8] for r in rows])
    return [
        StoredMessage(
            r[0], r[1], r[2], r[3], r[4], bool(r[5]), bool(r[6]), tuple(c), tuple(t), r[9], p, r[11]
        )
        for r, p, c, t in zip(rows, payloads, calls, results, strict=True)
    ]


def insert_message(
    tx: Tx,
    conversation: str,
    parent: int | None,
    depth: int,
    columns: tuple[str, bool, bool, Sequence[str], Sequence[str], int],
    payload_json: str,
    now: float,
) -> int:
    """Insert one message row; ``columns`` is (role, turn_start, ends_turn, calls, results,
    tokens). Returns the new id."""
    role, turn_start, ends_turn, calls, results, tokens = columns
    return tx.insert(
        _INSERT_MESSAGE,
        (
            conversation,
            parent,
            depth,
            role,
            int(turn_start),
            int(ends_turn),
            dumps(list(calls)),
            dumps(list(results)),
            tokens,
            payload_json,
            now,
        ),
    )


def wire(fmt: str | None, system: Any, payloads: list[dict[str, Any]]) -> Any:
    """The wire history of stored payloads: a list, or the format's envelope dict with its
    system prompt under the format's own key (``system``, ``instructions``,
    ``system_instruction``)."""
    return join_envelope(fmt, payloads, system, with_system=system is not UNSET)
