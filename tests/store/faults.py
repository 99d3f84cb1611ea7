"""Helpers for the store's fault tests: raw edits, hung writers, damaged pages, read-only media."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import sqlite3
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from glyphfold.compaction.store import canon, open_backend, schema


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
            ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True)
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


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "1m") -> Iterator[Path]:
    """A tiny filesystem mounted at ``folder`` (root only; skips elsewhere)."""
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


# schema version 3 as first shipped: its index held the tool-id lists
_ORIGINAL_V3 = (
    """CREATE INDEX messages_walk ON messages (conversation_id, id, parent_id, depth,
        role, turn_start, ends_turn, tokens, tool_call_ids, tool_result_ids)""",
    "DROP INDEX messages_conversation",
)
OLD_TEXT = 'quotes " and \\ backslash, newline\n, ü, 漢字'


def old_store(url: str, version: int, *turns: list[dict]) -> tuple[str, list[int]]:
    """A store exactly as schema ``version`` (2, or 3 as first shipped) left it, holding
    ``turns`` in one conversation, a rewind digest and a snapshot source stored as the
    raw text they used."""
    backend = open_backend(url)
    try:
        with backend.write(schema_lock=True) as tx:
            for migration in schema.MIGRATIONS[:2]:
                schema.apply(tx.run, migration, backend.dialect)
            if version == 3:
                for statement in _ORIGINAL_V3:
                    tx.run(statement)
            tx.run(
                "INSERT INTO glyphfold_meta (key, value) VALUES (?, ?)",
                ("schema_version", str(version)),
            )
            ids = raw_turns(tx, "old", [m for t in turns for m in t], [len(t) for t in turns])
            tx.run(
                "INSERT INTO rewinds (conversation_id, label, from_tip, to_message, digest, "
                "abandoned_ids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                ("old", "cp", ids[-1], ids[-1], OLD_TEXT, "[]", 1.0),
            )
            cid = tx.insert(
                "INSERT INTO compactions (conversation_id, tip_id, ledger, "
                "dropped_checkpoints, created_at) VALUES (?, ?, ?, ?, ?)",
                ("old", ids[-1], "[]", "[]", 1.0),
            )
            tx.run(
                "INSERT INTO compaction_sources (compaction_id, idx, source_text) VALUES (?, ?, ?)",
                (cid, 0, OLD_TEXT),
            )
    finally:
        backend.close()
    return "old", ids


def raw_turns(tx, conv: str, messages: list[dict], sizes: list[int]) -> list[int]:
    """Insert a conversation of whole turns (``sizes``: messages per turn) as SQL would."""
    tx.run(
        "INSERT INTO conversations (id, title, format, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (conv, "old", "openai", 1.0, 1.0),
    )
    ends = set(itertools.accumulate(sizes))
    parent, ids = None, []
    canons = canon.canon_messages(messages, format="openai")
    for depth, (m, c) in enumerate(zip(messages, canons, strict=True)):
        parent = tx.insert(
            "INSERT INTO messages (conversation_id, parent_id, depth, role, turn_start, "
            "ends_turn, tool_call_ids, tool_result_ids, tokens, payload, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (conv, parent, depth, c.role, int(c.turn_start), int(depth + 1 in ends),
             json.dumps(list(c.tool_call_ids)), json.dumps(list(c.tool_result_ids)),
             c.tokens, json.dumps(m), 1.0),
        )  # fmt: skip
        ids.append(parent)
    tx.run("UPDATE conversations SET tip_id = ? WHERE id = ?", (parent, conv))
    return ids
