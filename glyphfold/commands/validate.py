"""``glyphfold validate``: check a chat history against the provider's rules."""

from __future__ import annotations

import argparse
import json

HELP = "check a chat history JSON (OpenAI or Anthropic) against the provider's message rules"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold validate``."""
    parser.add_argument("input", metavar="INPUT|-", help="history JSON file, or - for stdin")
    parser.add_argument(
        "--format", default="auto", choices=("auto", "openai", "anthropic"), help="wire format"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the provider would accept the history, 1 listing every broken rule."""
    from glyphfold.commands._history_io import read_history
    from glyphfold.compaction.history.messages import to_canonical
    from glyphfold.compaction.history.tokens import estimate_history_tokens
    from glyphfold.compaction.history.turns import segment_turns
    from glyphfold.compaction.history.validate import find_violations

    h = to_canonical(read_history(args.input), format=args.format)
    violations = find_violations(h)
    turns = len(segment_turns(h).turns)
    try:
        tokens: int | None = estimate_history_tokens(h)
    except ValueError:  # e.g. images priced on a profile that cannot take them
        tokens = None
    if args.json:
        print(
            json.dumps(
                {
                    "format": h.format,
                    "messages": len(h.messages),
                    "turns": turns,
                    "tokens": tokens,
                    "violations": [
                        {"index": v.index, "rule": v.rule, "problem": v.problem} for v in violations
                    ],
                }
            )
        )
    else:
        for v in violations:
            print(v)
        state = "ok" if not violations else f"{len(violations)} problem(s)"
        print(f"{state}: {h.format}, {len(h.messages)} messages, {turns} turns, ~{tokens} tokens")
    return 1 if violations else 0
