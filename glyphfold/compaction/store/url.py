"""Store URLs: ``sqlite:///path.db``, ``postgresql://...``, a bare path, and the default."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from glyphfold.errors import StoreError

#: environment variable naming the store the CLI opens when ``--db`` is not given
STORE_ENV = "GLYPHFOLD_DB"
DEFAULT_FILENAME = "transcripts.db"

_SQLITE_OPTIONS = {"synchronous", "timeout_s"}
#: options both backends take (in the URL's query)
_COMMON_OPTIONS = {"lock_timeout_s"}
#: how long a writer waits for another writer's lock before LockTimeoutError
DEFAULT_LOCK_TIMEOUT_S = 30.0
_SYNCHRONOUS = {"full", "normal"}


@dataclass(frozen=True)
class StoreURL:
    """A parsed store location: which backend and where."""

    backend: str  # "sqlite" | "postgresql"
    target: str  # SQLite file path (or ":memory:") / libpq connection string
    options: dict[str, str] = field(default_factory=dict)
    is_default: bool = False

    def redacted(self) -> str:
        """The URL with any password replaced by ``***`` (safe for messages)."""
        if self.backend == "sqlite":
            return f"sqlite:///{self.target}"
        return redact(self.target)


def redact(url: str) -> str:
    """Hide the password of a ``scheme://user:password@host/...`` URL."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/glyphfold/transcripts.db`` (``~/.local/share`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "glyphfold" / DEFAULT_FILENAME


def default_store_url() -> str:
    """The URL used when none is given: ``$GLYPHFOLD_DB`` or the default SQLite file."""
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return f"sqlite:///{default_store_path()}"


def parse_store_url(url: str | os.PathLike[str] | None) -> StoreURL:
    """Parse a store URL; ``None`` means the default store.

    ``sqlite:///rel.db`` is relative to the working directory and
    ``sqlite:////abs/path.db`` absolute (the SQLAlchemy convention); a string
    without ``://`` is taken as a SQLite file path. Both backends take
    ``?lock_timeout_s=SECONDS`` (how long a writer waits for another one's lock;
    default 30); it is removed from the URL handed to libpq.
    """
    is_default = url is None
    if url is None:
        url = default_store_url()
        is_default = STORE_ENV not in os.environ or not os.environ[STORE_ENV]
    url = os.fspath(url)
    if not isinstance(url, str) or not url.strip():
        msg = f"empty store URL {url!r}; use sqlite:///path.db or postgresql://user@host/dbname"
        raise StoreError(msg)
    if "://" not in url:
        return StoreURL("sqlite", url, {}, is_default)
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("postgresql", "postgres"):
        return _postgres(url, is_default)
    if scheme == "sqlite":
        return _sqlite(url, is_default)
    msg = (
        f"unknown store URL scheme {scheme!r} in {redact(url)!r}; "
        "use sqlite:///path.db or postgresql://user@host/dbname"
    )
    raise StoreError(msg)


def _postgres(url: str, is_default: bool) -> StoreURL:
    parts = urlsplit(url)
    if not parts.hostname and "host=" not in parts.query:
        msg = f"store URL {redact(url)!r} names no host; use postgresql://user@host:5432/dbname"
        raise StoreError(msg)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in _COMMON_OPTIONS}
    if not ours:
        return StoreURL("postgresql", url, {}, is_default)
    _check_seconds(ours, redact(url))
    # libpq rejects parameters it does not know: hand it the URL without ours
    rest = urlencode([(k, v) for k, v in query if k not in _COMMON_OPTIONS])
    return StoreURL("postgresql", urlunsplit(parts._replace(query=rest)), ours, is_default)


def _sqlite(url: str, is_default: bool) -> StoreURL:
    rest = url[len("sqlite://") :]
    if not rest.startswith("/"):
        msg = (
            f"store URL {url!r} has no path; use sqlite:///relative.db or "
            "sqlite:////absolute/path.db (three or four slashes)"
        )
        raise StoreError(msg)
    path, _, query = rest[1:].partition("?")
    if not path:
        msg = f"store URL {url!r} has an empty path; use sqlite:///path.db"
        raise StoreError(msg)
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = set(options) - _SQLITE_OPTIONS - _COMMON_OPTIONS
    if unknown:
        msg = (
            f"unknown SQLite store option(s) {sorted(unknown)} in {url!r}; "
            f"valid: {sorted(_SQLITE_OPTIONS | _COMMON_OPTIONS)}"
        )
        raise StoreError(msg)
    sync = options.get("synchronous", "full").lower()
    if sync not in _SYNCHRONOUS:
        msg = f"synchronous={sync!r} in {url!r}; use synchronous=full or synchronous=normal"
        raise StoreError(msg)
    options["synchronous"] = sync
    _check_seconds(options, url)
    if "timeout_s" in options:  # the name before both backends had a lock timeout
        options.setdefault("lock_timeout_s", options.pop("timeout_s"))
    return StoreURL("sqlite", path, options, is_default)


def _check_seconds(options: dict[str, str], url: str) -> None:
    for key in ("timeout_s", "lock_timeout_s"):
        if key not in options:
            continue
        try:
            seconds = float(options[key])
        except ValueError:
            seconds = -1.0
        if not seconds >= 0 or seconds == float("inf"):
            msg = f"{key}={options[key]!r} in {url!r}; use seconds >= 0"
            raise StoreError(msg)
