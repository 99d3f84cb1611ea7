"""``glyphfold shake``: only the free text rungs (elision, image stripping)."""

from __future__ import annotations

import argparse
import sys

HELP = "elide old tool results and strip old images (the free rungs), whatever the budget"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input

    add_input(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT.json",
        required=True,
        help="where to write the shaken history ('-' = stdout)",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="IDX|ID",
        help="keep this message (index or tool call id); repeatable",
    )


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._history_io import read_history, write_json
    from glyphfold.commands.compact import parse_pins
    from glyphfold.compaction.ladder.api import shake

    result = shake(
        read_history(args.input),
        profile=args.profile,
        pins=parse_pins(args.pin),
        format=args.format,
    )
    print(f"shake: {result.tokens_before:,} -> {result.tokens_after:,} tokens", file=sys.stderr)
    for e in result.ledger:
        print(e.summary_line(), file=sys.stderr)
    write_json(result.messages, args.output)
    return 0
