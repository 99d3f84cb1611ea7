"""``check``: what is inconsistent in a store (an empty list when it is sound).

Every check is a query or one pass over ``(id, parent)`` pairs, so checking a
store costs about one read of its metadata (plus SQLite's page check). What is
checked: damaged SQLite pages; parents that are missing, in another
conversation, at the wrong depth, or form a cycle; branches that end inside a
turn; tips and checkpoints that are not a turn boundary of their conversation;
compactions naming another conversation's messages; and conversations holding
fewer messages than the import that created them wrote (half-imported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from glyphfold.compaction.store.backend import Tx
from glyphfold.compaction.store.conversations import Ctx
from glyphfold.errors import CorruptStoreError

_QUERIES: tuple[tuple[str, Callable[[tuple[Any, ...]], str]], ...] = (
    (
        "SELECT m.id, m.parent_id FROM messages m LEFT JOIN messages p "
        "ON p.id = m.parent_id WHERE m.parent_id IS NOT NULL "
        "AND (p.id IS NULL OR p.conversation_id <> m.conversation_id "
        "OR p.depth <> m.depth - 1)",
        lambda r: f"message {r[0]}: bad parent {r[1]}",
    ),
    (
        "SELECT m.id, m.conversation_id FROM messages m WHERE m.ends_turn = 0 "
        "AND NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_id = m.id)",
        lambda r: (
            f"message {r[0]} (conversation {r[1]}): a branch ends inside a turn "
            "(half a turn stored)"
        ),
    ),
    (
        "SELECT c.id, c.tip_id FROM conversations c LEFT JOIN messages m "
        "ON m.id = c.tip_id WHERE c.tip_id IS NOT NULL "
        "AND (m.id IS NULL OR m.conversation_id <> c.id OR m.ends_turn = 0)",
        lambda r: f"conversation {r[0]}: tip {r[1]} is not a turn boundary it owns",
    ),
    (
        "SELECT k.conversation_id, k.label, k.message_id FROM checkpoints k "
        "LEFT JOIN messages m ON m.id = k.message_id WHERE k.message_id IS NOT NULL "
        "AND (m.id IS NULL OR m.conversation_id <> k.conversation_id OR m.ends_turn = 0)",
        lambda r: (
            f"conversation {r[0]}: checkpoint {r[1]!r} marks {r[2]}, "
            "which is not a turn boundary it owns"
        ),
    ),
    (
        "SELECT x.compaction_id, x.message_id FROM compaction_messages x "
        "JOIN compactions k ON k.id = x.compaction_id "
        "LEFT JOIN messages m ON m.id = x.message_id "
        "WHERE m.id IS NULL OR m.conversation_id <> k.conversation_id",
        lambda r: f"compaction {r[0]}: replaced message {r[1]} is not in its conversation",
    ),
    (
        "SELECT c.id, c.imported_messages, "
        "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS n "
        "FROM conversations c WHERE c.imported_messages IS NOT NULL "
        "AND c.imported_messages > "
        "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)",
        lambda r: (
            f"conversation {r[0]}: holds {r[2]} messages but its import wrote {r[1]} "
            "(half-imported, or messages were removed)"
        ),
    ),
)


def check(ctx: Ctx) -> list[str]:
    """Problems found in the store (see the module docstring for what is checked)."""
    problems: list[str] = []
    if ctx.backend.dialect == "sqlite":
        try:
            with ctx.backend.read() as tx:
                problems.extend(f"sqlite: {r}" for r in damaged_pages(tx, quick=False))
        except CorruptStoreError as exc:  # too damaged for SQLite to finish its own check
            problems.append(f"sqlite: {exc.__cause__ or exc} (the page check stopped there)")
    try:
        with ctx.backend.read() as tx:
            for sql, describe in _QUERIES:
                problems.extend(describe(r) for r in tx.all(sql))
            pairs = tx.all("SELECT id, parent_id, conversation_id FROM messages")
    except CorruptStoreError as exc:
        problems.append(f"the rows could not all be read: {exc.__cause__ or exc}")
        return problems
    problems.extend(cycles(pairs))
    return problems


def damaged_pages(tx: Tx, *, quick: bool) -> list[str]:
    """SQLite's page check: [] when sound (``quick``: skip the index cross-checks)."""
    rows = [r[0] for r in tx.all("PRAGMA quick_check" if quick else "PRAGMA integrity_check")]
    return [] if rows == ["ok"] else rows


def refuse_damaged(ctx: Ctx) -> None:
    """Before a bulk write into SQLite: refuse a damaged file (writing would spread it).

    A read transaction: in WAL mode the page check (linear in the file's size)
    does not hold other writers back.
    """
    if ctx.backend.dialect != "sqlite":
        return  # PostgreSQL checks its own pages (data checksums, the server's job)
    with ctx.backend.read() as tx:
        damage = damaged_pages(tx, quick=True)
    if damage:
        shown = "; ".join(damage[:3]) + (f"; and {len(damage) - 3} more" if len(damage) > 3 else "")
        msg = (
            f"{ctx.where} is damaged ({shown}); nothing was written to it. `glyphfold check` "
            "lists the damage; restore a backup (or salvage it with sqlite3's .recover)"
        )
        raise CorruptStoreError(msg)


def cycles(pairs: Iterable[tuple[Any, ...]]) -> list[str]:
    """One problem per parent-pointer cycle among ``(id, parent_id, conversation)`` rows."""
    parent: dict[int, int | None] = {}
    owner: dict[int, str] = {}
    for mid, pid, conv in pairs:
        parent[mid] = pid
        owner[mid] = conv
    done: set[int] = set()  # nodes known to reach a root (or a reported cycle)
    out: list[str] = []
    for start in parent:
        path: list[int] = []
        on_path: set[int] = set()
        node: int | None = start
        while node is not None and node not in done and node in parent:
            if node in on_path:
                loop = path[path.index(node) :]
                shown = ", ".join(map(str, sorted(loop)[:8])) + (" ..." if len(loop) > 8 else "")
                out.append(
                    f"conversation {owner[node]}: parent pointers form a cycle of "
                    f"{len(loop)} message(s) ({shown})"
                )
                break
            path.append(node)
            on_path.add(node)
            node = parent[node]
        done.update(path)
    return out
