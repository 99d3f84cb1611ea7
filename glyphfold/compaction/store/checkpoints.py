"""Checkpoints and rewind: labels on turn boundaries, and the way back to them (SPEC §6.6).

A rewind moves the tip back to a checkpoint and keeps a digest of the path it
left. A checkpoint dropped by a compaction is never re-pointed elsewhere.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from glyphfold.compaction.store import canon
from glyphfold.compaction.store import conversations as convs
from glyphfold.compaction.store.backend import Tx
from glyphfold.compaction.store.conversations import Ctx
from glyphfold.compaction.store.records import Checkpoint, Rewind, StoredMessage
from glyphfold.compaction.store.rows import UNSET, dumps, messages
from glyphfold.compaction.store.tree import message_in, path_rows
from glyphfold.errors import InputError, NotFoundError

#: labels are keys of an index, and no index holds unbounded user data
MAX_LABEL_CHARS = 200


def checked_label(label: Any) -> str:
    """A checkpoint label: non-empty, at most MAX_LABEL_CHARS, without NUL."""
    if not isinstance(label, str) or not label.strip():
        msg = f"checkpoint label must be a non-empty string, got {label!r}"
        raise InputError(msg)
    if len(label) > MAX_LABEL_CHARS:
        msg = f"checkpoint label is {len(label)} characters; at most {MAX_LABEL_CHARS}"
        raise InputError(msg)
    if "\x00" in label:
        msg = f"checkpoint label {label!r} contains a NUL character; remove it"
        raise InputError(msg)
    return label


def checkpoint(ctx: Ctx, conversation: str, label: str, message_id: Any) -> Checkpoint:
    """Label the tip (or ``message_id``, a turn boundary)."""
    label = checked_label(label)
    now = time.time()
    with ctx.write(f"conversation {conversation}") as tx:
        convs.lock(ctx, tx, conversation)
        conv = convs.get(ctx, tx, conversation)
        target = conv.tip_id if message_id is UNSET else message_id
        if target is not None and not message_in(tx, conversation, target).ends_turn:
            msg = f"message {target} is inside a turn; checkpoints label turn boundaries"
            raise InputError(msg)
        if tx.one(
            "SELECT 1 FROM checkpoints WHERE conversation_id = ? AND label = ?",
            (conversation, label),
        ):
            msg = f"checkpoint {label!r} already exists in conversation {conversation}"
            raise InputError(msg)
        tx.run(
            "INSERT INTO checkpoints (conversation_id, label, message_id, created_at) "
            "VALUES (?, ?, ?, ?)",
            (conversation, label, target, now),
        )
    return Checkpoint(conversation, label, target, now)


def list_checkpoints(ctx: Ctx, conversation: str) -> list[Checkpoint]:
    """Every checkpoint of the conversation, dropped ones included, oldest first."""
    with ctx.backend.read() as tx:
        convs.get(ctx, tx, conversation)
        rows = tx.all(
            "SELECT conversation_id, label, message_id, created_at, dropped_by "
            "FROM checkpoints WHERE conversation_id = ? ORDER BY created_at, label",
            (conversation,),
        )
    return [Checkpoint(*r) for r in rows]


def _target(tx: Tx, conversation: str, label: str) -> int | None:
    """The message checkpoint ``label`` marks; NotFoundError when unknown or dropped."""
    row = None
    if isinstance(label, str) and "\x00" not in label:  # never a label (see checked_label)
        row = tx.one(
            "SELECT message_id, dropped_by FROM checkpoints "
            "WHERE conversation_id = ? AND label = ?",
            (conversation, label),
        )
    if row is None:
        known = [
            r[0]
            for r in tx.all(
                "SELECT label FROM checkpoints WHERE conversation_id = ? "
                "AND dropped_by IS NULL ORDER BY label",
                (conversation,),
            )
        ]
        msg = (
            f"no checkpoint {label!r} in conversation {conversation}; "
            f"known: {', '.join(map(repr, known)) or 'none'}"
        )
        raise NotFoundError(msg)
    target, dropped_by = row
    if dropped_by is not None:
        msg = (
            f"checkpoint {label!r} was dropped: compaction {dropped_by} replaced its "
            "message, and a checkpoint is never moved elsewhere"
        )
        raise NotFoundError(msg)
    return target


def rewind(ctx: Ctx, conversation: str, label: str, digest: str | None) -> Rewind:
    """Move the tip back to checkpoint ``label`` and keep a digest of what was explored."""
    if digest is not None and not isinstance(digest, str):
        msg = f"digest must be a string or None, got {type(digest).__name__}"
        raise InputError(msg)
    now = time.time()
    with ctx.write(f"conversation {conversation}") as tx:
        convs.lock(ctx, tx, conversation)
        conv = convs.get(ctx, tx, conversation)
        target = _target(tx, conversation, label)
        old_path = messages(path_rows(tx, conversation, conv.tip_id))
        keep = {r[0] for r in path_rows(tx, conversation, target, columns="id")}
        abandoned = [m for m in old_path if m.id not in keep]
        text = digest if digest is not None else default_digest(label, abandoned, conv.format)
        tx.run(
            "UPDATE conversations SET tip_id = ?, updated_at = ? WHERE id = ?",
            (target, now, conversation),
        )
        ids = tuple(m.id for m in abandoned)
        rewind_id = tx.insert(
            "INSERT INTO rewinds (conversation_id, label, from_tip, to_message, digest, "
            "abandoned_ids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (conversation, label, conv.tip_id, target, dumps(text), dumps(list(ids)), now),
        )
    ctx.seen[conversation] = target
    return Rewind(rewind_id, conversation, label, conv.tip_id, target, text, ids, now)


def list_rewinds(ctx: Ctx, conversation: str) -> list[Rewind]:
    """Every rewind of the conversation with its digest, oldest first."""
    with ctx.backend.read() as tx:
        convs.get(ctx, tx, conversation)
        rows = tx.all(
            "SELECT id, conversation_id, label, from_tip, to_message, digest, abandoned_ids, "
            "created_at FROM rewinds WHERE conversation_id = ? ORDER BY id",
            (conversation,),
        )
    # digests are stored as JSON strings (schema v4): any text, NUL included, on both backends
    return [
        Rewind(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), tuple(json.loads(r[6])), r[7])
        for r in rows
    ]


def default_digest(label: str, abandoned: Sequence[StoredMessage], fmt: str | None) -> str:
    """What a rewind keeps when the caller gives no digest: the abandoned tool calls."""
    if not abandoned:
        return f"rewound to {label!r}: nothing had been explored since it"
    turns = sum(1 for m in abandoned if m.turn_start)
    calls = canon.tool_call_summaries([m.payload for m in abandoned], format=fmt)
    head = (
        f"rewound to {label!r}: the abandoned branch had {len(abandoned)} messages "
        f"in {max(turns, 1)} turn(s)"
    )
    if not calls:
        return head + " and made no tool calls"
    shown = calls[:20]
    more = f"; and {len(calls) - len(shown)} more" if len(calls) > len(shown) else ""
    return f"{head} and made {len(calls)} tool call(s): " + "; ".join(shown) + more
