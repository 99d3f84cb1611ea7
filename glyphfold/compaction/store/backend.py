"""What a backend is: a connection that runs transactions, and the few dialect differences.

Backends (``sqlite.py``, ``postgres.py``) implement only this; every rule of the
session tree lives in the store's own modules, once, so the two cannot drift.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any


class Tx(ABC):
    """One open transaction; SQL uses ``?`` placeholders in every dialect."""

    @abstractmethod
    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; return the number of rows changed."""

    @abstractmethod
    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute an INSERT and return the new row's ``id``."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None


class Backend(ABC):
    """A database connection: transactions and the few dialect differences."""

    dialect: str
    #: suffix that row-locks a SELECT inside a write transaction ("" where the
    #: whole write transaction is already exclusive, as in SQLite)
    for_update: str = ""
    #: how long a write waits for another writer's lock before LockTimeoutError
    lock_timeout_s: float
    #: True when the store can only be read (read-only media, a read-only server):
    #: ``write`` then refuses up front and nothing is modified
    read_only: bool = False

    def on_schema_ok(self) -> None:
        """Called once the schema is known to be glyphfold's and not newer than this code.

        Only from then on may the backend change persistent settings of the store
        (SQLite's WAL mode): a refused store is left exactly as it was.
        """
        return None  # an optional hook: most backends have nothing to do

    @abstractmethod
    def read(self) -> AbstractContextManager[Tx]:
        """A consistent read-only snapshot."""

    @abstractmethod
    def write(self, *, schema_lock: bool = False) -> AbstractContextManager[Tx]:
        """One write transaction, committed on success and rolled back on error."""

    #: a query listing the names of the tables in the store's schema
    tables_sql: str

    def tables(self, tx: Tx | None = None) -> set[str]:
        """Names of the tables that exist (checked before anything is written)."""
        if tx is not None:
            return {r[0] for r in tx.all(self.tables_sql)}
        with self.read() as own:
            return {r[0] for r in own.all(self.tables_sql)}

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def where(self) -> str:
        """The store's location for messages (password redacted)."""
