"""``glyphfold trim``: drop the oldest whole turns of a chat history (SPEC §2, §3.6)."""

from __future__ import annotations

import argparse
import sys

HELP = "drop the oldest whole turns of a chat history to a token budget or a turn count"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold trim``."""
    parser.add_argument("input", metavar="INPUT|-", help="history JSON file, or - for stdin")
    limit = parser.add_mutually_exclusive_group(required=True)
    limit.add_argument("--budget", type=int, metavar="TOKENS", help="token budget (0: no trim)")
    limit.add_argument("--max-turns", type=int, metavar="N", help="keep the newest N turns")
    limit.add_argument(
        "--recover", action="store_true", help="overflow recovery: 2/3 of the current estimate"
    )
    parser.add_argument("--profile", default="anthropic", help="provider profile pricing images")
    parser.add_argument("-o", "--out", default=None, metavar="FILE", help="output (default stdout)")


def run(args: argparse.Namespace) -> int:
    """Write the trimmed history; report the HistoryTrimmed event on stderr."""
    from glyphfold.commands._history_io import read_history, write_json
    from glyphfold.compaction.history.events import EventBus, HistoryTrimmed
    from glyphfold.compaction.history.trim import recover_from_overflow, trim_history
    from glyphfold.errors import ContextOverflowError

    history = read_history(args.input)
    bus = EventBus()
    events: list[HistoryTrimmed] = []
    bus.subscribe(events.append, types=HistoryTrimmed)
    if args.recover:
        try:
            out = recover_from_overflow(history, profile=args.profile, bus=bus)
        except ContextOverflowError as exc:
            print(f"glyphfold: {exc}", file=sys.stderr)
            return 1
    else:
        out = trim_history(
            history, budget=args.budget, max_turns=args.max_turns, profile=args.profile, bus=bus
        ).history
    write_json(out, args.out)
    if events:
        e = events[0]
        print(
            f"trimmed ({e.reason}): dropped {e.dropped_messages} messages in "
            f"{e.dropped_turns} turns, kept {e.kept_turns} turns, "
            f"~{e.tokens_before:,} -> ~{e.tokens_after:,} tokens",
            file=sys.stderr,
        )
    else:
        print("nothing to trim", file=sys.stderr)
    return 0
