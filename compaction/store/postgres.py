"""PostgreSQL backend (psycopg 3): one database shared by many workers.

Each write is one transaction that row-locks the conversation
(``SELECT ... FOR UPDATE``), so the tip compare-and-set is race-free across
hosts; reads run in REPEATABLE READ snapshots. Durability is the server's
(``synchronous_commit=on`` by default).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from glyphfold.compaction.store.backend import Backend, Tx
from glyphfold.compaction.store.url import StoreURL, redact

from glyphfold.errors import StoreError

_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE, without importing psycopg at module load

#: arbitrary constant key for the advisory lock that serialises schema migrations
_SCHEMA_LOCK_KEY = 0x676C7966  # "glyf"


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


@contextmanager
def _errors(where: str) -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"{where}: {first}"
        raise StoreError(msg) from exc


class PostgresBackend(Backend):
    """A PostgreSQL database reached through a libpq URL."""

    dialect = "postgresql"
    for_update = " FOR UPDATE"
    tables_sql = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    )

    def __init__(self, url: StoreURL) -> None:
        try:
            import psycopg
        except ImportError as exc:
            msg = "PostgreSQL stores need psycopg: pip install 'glyphfold[postgres]'"
            raise StoreError(msg) from exc
        self._url = redact(url.target)
        try:
            self._conn = psycopg.connect(url.target, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            msg = f"cannot connect to PostgreSQL store {self._url}: {first}"
            raise StoreError(msg) from exc
        self._cur = self._conn.cursor()

    @property
    def where(self) -> str:
        return f"PostgreSQL store {self._url}"

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with _errors(self.where):
            self._cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield _PgTx(self._cur, self.where)
        finally:
            with _errors(self.where):
                self._cur.execute("COMMIT")

    @contextmanager
    def write(self, *, schema_lock: bool = False) -> Iterator[Tx]:
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
            if self._conn.info.transaction_status != _IDLE:
                with _errors(self.where):
                    self._cur.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._conn.close()
