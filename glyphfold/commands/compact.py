"""``glyphfold compact``: run the recovery ladder on a history file.

Exit codes: 0 the history fits the budget; 1 it could not be brought under the
budget (the newest turn or pinned messages alone are too big; nothing is
written); 2 bad usage or bad input (one-line message).
"""

from __future__ import annotations

import argparse
import json
import sys

HELP = "compact a chat history under a token budget (elide, strip, snapshot, summary, trim)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input

    parser.epilog = (
        "exit codes: 0 the history fits the budget (or, with --dry-run, would fit); "
        "1 it cannot be brought under the budget (the newest turn or pinned messages are "
        "too big; nothing is written); 2 bad usage or bad input"
    )
    add_input(parser)
    parser.add_argument(
        "-o", "--output", metavar="OUT.json", help="compacted history (default: stdout)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--budget", type=int, metavar="N", help="token budget")
    group.add_argument(
        "--window",
        type=int,
        metavar="N",
        help="model context window (budget = window x ratio, SPEC §3.1)",
    )
    parser.add_argument("--ratio", type=float, metavar="R", help="with --window: budget ratio")
    parser.add_argument(
        "--reserve",
        type=int,
        default=0,
        metavar="N",
        help="tokens kept free for the reply (default 0)",
    )
    parser.add_argument(
        "--rungs",
        metavar="LIST",
        help="comma-separated rungs in order (default: elide,strip,snapshot,"
        "summary,trim; summary only with --summarizer)",
    )
    parser.add_argument(
        "--summarizer",
        choices=("anthropic", "openai"),
        help="summary rung through this SDK (key from the environment)",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="IDX|ID",
        help="keep this message (index or tool call id); repeatable",
    )
    parser.add_argument(
        "--provider-ready",
        action="store_true",
        help="strip the x_glyphfold keys (snapshot sources) so the output can be sent as "
        "is; a later compact can then no longer re-render old snapshots from their source",
    )
    parser.add_argument("--pages-dir", metavar="DIR", help="also write the snapshot pages here")
    parser.add_argument("--report", metavar="FILE.json", help="write the ledger as JSON")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (what each rung would remove and save); write nothing",
    )


def summarizer_from_name(name: str | None):
    from glyphfold.compaction.ladder.summarizers import AnthropicSummarizer, OpenAISummarizer

    match name:
        case None:
            return None
        case "anthropic":
            return AnthropicSummarizer.from_env()
        case "openai":
            return OpenAISummarizer.from_env()
    msg = f"unknown summarizer {name!r}; use anthropic or openai"
    raise ValueError(msg)


def parse_pins(pins: list[str]) -> list[int | str]:
    return [int(p) if p.lstrip("-").isdigit() else p for p in pins]


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._history_io import read_history, write_json, write_pages
    from glyphfold.compaction.ladder.api import compact, provider_messages
    from glyphfold.errors import ContextOverflowError, InputError

    if args.ratio is not None and args.window is None:
        msg = "--ratio needs --window"
        raise InputError(msg)
    if args.budget is None and args.window is None:
        msg = "give --budget N or --window N"
        raise InputError(msg)
    history = read_history(args.input)
    try:
        result = compact(
            history,
            profile=args.profile,
            budget=args.budget,
            window=args.window,
            ratio=args.ratio,
            reserve=args.reserve,
            rungs=args.rungs,
            summarizer=summarizer_from_name(args.summarizer),
            pins=parse_pins(args.pin),
            dry_run=args.dry_run,
            format=args.format,
        )
    except ContextOverflowError as exc:
        print(f"glyphfold: {exc}", file=sys.stderr)
        return 1
    for line in result.summary_lines():
        print(line, file=sys.stderr)
    if args.report:
        write_json(result.report(), args.report)
    if args.dry_run:
        if not args.report:
            print(json.dumps(result.report()["ledger"], ensure_ascii=False, indent=1))
        return 0 if result.fits else 1
    out = provider_messages(result.messages) if args.provider_ready else result.messages
    write_json(out, args.output)
    if args.pages_dir and result.pages:
        paths = write_pages(result.pages, args.pages_dir)
        print(f"wrote {len(paths)} page(s) to {args.pages_dir}", file=sys.stderr)
    return 0
