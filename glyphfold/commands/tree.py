"""``glyphfold tree``: draw a conversation's session tree."""

from __future__ import annotations

import argparse
import sys

from glyphfold.commands._store_args import add_db_argument

HELP = "draw a conversation's session tree: branches, tip, checkpoints, compactions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace) -> int:
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
    if use_rich(sys.stdout):
        from rich.console import Console
        from rich.text import Text

        console = Console()
        console.print(Text(title, style="bold"))
        for line in lines:
            # crop rather than wrap: a wrapped line would break the tree's connectors
            console.print(
                Text(line.prefix, style="dim") + Text(line.text, style=line.style),
                no_wrap=True,
                overflow="ellipsis",
            )
        for note in footer:
            console.print(Text(note, style="italic"))
        return 0
    print(title)
    for line in lines:
        print(line.prefix + line.text)
    for note in footer:
        print(note)
    return 0
