"""``glyphfold shake``: only the free text rungs (elision, image stripping)."""

from __future__ import annotations

import argparse

from glyphfold.commands._args import add_json

HELP = "elide old tool results and strip old images (the free rungs), whatever the budget"
DESCRIPTION = """\
Run only the free rungs on a history, whatever the budget: old uneventful tool
results become one-line stubs, old images become placeholders. Orphan tool
calls/results in the input are repaired first, and the repair is reported.
Reference: docs/cli.md#shake."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input, add_pin

    add_input(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default=None,
        help="where to write the shaken history (default and '-': stdout)",
    )
    add_pin(parser)
    add_json(parser, "tokens before/after, the ledger, repairs (requires -o FILE)")
    parser.epilog = "exit codes: 0 written; 2 bad usage or bad input"


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import json_text, read_input
    from glyphfold.commands._output import output_file, write_text
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import note, print_json
    from glyphfold.compaction.ladder.api import shake
    from glyphfold.compaction.ladder.ledger import ledger_to_json
    from glyphfold.errors import InputError

    if args.json and args.output in (None, "-"):
        msg = "--json prints the report on stdout: give -o FILE for the shaken history"
        raise InputError(msg)
    check_profile(args.profile)
    target = output_file(args.output)
    read = read_input(args.input, format=args.format, profile=args.profile)
    with progress("shaking"):
        result = shake(read.history, profile=args.profile, pins=read.pins(args.pin))
        text = json_text(read.restore(result.history))
    write_text(text, target)
    if args.json:
        print_json(
            {
                "input": args.input,
                "output": args.output,
                "profile": args.profile,
                "tokens_before": result.tokens_before,
                "tokens_after": result.tokens_after,
                "messages_before": len(read.original.messages),
                "messages_after": len(result.history.messages) if result.history else None,
                "ledger": ledger_to_json(result.ledger),
                "repaired": read.repaired,
            }
        )
    elif not args.quiet:
        note(f"shake: {result.tokens_before:,} -> {result.tokens_after:,} tokens")
        for e in result.ledger:
            note(e.summary_line())
    return 0
