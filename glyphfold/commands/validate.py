"""``glyphfold validate``: check a chat history against the provider's rules."""

from __future__ import annotations

import argparse

from glyphfold.commands._args import add_json

HELP = "check a chat history JSON (OpenAI or Anthropic) against the provider's message rules"
DESCRIPTION = """\
Check a chat history against its provider's message rules (roles, alternation,
every tool call answered by its result right after it) and print every broken
rule, the message count, the turns and the token estimate (every image priced,
as `compact` and `context` count). Reference: docs/cli.md#validate."""
EPILOG = """\
exit codes: 0 the provider would accept the history; 1 it breaks at least one
rule (each is listed); 2 bad usage or bad input (not JSON, not a history)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold validate``."""
    from glyphfold.commands._history_io import add_input

    parser.epilog = EPILOG
    add_input(parser)
    add_json(parser, "format, messages, turns, tokens, violations")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the provider would accept the history, 1 listing every broken rule."""
    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import history_tokens, load
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import count, print_json, say
    from glyphfold.compaction.history.turns import segment_turns
    from glyphfold.compaction.history.validate import find_violations

    check_profile(args.profile)
    with progress(f"reading {args.input}"):
        h, _ = load(args.input, format=args.format)
    with progress("checking"):
        violations = find_violations(h)
        turns = len(segment_turns(h).turns)
        tokens = history_tokens(h, profile=args.profile)
    if args.json:
        data = {
            "format": h.format,
            "messages": len(h.messages),
            "turns": turns,
            "tokens": tokens,
            "violations": [
                {"index": v.index, "rule": v.rule, "problem": v.problem} for v in violations
            ],
        }
        if violations:
            error = f"the history breaks {count(len(violations), 'provider rule')}"
            data.update(error=error, exit_code=1)
        print_json(data)
    else:
        for v in violations:
            say(v)
        state = "ok" if not violations else count(len(violations), "problem")
        say(
            f"{state}: {h.format}, {count(len(h.messages), 'message')}, "
            f"{count(turns, 'turn')}, ~{count(tokens, 'token')}"
        )
    return 1 if violations else 0
