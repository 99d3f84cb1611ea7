"""Start and stop a throwaway PostgreSQL 15 cluster on loopback for the store tests.

Used by ``.ci/run`` (``python3 tests/store/pgserver.py start`` prints shell
``export`` lines; ``stop DIR`` removes it) and by the pytest fixture when
``GLYPHFOLD_TEST_PG_URL`` is not set. As root, initdb/postgres run as the
``postgres`` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

PG_LIB = Path("/usr/lib/postgresql")  # Debian: /usr/lib/postgresql/<major>/bin
URL_ENV = "GLYPHFOLD_TEST_PG_URL"
DIR_ENV = "GLYPHFOLD_TEST_PG_DIR"


def pg_bin() -> Path | None:
    """The directory holding initdb/pg_ctl, or None when PostgreSQL is not installed."""
    # newest installed major first (Debian 12 ships 15, Debian 13 ships 17)
    majors = sorted(
        (d for d in PG_LIB.glob("*/bin") if d.parent.name.isdigit()),
        key=lambda d: int(d.parent.name),
        reverse=True,
    )
    for d in majors:
        if (d / "initdb").exists():
            return d
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


def start(base: str | None = None) -> tuple[str, Path]:
    """Create and start a cluster; return (URL, data directory)."""
    bindir = pg_bin()
    if bindir is None:
        msg = "PostgreSQL binaries not found (apt-get install postgresql)"
        raise RuntimeError(msg)
    root = Path(tempfile.mkdtemp(prefix="glyphfold-pg-", dir=base))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    port = _free_port()
    run = dict(check=True, capture_output=True, text=True, cwd="/")
    subprocess.run(
        _as_owner(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale",
                "C",
            ]
        ),
        **run,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=60"
    subprocess.run(
        _as_owner(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ]
        ),
        **run,
    )
    return f"postgresql://postgres@127.0.0.1:{port}/postgres", root


def stop(root: str | Path) -> None:
    """Stop the cluster under ``root`` and delete it."""
    root = Path(root)
    bindir = pg_bin()
    if bindir is not None and (root / "data").exists():
        subprocess.run(
            _as_owner(
                [str(bindir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"]
            ),
            capture_output=True,
            cwd="/",
            check=False,
        )
    shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["start"]:
        url, root = start()
        print(f"export {URL_ENV}={url}")
        print(f"export {DIR_ENV}={root}")
        return 0
    if len(argv) == 2 and argv[0] == "stop":
        stop(argv[1])
        return 0
    print("usage: pgserver.py start | stop DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
