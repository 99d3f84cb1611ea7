"""Conversation rows and the state a store handle carries (backend, bus, tips it has seen)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from glyphfold.compaction.history.events import EventBus
from glyphfold.compaction.store.backend import Backend, Tx
from glyphfold.compaction.store.records import Conversation
from glyphfold.compaction.store.rows import CONVERSATION_COLUMNS, UNSET
from glyphfold.errors import InputError, LockTimeoutError, NotFoundError


@dataclass
class Ctx:
    """One store handle's state, passed to every concern module."""

    backend: Backend
    bus: EventBus | None = None
    # conversation -> the tip this handle last saw: commit_turn's default expectation
    seen: dict[str, int | None] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return self.backend.where

    @contextmanager
    def write(self, subject: str) -> Iterator[Tx]:
        """A write transaction; a lock timeout is reported naming ``subject``."""
        try:
            with self.backend.write() as tx:
                yield tx
        except LockTimeoutError as exc:
            msg = (
                f"{subject} in {self.where}: another writer held the lock for more than "
                f"{self.backend.lock_timeout_s:g} s (lock_timeout_s); nothing was written — "
                "retry, or find the stuck writer"
            )
            raise LockTimeoutError(msg) from exc


def checked_title(title: Any) -> str | None:
    """A conversation title: a string without NUL (no backend stores one alike), or None."""
    if title is not None and not isinstance(title, str):
        msg = f"title must be a string or None, got {type(title).__name__}"
        raise InputError(msg)
    if title is not None and "\x00" in title:
        msg = f"title {title!r} contains a NUL character; remove it"
        raise InputError(msg)
    return title


def create(ctx: Ctx, title: str | None) -> str:
    """Create an empty conversation and return its id."""
    title = checked_title(title)
    now = time.time()
    with ctx.write("a new conversation") as tx:
        conversation_id = insert(tx, title, None, None, None, now)
    ctx.seen[conversation_id] = None
    return conversation_id


def insert(
    tx: Tx,
    title: str | None,
    fmt: str | None,
    system_json: str | None,
    imported_messages: int | None,
    now: float,
) -> str:
    """Insert an empty conversation row; ``imported_messages`` is what an import brings."""
    conversation_id = uuid.uuid4().hex
    tx.run(
        "INSERT INTO conversations (id, title, format, system_json, imported_messages, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (conversation_id, title, fmt, system_json, imported_messages, now, now),
    )
    return conversation_id


def list_all(ctx: Ctx) -> list[Conversation]:
    """Every conversation, most recently updated first."""
    with ctx.backend.read() as tx:
        rows = tx.all(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations c ORDER BY c.updated_at DESC, c.id"
        )
    return [Conversation(*r) for r in rows]


def titled(ctx: Ctx, title: str, limit: int) -> list[Conversation]:
    """Up to ``limit`` conversations with exactly this title, most recently updated first."""
    title = checked_title(title) or ""
    with ctx.backend.read() as tx:
        rows = tx.all(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.title = ? "
            "ORDER BY c.updated_at DESC, c.id LIMIT ?",
            (title, int(limit)),
        )
    return [Conversation(*r) for r in rows]


def get(ctx: Ctx, tx: Tx, conversation: str) -> Conversation:
    """The conversation row; ``NotFoundError`` when the id does not exist."""
    if not isinstance(conversation, str):
        msg = f"conversation id must be a string, got {type(conversation).__name__}"
        raise InputError(msg)
    row = None
    if "\x00" not in conversation:  # never an id; PostgreSQL would refuse the query
        row = tx.one(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?", (conversation,)
        )
    if row is None:
        msg = f"no conversation {conversation!r} in {ctx.where}; `glyphfold sessions` lists them"
        raise NotFoundError(msg)
    return Conversation(*row)


def lock(ctx: Ctx, tx: Tx, conversation: str) -> None:
    """Serialise writers on one conversation (PostgreSQL row lock; SQLite's write
    transaction is already exclusive), so pointer moves never interleave with a commit."""
    if ctx.backend.for_update:
        tx.all(
            "SELECT id FROM conversations WHERE id = ?" + ctx.backend.for_update, (conversation,)
        )


def resolve(ctx: Ctx, prefix: str) -> str:
    """The conversation id that is ``prefix`` or starts with it."""
    if not isinstance(prefix, str):
        msg = f"conversation id must be a string, got {type(prefix).__name__}"
        raise InputError(msg)
    if "\x00" in prefix:
        msg = f"no conversation {prefix!r} in {ctx.where}; `glyphfold sessions` lists them"
        raise NotFoundError(msg)
    with ctx.backend.read() as tx:
        if tx.one("SELECT id FROM conversations WHERE id = ?", (prefix,)):
            return prefix
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = tx.all(
            "SELECT id FROM conversations WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
            (pattern,),
        )
    if not rows:
        msg = f"no conversation {prefix!r} in {ctx.where}; `glyphfold sessions` lists them"
        raise NotFoundError(msg)
    if len(rows) > 1:
        ids = ", ".join(r[0][:12] for r in rows)
        msg = f"conversation prefix {prefix!r} is ambiguous ({ids}...); type more characters"
        raise InputError(msg)
    return rows[0][0]


def system(tx: Tx, conversation: str) -> Any:
    """The conversation's Anthropic top-level system prompt, or UNSET when it has none."""
    row = tx.one("SELECT system_json FROM conversations WHERE id = ?", (conversation,))
    return UNSET if row is None or row[0] is None else json.loads(row[0])
