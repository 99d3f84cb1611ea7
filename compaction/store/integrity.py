"""``check``: what is inconsistent in a store (empty list when it is sound)."""

from __future__ import annotations

from glyphfold.compaction.store.conversations import Ctx


def check(ctx: Ctx) -> list[str]:
    """Problems found in the store: parent chains, tips, SQLite pages."""
    problems: list[str] = []
    with ctx.backend.read() as tx:
        if ctx.backend.dialect == "sqlite":
            result = [r[0] for r in tx.all("PRAGMA integrity_check")]
            if result != ["ok"]:
                problems.extend(f"sqlite: {r}" for r in result)
        for mid, parent in tx.all(
            "SELECT m.id, m.parent_id FROM messages m LEFT JOIN messages p "
            "ON p.id = m.parent_id WHERE m.parent_id IS NOT NULL "
            "AND (p.id IS NULL OR p.conversation_id <> m.conversation_id "
            "OR p.depth <> m.depth - 1)"
        ):
            problems.append(f"message {mid}: bad parent {parent}")
        for cid, tip in tx.all(
            "SELECT c.id, c.tip_id FROM conversations c LEFT JOIN messages m "
            "ON m.id = c.tip_id WHERE c.tip_id IS NOT NULL "
            "AND (m.id IS NULL OR m.conversation_id <> c.id OR m.ends_turn = 0)"
        ):
            problems.append(f"conversation {cid}: tip {tip} is not a turn boundary it owns")
    return problems
