"""PostgreSQL backend (psycopg 3): one database shared by many workers.

Each write is one transaction that row-locks the conversation
(``SELECT ... FOR UPDATE``), so the tip compare-and-set is race-free across
hosts; reads run in REPEATABLE READ snapshots. Durability is the server's
(``synchronous_commit=on`` by default).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from glyphfold.compaction.store.backend import Backend, Tx
from glyphfold.compaction.store.url import DEFAULT_LOCK_TIMEOUT_S, StoreURL, redact
from glyphfold.errors import CorruptStoreError, LockTimeoutError, StoreError

_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE, without importing psycopg at module load

#: arbitrary constant key for the advisory lock that serialises schema migrations
_SCHEMA_LOCK_KEY = 0x676C7966  # "glyf"
# SQLSTATEs given their own message
_LOCK_NOT_AVAILABLE = "55P03"
_READ_ONLY_TRANSACTION = "25006"
_CORRUPT = ("XX001", "XX002")  # data_corrupted, index_corrupted


@lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    # the shared SQL uses ? placeholders; no statement contains a literal ? or %
    return sql.replace("%", "%%").replace("?", "%s")


class _PgTx(Tx):
    def __init__(self, cur: Any, where: str) -> None:
        self._cur = cur
        self._where = where

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with _errors(self._where):
            self._cur.execute(_pg(sql), params)
            return self._cur.fetchall() if self._cur.description else []

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        with _errors(self._where):
            self._cur.execute(_pg(sql), params)
            return self._cur.rowcount

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        with _errors(self._where):
            self._cur.execute(_pg(sql + " RETURNING id"), params)
            return self._cur.fetchone()[0]


def translate(exc: Exception, where: str) -> StoreError:
    """One clear StoreError for a psycopg error (lock timeout, read-only, corrupt)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    state = getattr(exc, "sqlstate", None)
    if state == _LOCK_NOT_AVAILABLE:
        msg = f"{where} stayed locked by another writer ({first}); retry, or raise lock_timeout_s"
        return LockTimeoutError(msg)
    if state == _READ_ONLY_TRANSACTION:
        msg = f"{where} is read-only ({first}); nothing was modified"
        return StoreError(msg)
    if state in _CORRUPT:
        msg = f"{where} is damaged ({first}); nothing was written to it"
        return CorruptStoreError(msg)
    return StoreError(f"{where}: {first}")


@contextmanager
def _errors(where: str) -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc, where) from exc


class PostgresBackend(Backend):
    """A PostgreSQL database reached through a libpq URL."""

    dialect = "postgresql"
    for_update = " FOR UPDATE"
    tables_sql = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    )

    def __init__(self, url: StoreURL, *, lock_timeout_s: float | None = None) -> None:
        try:
            import psycopg
        except ImportError as exc:
            msg = "PostgreSQL stores need psycopg: pip install 'glyphfold[postgres]'"
            raise StoreError(msg) from exc
        self._url = redact(url.target)
        if lock_timeout_s is None:
            lock_timeout_s = float(url.options.get("lock_timeout_s", DEFAULT_LOCK_TIMEOUT_S))
        self.lock_timeout_s = lock_timeout_s
        try:
            self._conn = psycopg.connect(url.target, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            msg = f"cannot connect to PostgreSQL store {self._url}: {first}"
            raise StoreError(msg) from exc
        self._cur = self._conn.cursor()
        try:
            self._session_settings()
        except BaseException:
            self._conn.close()
            raise

    def _session_settings(self) -> None:
        # lock_timeout 0 would mean "wait forever" to PostgreSQL: 0 s here is "do not wait"
        ms = max(1, round(self.lock_timeout_s * 1000))
        with _errors(self.where):
            self._cur.execute("SELECT set_config('lock_timeout', %s, false)", (f"{ms}ms",))
            self._cur.execute(
                "SELECT current_setting('default_transaction_read_only') = 'on' "
                "OR pg_is_in_recovery()"
            )
            row = self._cur.fetchone()
        self.read_only = bool(row and row[0])

    @property
    def where(self) -> str:
        suffix = " (read-only)" if self.read_only else ""
        return f"PostgreSQL store {self._url}{suffix}"

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with _errors(self.where):
            self._cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield _PgTx(self._cur, self.where)
        except BaseException:
            self._rollback()
            raise
        with _errors(self.where):
            self._cur.execute("COMMIT")

    def _rollback(self) -> None:
        import psycopg

        if self._conn.info.transaction_status != _IDLE:
            # a broken connection refuses even this; the original error matters
            with contextlib.suppress(psycopg.Error):
                self._cur.execute("ROLLBACK")

    @contextmanager
    def write(self, *, schema_lock: bool = False) -> Iterator[Tx]:
        if self.read_only:
            msg = (
                f"{self.where} cannot be written (a read-only database or standby); "
                "nothing was modified"
            )
            raise StoreError(msg)
        with _errors(self.where):
            self._cur.execute("BEGIN")
            if schema_lock:
                self._cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
        try:
            yield _PgTx(self._cur, self.where)
            with _errors(self.where):
                self._cur.execute("COMMIT")
        except BaseException:
            # also after a failed COMMIT: never leave the session inside a transaction
            self._rollback()
            raise

    def close(self) -> None:
        self._conn.close()
