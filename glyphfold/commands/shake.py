"""``glyphfold shake``: only the free text rungs (elision, image stripping)."""

from __future__ import annotations

import argparse

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
        required=True,
        help="where to write the shaken history ('-' = stdout)",
    )
    add_pin(parser)
    parser.epilog = "exit codes: 0 written; 2 bad usage or bad input"


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import json_text, read_input
    from glyphfold.commands._output import output_file, write_text
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import note
    from glyphfold.compaction.ladder.api import shake

    check_profile(args.profile)
    target = output_file(args.output)
    read = read_input(args.input, format=args.format)
    with progress("shaking"):
        result = shake(read.history, profile=args.profile, pins=read.pins(args.pin))
        text = json_text(read.restore(result.history))
    write_text(text, target)
    if not args.quiet:
        note(f"shake: {result.tokens_before:,} -> {result.tokens_after:,} tokens")
        for e in result.ledger:
            note(e.summary_line())
    return 0
