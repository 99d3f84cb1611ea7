"""The transcript store and session tree (SQLite, PostgreSQL), SPEC §6.

``open_store(url)`` returns a :class:`Store` with the same API on both backends::

    store = open_store("sqlite:///agent.db")          # or postgresql://user@host/db
    conv = store.create_conversation(title="fix the flaky test")
    store.commit_turn(conv, turn_messages)           # one transaction, tip moves (CAS)
    store.checkpoint(conv, "before-refactor")
    ...                                              # explore: more commit_turn calls
    store.rewind(conv, "before-refactor")            # tip back + digest of the detour
    history = store.resume(conv, budget=100_000)     # after a restart: what to send

Every message row records its parent and each conversation its tip, so
``branch`` is a pointer move, ``fork`` copies root -> tip with new ids, and
``record_compaction`` keeps a ladder run's ledger and snapshot sources (and
drops checkpoints whose message it replaced). Writers race safely:
``commit_turn`` compares the tip with the one the handle last saw and raises
``ConflictError`` for the loser, writing nothing.
"""

from __future__ import annotations

import os

from glyphfold.checks import check_number
from glyphfold.compaction.history.events import CheckpointDropped, EventBus
from glyphfold.compaction.store.backend import Backend
from glyphfold.compaction.store.facade import Store
from glyphfold.compaction.store.records import (
    Branch,
    Checkpoint,
    CompactionRecord,
    Conversation,
    Rewind,
    StoredMessage,
)
from glyphfold.compaction.store.url import default_store_path, default_store_url, parse_store_url
from glyphfold.errors import StoreError

__all__ = [
    "Branch",
    "Checkpoint",
    "CheckpointDropped",
    "CompactionRecord",
    "Conversation",
    "Rewind",
    "Store",
    "StoredMessage",
    "default_store_path",
    "default_store_url",
    "open_backend",
    "open_store",
]


def open_store(
    url: str | os.PathLike[str] | None = None,
    *,
    bus: EventBus | None = None,
    lock_timeout_s: float | None = None,
    reading: bool = False,
) -> Store:
    """Open (creating or upgrading if needed) the store at ``url``.

    ``url`` is ``sqlite:///path.db``, ``postgresql://user@host/db``, a bare file
    path, or None for ``$GLYPHFOLD_DB`` / the default SQLite file under
    ``$XDG_DATA_HOME/glyphfold/`` (``~/.local/share/glyphfold/``). Events
    (:class:`CheckpointDropped`) go to ``bus`` or core's process-wide bus.
    ``lock_timeout_s`` (default: the URL's ``?lock_timeout_s=``, else 30) bounds
    how long a write waits behind another writer before ``LockTimeoutError``.
    ``reading=True`` (the read commands): the file's journal mode is left as it is (a
    backup or ``VACUUM INTO`` copy in rollback-journal mode is not switched to WAL,
    which would rewrite its header).
    """
    return Store(open_backend(url, lock_timeout_s=lock_timeout_s, reading=reading), bus=bus)


def open_backend(
    url: str | os.PathLike[str] | None = None,
    *,
    lock_timeout_s: float | None = None,
    reading: bool = False,
) -> Backend:
    """The raw backend (connection + transactions) behind a store URL, schema untouched."""
    if lock_timeout_s is not None:
        lock_timeout_s = check_number("lock_timeout_s (seconds)", lock_timeout_s, minimum=0.0)
    parsed = parse_store_url(url)
    if parsed.backend == "sqlite":
        from glyphfold.compaction.store.sqlite import SQLiteBackend

        return SQLiteBackend(parsed, lock_timeout_s=lock_timeout_s, reading=reading)
    if parsed.backend == "postgresql":
        from glyphfold.compaction.store.postgres import PostgresBackend

        return PostgresBackend(parsed, lock_timeout_s=lock_timeout_s)
    msg = f"no backend for {parsed.backend!r}; expected one of ['postgresql', 'sqlite']"
    raise StoreError(msg)
