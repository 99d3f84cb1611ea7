"""The transcript store and session tree (SQLite, PostgreSQL), SPEC §6.

``open_store(url)`` returns a :class:`Store` with the same API on both backends.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from glyphfold.compaction.store.base import Backend, Store
from glyphfold.compaction.store.records import (
    Branch,
    Checkpoint,
    CheckpointDropped,
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
    on_event: Callable[[object], None] | None = None,
) -> Store:
    """Open (creating or upgrading if needed) the store at ``url``.

    ``url`` is ``sqlite:///path.db``, ``postgresql://user@host/db``, a bare file
    path, or None for ``$GLYPHFOLD_DB`` / the default SQLite file under
    ``$XDG_DATA_HOME/glyphfold/`` (``~/.local/share/glyphfold/``).
    """
    return Store(open_backend(url), on_event=on_event)


def open_backend(url: str | os.PathLike[str] | None = None) -> Backend:
    """The raw backend (connection + transactions) behind a store URL, schema untouched."""
    parsed = parse_store_url(url)
    backends = {"sqlite": _sqlite, "postgresql": _postgres}
    try:
        make = backends[parsed.backend]
    except KeyError:
        msg = f"no backend for {parsed.backend!r}; expected one of {sorted(backends)}"
        raise StoreError(msg) from None
    return make(parsed)


def _sqlite(parsed):  # type: ignore[no-untyped-def]
    from glyphfold.compaction.store.sqlite import SQLiteBackend

    return SQLiteBackend(parsed)


def _postgres(parsed):  # type: ignore[no-untyped-def]
    from glyphfold.compaction.store.postgres import PostgresBackend

    return PostgresBackend(parsed)
