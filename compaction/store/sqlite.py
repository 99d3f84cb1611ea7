"""SQLite backend: one file, WAL mode, ``synchronous=FULL`` by default.

Durability decision: FULL. In WAL mode NORMAL never corrupts the file but may
lose the last committed turns on power loss or an OS crash; FULL fsyncs the WAL
at every commit so a committed turn survives those too. A commit happens once
per turn, seconds apart behind a model call, so the extra fsync (sub-ms to a few
ms) is noise next to the turn itself. ``?synchronous=normal`` in the URL trades
that guarantee for throughput (e.g. bulk imports).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from glyphfold.compaction.store.backend import Backend, Tx
from glyphfold.compaction.store.url import StoreURL

from glyphfold.errors import StoreError

DEFAULT_TIMEOUT_S = 30.0
_BUSY_TIMEOUT_MS = 5


class _SQLiteTx(Tx):
    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self._conn = conn
        self._where = where

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with _errors(self._where):
            return self._conn.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        with _errors(self._where):
            return self._conn.execute(sql, params).rowcount

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        with _errors(self._where):
            return self._conn.execute(sql + " RETURNING id", params).fetchone()[0]


@contextmanager
def _errors(where: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            msg = f"{where} stayed locked by another writer ({text}); retry or raise timeout_s"
        else:
            msg = f"{where}: {text} (is it a glyphfold SQLite store?)"
        raise StoreError(msg) from exc


class SQLiteBackend(Backend):
    """A SQLite file (or ``:memory:``) opened in WAL mode."""

    dialect = "sqlite"
    tables_sql = "SELECT name FROM sqlite_master WHERE type = 'table'"

    def __init__(self, url: StoreURL) -> None:
        self._path = url.target
        timeout_s = float(url.options.get("timeout_s", DEFAULT_TIMEOUT_S))
        self._timeout_s = timeout_s
        synchronous = url.options.get("synchronous", "full").upper()
        if self._path != ":memory:":
            path = Path(self._path).expanduser()
            if path.is_dir():
                msg = f"{path} is a directory; give a file path such as sqlite:///{path}/store.db"
                raise StoreError(msg)
            if not path.parent.exists():
                if not url.is_default:
                    msg = f"directory {path.parent} does not exist (store URL sqlite:///{path})"
                    raise StoreError(msg)
                path.parent.mkdir(parents=True, exist_ok=True)
            self._path = str(path)
        try:
            self._conn = sqlite3.connect(
                self._path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            msg = f"cannot open SQLite store {self._path}: {exc}"
            raise StoreError(msg) from exc
        try:
            # read first: a corrupt or foreign file fails here, before anything is written
            self._conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            msg = (
                f"{self._path} is not a usable SQLite database ({exc}); "
                "nothing was modified — point --db at another file"
            )
            raise StoreError(msg) from exc
        self._tables = self._list_tables()
        with _errors(self.where):
            if self._tables <= {"sqlite_sequence"} or "glyphfold_meta" in self._tables:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # short: BEGIN IMMEDIATE retries itself (see _begin_immediate); other
            # statements in WAL mode rarely wait at all
            self._conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")

    def _list_tables(self) -> set[str]:
        rows = self._conn.execute(self.tables_sql)
        return {r[0] for r in rows.fetchall()}

    @property
    def where(self) -> str:
        return f"SQLite store {self._path}"

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with _errors(self.where):
            self._conn.execute("BEGIN")
        try:
            yield _SQLiteTx(self._conn, self.where)
        finally:
            self._conn.execute("COMMIT")

    @contextmanager
    def write(self, *, schema_lock: bool = False) -> Iterator[Tx]:
        # IMMEDIATE takes the write lock up front: reads inside the transaction
        # (the tip compare-and-set) cannot be invalidated by another writer
        self._begin_immediate()
        try:
            yield _SQLiteTx(self._conn, self.where)
            with _errors(self.where):
                self._conn.execute("COMMIT")
        except BaseException:
            # also after a failed COMMIT: never leave the connection inside a transaction
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, retrying with short jittered sleeps while another writer holds it.

        SQLite's own busy handler sleeps up to 100 ms per retry once a lock has
        been busy a while; with several writer processes that idles the file
        most of the time. Sub-ms to 8 ms retries keep it busy instead.
        """
        deadline = time.monotonic() + self._timeout_s
        delay_s = 0.0005
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                    with _errors(self.where):
                        raise
            time.sleep(delay_s * random.uniform(0.5, 1.5))
            delay_s = min(delay_s * 2, 0.008)

    def close(self) -> None:
        self._conn.close()
