"""``glyphfold sessions``: list the conversations in a store."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from glyphfold.commands._args import add_json
from glyphfold.commands._store_args import add_db_argument

HELP = "list the conversations in a transcript store"
DESCRIPTION = """\
List the conversations in a transcript store: id, title, wire format, stored
messages (every branch), branches, live checkpoints, last update (UTC).
Reference: docs/cli.md#sessions, docs/store.md."""
EPILOG = (
    "exit codes: 0 listed (also an empty store); 1 listed, but some conversations are "
    "damaged (marked, and named on stderr); 2 no store at --db, a bad --db, or every "
    "conversation damaged"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    add_db_argument(parser)
    add_json(parser, "the store and one entry per conversation")


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._term import escape, note, print_json, say
    from glyphfold.commands.store_view import open_existing, use_rich, when
    from glyphfold.compaction.store.url import parse_store_url
    from glyphfold.errors import NotFoundError

    store = open_existing(args.db)
    if store is None:
        msg = f"no store at {parse_store_url(args.db).target} yet (nothing has been recorded)"
        raise NotFoundError(msg)
    with store:
        where = store.where
        convs = [_row(store, c) for c in store.conversations()]
    damaged = [c for c in convs if c["damaged"] is not None]
    if damaged and len(damaged) == len(convs):
        raise damaged[0]["error"]  # nothing healthy to list: the one-line error
    for c in convs:
        del c["error"]
    if damaged:
        # the healthy conversations are listed; the damaged ones are marked (exit 1)
        first = damaged[0]
        note(
            f"{len(damaged):,} of {len(convs):,} conversations cannot be read: conversation "
            f"{first['id'][:12]} is damaged {first['damaged']}"
        )
    code = 1 if damaged else 0
    if args.json:
        print_json({"store": where, "conversations": convs})
        return code
    if not convs:
        say(f"{where}: no conversations yet")
        return code
    rows = [
        (
            c["id"][:12],
            escape(c["title"] or ""),
            c["format"] or "-",
            f"{c['messages']:,}",
            "damaged" if c["damaged"] else f"{c['branches']:,}",
            "damaged" if c["damaged"] else f"{c['checkpoints']:,}",
            when(c["updated_at"]),
        )
        for c in convs
    ]
    heads = ("ID", "TITLE", "FORMAT", "MESSAGES", "BRANCHES", "CHECKPOINTS", "UPDATED (UTC)")
    numeric = ("MESSAGES", "BRANCHES", "CHECKPOINTS")
    if use_rich(sys.stdout):
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        # every header and value whole on an 80-column terminal (headers were cut to
        # "MESSA…"): no vertical rules, one space between columns, only TITLE wraps
        table = Table(
            title=Text(escape(where)), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
        )
        for k, h in enumerate(heads):
            fixed = h != "TITLE"
            table.add_column(
                h,
                justify="right" if h in numeric else "left",
                no_wrap=fixed,
                min_width=max(len(h), *(len(r[k]) for r in rows)) if fixed else 5,
                overflow="fold",
            )
        for r in rows:
            table.add_row(*(Text(v) for v in r))  # Text: stored titles are never markup
        Console().print(table)
        return code
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]

    def fmt(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if h in numeric else v.ljust(w)
            for h, v, w in zip(heads, values, widths, strict=True)
        ).rstrip()

    lines = [f"{where}: {len(rows):,} conversation{'s' if len(rows) != 1 else ''}", fmt(heads)]
    say("\n".join([*lines, *map(fmt, rows)]))
    return code


def _row(store: Any, c: Any) -> dict[str, Any]:
    """One conversation's listing; a damaged one is listed with the damage, not raised."""
    from glyphfold.errors import CorruptStoreError

    row: dict[str, Any] = {
        "id": c.id,
        "title": c.title,
        "format": c.format,
        "messages": c.message_count,
        "branches": None,
        "checkpoints": None,
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "forked_from": c.forked_from,
        "damaged": None,
        "error": None,
    }
    try:
        row["branches"] = len(store.branches(c.id))
        row["checkpoints"] = sum(not cp.dropped for cp in store.checkpoints(c.id))
    except CorruptStoreError as exc:
        row["damaged"] = str(exc).partition(" is damaged ")[2] or str(exc)
        row["error"] = exc
    return row
