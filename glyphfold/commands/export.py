"""``glyphfold export``: print a conversation's working history at its tip as JSON."""

from __future__ import annotations

import argparse

from glyphfold.commands._store_args import add_db_argument

HELP = "print a conversation's working history (root -> tip) as wire-format JSON"
DESCRIPTION = """\
Print (or write with -o) a conversation's working history, root to tip, as
wire-format JSON; --tree writes the whole session tree in glyphfold's own dump
format, which `glyphfold import` reads back. Reference: docs/cli.md#export."""
EPILOG = "exit codes: 0 written; 2 no store, no such conversation, or bad usage"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    add_db_argument(parser)
    parser.add_argument(
        "conversation", metavar="CONVERSATION", help="conversation id or unique prefix"
    )
    parser.add_argument(
        "--format",
        choices=("openai", "anthropic"),
        default=None,
        help="wire format of the output (default: the format it was recorded in)",
    )
    parser.add_argument(
        "--tree",
        action="store_true",
        help="export the whole session tree (every branch, checkpoints) instead, "
        "in glyphfold's importable dump format",
    )
    parser.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="output file (default: stdout)"
    )


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._history_io import json_text
    from glyphfold.commands._output import output_file, write_text
    from glyphfold.commands.store_view import open_existing
    from glyphfold.compaction.store.url import parse_store_url
    from glyphfold.errors import InputError, NotFoundError

    if args.tree and args.format:
        msg = "--tree exports glyphfold's own dump format; drop --format"
        raise InputError(msg)
    target = output_file(args.output)
    store = open_existing(args.db)
    if store is None:
        msg = f"no store at {parse_store_url(args.db).target} yet (nothing has been recorded)"
        raise NotFoundError(msg)
    with store:
        conversation = store.resolve(args.conversation)
        data = (
            store.dump(conversation)
            if args.tree
            else store.export(conversation, format=args.format)
        )
    write_text(json_text(data), target)
    return 0
