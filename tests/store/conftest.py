"""Fixtures: one behavioural suite over a real SQLite file and a real PostgreSQL server.

PostgreSQL comes from ``$GLYPHFOLD_TEST_PG_URL`` (``.ci/run`` starts one) or,
when unset, from a throwaway cluster this session starts itself. Each test gets
its own database (unique per xdist worker and test), dropped afterwards. With
``CI=true`` or ``GLYPHFOLD_REQUIRE_PG=1`` a missing server fails the tests
instead of skipping them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from pgserver import URL_ENV, pg_bin, start, stop

from glyphfold.compaction.store import Store, open_store


def _pg_required() -> bool:
    return (
        os.environ.get("CI", "").lower() == "true" or os.environ.get("GLYPHFOLD_REQUIRE_PG") == "1"
    )


def _unavailable(reason: str) -> None:
    if _pg_required():
        pytest.fail(f"PostgreSQL required (CI / GLYPHFOLD_REQUIRE_PG) but {reason}")
    pytest.skip(f"PostgreSQL not available: {reason}")


def _with_db(url: str, dbname: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{dbname}"


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A maintenance URL of a reachable PostgreSQL server (skip or fail when none)."""
    import psycopg

    url = os.environ.get(URL_ENV)
    root = None
    if not url:
        if pg_bin() is None:
            _unavailable(f"{URL_ENV} is unset and no PostgreSQL binaries are installed")
        try:
            url, root = start()
        except Exception as exc:  # any start-up failure: report it, skip or fail
            _unavailable(f"could not start a throwaway cluster: {exc}")
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        if root is not None:
            stop(root)
        _unavailable(f"cannot connect to {url}: {exc}")
    yield url
    if root is not None:
        stop(root)


@pytest.fixture
def pg_url(pg_admin_url: str, worker_id: str) -> Iterator[str]:
    """A fresh, empty database for one test; dropped afterwards."""
    import psycopg

    dbname = f"gf_test_{worker_id}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    yield _with_db(pg_admin_url, dbname)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A URL of an empty store on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s
