"""``glyphfold sessions``: list the conversations in a store."""

from __future__ import annotations

import argparse
import sys

from glyphfold.commands._store_args import add_db_argument

HELP = "list the conversations in a transcript store"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands.store_view import open_existing, use_rich, when
    from glyphfold.compaction.store.url import parse_store_url

    store = open_existing(args.db)
    if store is None:
        print(f"no store at {parse_store_url(args.db).target} yet (nothing has been recorded)")
        return 0
    with store:
        where = store.where
        rows = [
            (
                c.id[:12],
                c.title or "",
                c.format or "-",
                str(c.message_count),
                str(len(store.branches(c.id))),
                str(sum(not cp.dropped for cp in store.checkpoints(c.id))),
                when(c.updated_at),
            )
            for c in store.conversations()
        ]
    heads = ("ID", "TITLE", "FORMAT", "MESSAGES", "BRANCHES", "CHECKPOINTS", "UPDATED (UTC)")
    if not rows:
        print(f"{where}: no conversations yet")
        return 0
    if use_rich(sys.stdout):
        from rich.console import Console
        from rich.table import Table

        table = Table(title=where)
        for h in heads:
            table.add_column(
                h,
                justify="right" if h in ("MESSAGES", "BRANCHES", "CHECKPOINTS") else "left",
                no_wrap=h in ("ID", "UPDATED (UTC)"),
            )
        for r in rows:
            table.add_row(*r)
        Console().print(table)
        return 0
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    print(f"{where}: {len(rows)} conversation{'s' if len(rows) != 1 else ''}")
    print("  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip())
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return 0
