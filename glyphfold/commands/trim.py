"""``glyphfold trim``: drop the oldest whole turns of a chat history."""

from __future__ import annotations

import argparse
from typing import Any

from glyphfold.commands._args import add_json, non_negative_int

HELP = "drop the oldest whole turns of a chat history to a token budget or a turn count"
DESCRIPTION = """\
Drop the oldest whole turns of a chat history (a tool call is never separated
from its result), with a breadcrumb where they were. The newest turn is always
kept. Orphan tool calls/results in the input are repaired first, and the repair
is reported. Reference: docs/cli.md#trim, docs/history.md#trimming."""
EPILOG = """\
exit codes:
  0  written, and within the budget / turn limit
  1  even the newest turn alone is over --budget (or --recover finds no older
     turn to drop); nothing is written: use `glyphfold compact`
  2  bad usage or bad input"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold trim``."""
    from glyphfold.commands._history_io import add_input

    parser.epilog = EPILOG
    add_input(parser)
    limit = parser.add_mutually_exclusive_group(required=True)
    limit.add_argument(
        "--budget",
        type=non_negative_int,
        metavar="N",
        help="token budget (0: proactive trimming disabled, nothing is dropped)",
    )
    limit.add_argument(
        "--max-turns", type=non_negative_int, metavar="N", help="keep the newest N turns"
    )
    limit.add_argument(
        "--recover",
        action="store_true",
        help="overflow recovery: drop turns down to 2/3 of the current estimate",
    )
    parser.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="output file (default: stdout)"
    )
    add_json(parser, "tokens before/after, turns kept and dropped, fits, repairs")


def run(args: argparse.Namespace) -> int:
    """Write the trimmed history; report the HistoryTrimmed event on stderr."""
    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import (
        CLI_IMAGE_POLICY,
        pricing_profile,
        read_input,
    )
    from glyphfold.commands._output import output_file
    from glyphfold.commands._progress import progress
    from glyphfold.compaction.history.budget import recovery_target
    from glyphfold.compaction.history.tokens import estimate_history_tokens
    from glyphfold.compaction.history.trim import trim_history
    from glyphfold.errors import InputError

    if args.json and args.output in (None, "-"):
        msg = "--json prints the report on stdout: give -o FILE for the trimmed history"
        raise InputError(msg)
    profile = check_profile(args.profile)
    target = output_file(args.output)
    read = read_input(args.input, format=args.format, profile=args.profile)
    swept, restore, repaired = read.history, read.restore, read.repaired
    pricing = {"profile": pricing_profile(profile), "image_policy": CLI_IMAGE_POLICY}
    with progress("trimming"):
        before = estimate_history_tokens(swept, **pricing)
        budget = recovery_target(before) if args.recover else args.budget
        res = trim_history(
            swept,
            budget=budget,
            max_turns=args.max_turns,
            reason="overflow_recovery" if args.recover else None,
            **pricing,
        )
    return _finish(args, res, restore, target, budget=budget, repaired=repaired)


def _finish(
    args: argparse.Namespace,
    res: Any,
    restore: Any,
    target: Any,
    *,
    budget: int | None,
    repaired: dict[str, Any] | None,
) -> int:
    from glyphfold.commands._history_io import json_text
    from glyphfold.commands._output import write_text
    from glyphfold.commands._term import count, note, print_json

    e = res.event
    over = budget is not None and budget > 0 and res.tokens_after > budget
    stuck = args.recover and e is None
    data = {
        "input": args.input,
        "output": None if over or stuck else (args.output or "-"),
        "tokens_before": res.tokens_before,
        "tokens_after": res.tokens_after,
        "budget": budget,
        "max_turns": args.max_turns,
        "fits": not (over or stuck),
        "reason": e.reason if e else None,
        "dropped_messages": e.dropped_messages if e else 0,
        "dropped_turns": e.dropped_turns if e else 0,
        "kept_turns": e.kept_turns if e else None,
        "repaired": repaired,
    }
    if e is not None:
        line = (
            f"trimmed ({e.reason}): dropped {count(e.dropped_messages, 'message')} in "
            f"{count(e.dropped_turns, 'turn')}, kept {count(e.kept_turns, 'turn')}, "
            f"~{e.tokens_before:,} -> ~{e.tokens_after:,} tokens"
        )
    else:
        line = f"nothing to trim (~{res.tokens_before:,} tokens)"
    if over or stuck:
        why = (
            f"the newest turn alone is ~{res.tokens_after:,} tokens, over the budget of {budget:,}"
            if over
            else f"the history (~{res.tokens_before:,} tokens) has no older turn to drop"
        )
        line = (
            f"cannot trim to the target: {why}; nothing written "
            "(`glyphfold compact` images the middle of a turn)"
        )
        if args.json:
            print_json({**data, "error": line, "exit_code": 1})
        note(f"glyphfold: {line}")
        return 1
    write_text(json_text(restore(res.history)), target)
    if args.json:
        print_json(data)
    elif not args.quiet:
        note(line)
    return 0
