"""``glyphfold tree``: draw a conversation's session tree."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from glyphfold.commands._args import add_json
from glyphfold.commands._store_args import add_db_argument

HELP = "draw a conversation's session tree: branches, tip, checkpoints, compactions"
DESCRIPTION = """\
Draw a conversation's session tree: one line per committed turn, branch points
indented, the tip, checkpoints (⚑), compactions (✂) and rewinds. Long linear runs
are folded to their ends and marked turns (--all shows every turn).
Reference: docs/cli.md#tree, docs/store.md."""
EPILOG = "exit codes: 0 drawn; 2 no store at --db, no such conversation, or a bad --db"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    add_db_argument(parser)
    parser.add_argument(
        "conversation",
        nargs="?",
        metavar="CONVERSATION",
        help="conversation id or unique prefix (default: the most recently updated)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="show every turn (default: long linear runs are folded to their ends and markers)",
    )
    add_json(parser, "the conversation, its branches, checkpoints, compactions, rewinds, lines")


def tree_json(store: Any, conversation: str, lines: list[Any]) -> dict[str, Any]:
    """The figures of a tree for scripts (ids, counts, branch tips, markers)."""
    c = store.conversation(conversation)
    return {
        "store": store.where,
        "conversation": {
            "id": c.id,
            "title": c.title,
            "format": c.format,
            "messages": c.message_count,
            "tip": c.tip_id,
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "forked_from": c.forked_from,
        },
        "branches": [
            {
                "tip": b.tip_id,
                "length": b.length,
                "current": b.is_current,
                "fork_point": b.fork_point,
                "abandoned_messages": len(b.abandoned_ids),
            }
            for b in store.branches(conversation)
        ],
        "checkpoints": [
            {"label": cp.label, "message": cp.message_id, "dropped_by": cp.dropped_by}
            for cp in store.checkpoints(conversation)
        ],
        "compactions": [
            {"id": r.id, "tip": r.tip_id, "replaced_messages": len(r.replaced_message_ids)}
            for r in store.compactions(conversation)
        ],
        "rewinds": [
            {"label": r.label, "from_tip": r.from_tip, "to": r.to_message, "digest": r.digest}
            for r in store.rewinds(conversation)
        ],
        "lines": [line.prefix + line.text for line in lines],
    }


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._term import escape, print_json, say
    from glyphfold.commands.store_view import (
        open_existing,
        pick_conversation,
        tree_lines,
        use_rich,
    )
    from glyphfold.compaction.store.url import parse_store_url
    from glyphfold.errors import NotFoundError

    store = open_existing(args.db)
    if store is None:
        msg = f"no store at {parse_store_url(args.db).target} yet (nothing has been recorded)"
        raise NotFoundError(msg)
    with store:
        conversation = pick_conversation(store, args.conversation)
        title, lines, footer = tree_lines(store, conversation, keep=None if args.all else 3)
        data = tree_json(store, conversation, lines) if args.json else None
    if data is not None:
        print_json(data)
        return 0
    if use_rich(sys.stdout):
        from rich.console import Console
        from rich.text import Text

        console = Console()
        console.print(Text(escape(title), style="bold"))
        for line in lines:
            # crop rather than wrap: a wrapped line would break the tree's connectors
            console.print(
                Text(line.prefix, style="dim") + Text(escape(line.text), style=line.style),
                no_wrap=True,
                overflow="ellipsis",
            )
        for note in footer:
            console.print(Text(escape(note), style="italic"))
        return 0
    say(
        "\n".join(
            [
                escape(title),
                *(escape(ln.prefix + ln.text) for ln in lines),
                *(escape(n) for n in footer),
            ]
        )
    )
    return 0
