"""SQLite backend: one file, WAL mode, ``synchronous=FULL`` by default.

Durability decision: FULL. In WAL mode NORMAL never corrupts the file but may
lose the last committed turns on power loss or an OS crash; FULL fsyncs the WAL
at every commit so a committed turn survives those too. A commit happens once
per turn, seconds apart behind a model call, so the extra fsync (sub-ms to a few
ms) is noise next to the turn itself. ``?synchronous=normal`` in the URL trades
that guarantee for throughput (e.g. bulk imports).

Nothing is changed in a file before the store knows it is glyphfold's and not
newer than this code (WAL is switched on in :meth:`SQLiteBackend.on_schema_ok`).
A file that cannot be written (read-only media, no write permission) is opened
read-only: reads work, every write is refused up front.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from glyphfold.compaction.store.backend import Backend, Tx
from glyphfold.compaction.store.url import DEFAULT_LOCK_TIMEOUT_S, StoreURL
from glyphfold.errors import CorruptStoreError, LockTimeoutError, NotFoundError, StoreError

_BUSY_TIMEOUT_MS = 5
# primary result codes (sqlite3 exceptions carry the extended code)
_BUSY, _LOCKED, _READONLY, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 11, 13, 14, 26


_INT64 = (-(2**63), 2**63 - 1)


def _checked(params: Sequence[Any]) -> Sequence[Any]:
    """``params``, or NotFoundError for an int SQLite cannot hold (no row can have it)."""
    for p in params:
        if type(p) is int and not _INT64[0] <= p <= _INT64[1]:
            msg = (
                f"no row has id {p}: stored ids are 64-bit integers "
                f"({_INT64[0]:,} to {_INT64[1]:,})"
            )
            raise NotFoundError(msg)
    return params


class _SQLiteTx(Tx):
    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self._conn = conn
        self._where = where

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with _errors(self._where):
            return self._conn.execute(sql, _checked(params)).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        with _errors(self._where):
            return self._conn.execute(sql, _checked(params)).rowcount

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        with _errors(self._where):
            return self._conn.execute(sql + " RETURNING id", _checked(params)).fetchone()[0]


def _code(exc: sqlite3.Error) -> int:
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def translate(exc: sqlite3.Error, where: str) -> StoreError:
    """One clear StoreError for a sqlite3 error (corrupt, read-only, locked, foreign)."""
    text = str(exc)
    code = _code(exc)
    if code == _CORRUPT or "malformed" in text:
        msg = (
            f"{where} is damaged ({text}); nothing was written to it. `glyphfold check` "
            "lists the damage; restore a backup (or salvage it with sqlite3's .recover)"
        )
        return CorruptStoreError(msg)
    if code == _NOTADB:
        msg = f"{where} is not a usable SQLite database ({text}); nothing was modified"
        return StoreError(msg)
    if code == _READONLY:
        msg = f"{where} is read-only ({text}); nothing was modified"
        return StoreError(msg)
    if code == _FULL:
        msg = f"{where}: the disk is full ({text}); nothing of this write was kept — free space"
        return StoreError(msg)
    if code in (_BUSY, _LOCKED):
        msg = f"{where} stayed locked by another writer ({text}); retry, or raise lock_timeout_s"
        return LockTimeoutError(msg)
    return StoreError(f"{where}: {text}")


@contextmanager
def _errors(where: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, where) from exc


def _writable(path: Path) -> bool:
    """Can this process write the file and create its -wal/-shm files next to it?"""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _on_read_only_media(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class SQLiteBackend(Backend):
    """A SQLite file (or ``:memory:``) opened in WAL mode."""

    dialect = "sqlite"
    tables_sql = "SELECT name FROM sqlite_master WHERE type = 'table'"

    def __init__(
        self, url: StoreURL, *, lock_timeout_s: float | None = None, reading: bool = False
    ) -> None:
        self._path = url.target
        self._reading = reading  # a read command: leave the journal mode alone
        if lock_timeout_s is None:
            lock_timeout_s = float(url.options.get("lock_timeout_s", DEFAULT_LOCK_TIMEOUT_S))
        self.lock_timeout_s = lock_timeout_s
        synchronous = url.options.get("synchronous", "full").upper()
        if self._path != ":memory:":
            path = self._checked_path(url)
            self._path = str(path)
            self.read_only = path.exists() and not _writable(path)
        self._conn = self._connect()
        with _errors(self.where):
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # short: BEGIN IMMEDIATE retries itself (see _begin_immediate); other
            # statements in WAL mode rarely wait at all
            self._conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")

    def _checked_path(self, url: StoreURL) -> Path:
        path = Path(self._path).expanduser()
        if path.is_dir():
            msg = f"{path} is a directory; give a file path such as sqlite:///{path}/store.db"
            raise StoreError(msg)
        if not path.parent.exists():
            if not url.is_default:
                msg = f"directory {path.parent} does not exist (store URL sqlite:///{path})"
                raise StoreError(msg)
            path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() and not os.access(path.parent, os.W_OK):
            msg = f"cannot create SQLite store {path}: directory {path.parent} is not writable"
            raise StoreError(msg)
        return path

    def _connect(self) -> sqlite3.Connection:
        """Open and probe the file (a read first: a corrupt or foreign file fails here)."""
        if not self.read_only:
            return self._open(self._path, uri=False)
        uri = Path(self._path).absolute().as_uri()
        try:
            return self._open(uri + "?mode=ro", uri=True)
        except StoreError:
            # a WAL store on read-only media without its -shm file opens only as
            # immutable, safe there since nobody can write it (and no WAL is pending)
            wal = Path(self._path + "-wal")
            pending = wal.exists() and wal.stat().st_size > 0
            if not _on_read_only_media(Path(self._path)) or pending:
                raise
            return self._open(uri + "?immutable=1", uri=True)

    def _open(self, target: str, *, uri: bool) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                target,
                timeout=self.lock_timeout_s,
                isolation_level=None,
                check_same_thread=False,
                uri=uri,
            )
        except sqlite3.Error as exc:
            msg = f"cannot open SQLite store {self._path}: {exc}"
            raise StoreError(msg) from exc
        try:
            conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            conn.close()
            if _code(exc) == _CANTOPEN and self.read_only:
                msg = f"{self.where} is read-only and cannot be opened for reading ({exc})"
                raise StoreError(msg) from exc
            if _code(exc) in (_NOTADB, _CANTOPEN):
                msg = (
                    f"{self._path} is not a usable SQLite database ({exc}); "
                    "nothing was modified — point --db at another file"
                )
                raise StoreError(msg) from exc
            raise translate(exc, self.where) from exc
        return conn

    def on_schema_ok(self) -> None:
        if self.read_only or self._reading:
            return
        with _errors(self.where):
            self._conn.execute("PRAGMA journal_mode=WAL")

    @property
    def where(self) -> str:
        suffix = " (read-only)" if self.read_only else ""
        return f"SQLite store {self._path}{suffix}"

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with _errors(self.where):
            self._conn.execute("BEGIN")
        try:
            yield _SQLiteTx(self._conn, self.where)
        except BaseException:
            self._rollback()
            raise
        with _errors(self.where):
            self._conn.execute("COMMIT")

    @contextmanager
    def write(self, *, schema_lock: bool = False) -> Iterator[Tx]:
        if self.read_only:
            msg = (
                f"{self.where} cannot be written (read-only media or no write "
                "permission); nothing was modified"
            )
            raise StoreError(msg)
        # IMMEDIATE takes the write lock up front: reads inside the transaction
        # (the tip compare-and-set) cannot be invalidated by another writer
        self._begin_immediate()
        try:
            yield _SQLiteTx(self._conn, self.where)
            with _errors(self.where):
                self._conn.execute("COMMIT")
        except BaseException:
            # also after a failed COMMIT: never leave the connection inside a transaction
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            # a damaged file may refuse even this; the original error matters
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, retrying with short jittered sleeps while another writer holds it.

        SQLite's own busy handler sleeps up to 100 ms per retry once a lock has
        been busy a while; with several writer processes that idles the file
        most of the time. Sub-ms to 8 ms retries keep it busy instead.
        """
        deadline = time.monotonic() + self.lock_timeout_s
        delay_s = 0.0005
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.Error as exc:
                if _code(exc) not in (_BUSY, _LOCKED):
                    raise translate(exc, self.where) from exc
                if time.monotonic() > deadline:
                    msg = (
                        f"{self.where}: another writer held the write lock for more than "
                        f"{self.lock_timeout_s:g} s"
                    )
                    raise LockTimeoutError(msg) from exc
            time.sleep(delay_s * random.uniform(0.5, 1.5))
            delay_s = min(delay_s * 2, 0.008)

    def close(self) -> None:
        self._conn.close()
