"""Helpers for the store's fault tests: raw edits, hung writers, damaged pages, read-only media."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest


def raw(url: str) -> Any:
    """A raw autocommit connection to the store (to edit it as a user or a bug could)."""
    if url.startswith("sqlite"):
        return sqlite3.connect(url.removeprefix("sqlite:///").split("?")[0], isolation_level=None)
    return psycopg.connect(url.split("?")[0], autocommit=True)


def execute(url: str, sql: str, params: tuple = ()) -> None:
    """Run one statement on the store outside glyphfold (``?`` placeholders)."""
    conn = raw(url)
    try:
        if url.startswith("sqlite"):
            conn.execute(sql, params)
        else:
            conn.execute(sql.replace("?", "%s"), params)
    finally:
        conn.close()


@contextlib.contextmanager
def hung_writer(url: str, conversation: str) -> Iterator[None]:
    """Another writer that took the conversation's write lock and then hung."""
    conn = raw(url)
    try:
        if url.startswith("sqlite"):
            conn.execute("BEGIN IMMEDIATE")
        else:
            conn.execute("BEGIN")
            conn.execute("SELECT id FROM conversations WHERE id = %s FOR UPDATE", (conversation,))
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def incompressible_ids(n: int, *, chars: int = 40) -> list[str]:
    """Tool-call ids a btree cannot compress (hex of hashes), deterministic."""
    out = []
    for k in range(n):
        text = ""
        while len(text) < chars:
            text += hashlib.sha256(f"{k}:{len(text)}".encode()).hexdigest()
        out.append(f"call_{text[:chars]}")
    return out


def wide_turn(ids: list[str]) -> list[dict]:
    """An OpenAI turn whose assistant message makes one parallel call per id."""
    calls = [
        {"id": i, "type": "function", "function": {"name": "grep", "arguments": "{}"}} for i in ids
    ]
    return [
        {"role": "user", "content": "search everything at once"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": i, "content": "no match"} for i in ids),
        {"role": "assistant", "content": "nothing found"},
    ]


def digest(path: Path) -> str:
    """sha256 of a file and of its -wal file (what "nothing was modified" means on disk)."""
    h = hashlib.sha256(path.read_bytes())
    wal = Path(str(path) + "-wal")
    if wal.exists():
        h.update(wal.read_bytes())
    return h.hexdigest()


def leftmost_leaf(path: Path, table: str) -> int:
    """The page number of the oldest leaf of ``table``'s b-tree (parsed from the file).

    Damaging it breaks reads of the oldest rows while appends (at the rightmost
    leaf) still succeed: the case where a bulk write would spread the damage.
    """
    with sqlite3.connect(path) as conn:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    data = path.read_bytes()
    page = root
    while True:
        start = (page - 1) * page_size
        header = start + (100 if page == 1 else 0)
        kind = data[header]
        if kind == 0x0D:  # leaf table b-tree page
            return page
        assert kind == 0x05, f"page {page} is not a table b-tree page ({kind:#x})"
        (first_cell,) = struct.unpack(">H", data[header + 12 : header + 14])
        (page,) = struct.unpack(">I", data[start + first_cell : start + first_cell + 4])


def damage_page(path: Path, page: int) -> None:
    """Overwrite one page with garbage (as a failing disk or a stray write would)."""
    with sqlite3.connect(path) as conn:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    with path.open("r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(b"\xa5" * page_size)


@contextlib.contextmanager
def read_only_dir(folder: Path) -> Iterator[Path]:
    """``folder`` seen through a read-only mount (root) or without write permission.

    Skips the test when neither makes the folder read-only for this process.
    """
    view = folder.parent / (folder.name + "-ro")
    view.mkdir()
    mounted = False
    if os.geteuid() == 0:
        bind = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True)
        if bind.returncode == 0:
            mounted = True
            ro = subprocess.run(
                ["mount", "-o", "remount,bind,ro", str(view)], capture_output=True
            )
            if ro.returncode != 0:
                subprocess.run(["umount", str(view)], check=False)
                pytest.skip("cannot remount read-only here")
        else:
            pytest.skip(f"cannot bind-mount here: {bind.stderr.decode().strip()}")
    else:
        view.rmdir()
        view = folder
        for p in [*folder.iterdir(), folder]:
            p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        yield view
    finally:
        if mounted:
            subprocess.run(["umount", str(view)], check=False)
            view.rmdir()
        else:
            for p in [folder, *folder.iterdir()]:
                p.chmod(0o755 if p.is_dir() else 0o644)
