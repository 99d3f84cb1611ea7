"""``glyphfold compact``: run the recovery ladder on a history file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from glyphfold.commands._args import (
    LazyHelp,
    add_json,
    non_negative_int,
    positive_int,
    ratio,
    rungs_help,
)

HELP = "compact a chat history under a token budget (elide, strip, snapshot, summary, trim)"
DESCRIPTION = """\
Compact a chat history under a token budget: elide old uneventful tool results,
strip old images, render the middle into glyph pages (snapshots), summarise
(with --summarizer), trim whole turns; cheapest rung first, stopping once the
history fits. Orphan tool calls/results in the input are repaired first, and
the repair is reported. Reference: docs/cli.md#compact, budget rules: docs/budget.md."""
EPILOG = """\
exit codes:
  0  the history fits the budget (with --dry-run: it would fit)
  1  it cannot be brought under the budget (the newest turn or the pinned messages
     alone are too big); nothing is written
  2  bad usage or bad input"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input, add_pin

    parser.epilog = EPILOG
    add_input(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the compacted history here ('-' = stdout; without -o it goes to stdout, "
        "but never to a terminal: it holds base64 PNG pages)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--budget", type=positive_int, metavar="N", help="token budget")
    group.add_argument(
        "--window",
        type=positive_int,
        metavar="N",
        help="the model's context window; the budget is window x --ratio "
        "(without --ratio: the default 32,000, capped by the window; docs/budget.md)",
    )
    parser.add_argument(
        "--ratio", type=ratio, metavar="R", help="with --window: budget = window x R, R in (0, 1]"
    )
    parser.add_argument(
        "--reserve",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="tokens kept free for the reply (default 0)",
    )
    parser.add_argument(
        "--rungs",
        metavar="LIST",
        help=LazyHelp(rungs_help),
    )
    parser.add_argument(
        "--summarizer",
        choices=("anthropic", "openai"),
        help="summary rung through this SDK (key from the environment)",
    )
    parser.add_argument(
        "--summary-model",
        metavar="NAME",
        help="the model --summarizer calls (default: the adapter's, e.g. claude-sonnet-4-5)",
    )
    parser.add_argument(
        "--focus",
        metavar="TEXT",
        help="what matters, e.g. 'the failing test and its fix': written in each "
        "snapshot's reading guide, sent to the --summarizer and written in the summary's "
        "preamble",
    )
    add_pin(parser)
    parser.add_argument(
        "--provider-ready",
        action="store_true",
        help="strip the x_glyphfold keys (snapshot sources) so the output can be sent as "
        "is; a later compact can then no longer re-render old snapshots from their source",
    )
    parser.add_argument("--pages-dir", metavar="DIR", help="also write the snapshot pages here")
    parser.add_argument(
        "--report", metavar="FILE", help="also write the report (tokens, ledger) as JSON here"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (what each rung would remove and save); write nothing",
    )
    add_json(parser, "tokens before/after, budget, fits, pages, the ledger, repairs")


def summarizer_from_name(name: str | None, model: str | None = None):
    from glyphfold.compaction.ladder.summarizers import AnthropicSummarizer, OpenAISummarizer

    kwargs = {} if model is None else {"model": model}
    match name:
        case None:
            return None
        case "anthropic":
            return AnthropicSummarizer.from_env(**kwargs)
        case "openai":
            return OpenAISummarizer.from_env(**kwargs)
    msg = f"unknown summarizer {name!r}; use anthropic or openai"
    raise ValueError(msg)


def resolve_budget(args: argparse.Namespace) -> tuple[int, str]:
    """The budget from --budget or --window/--ratio, and how it was reached (said aloud)."""
    from glyphfold.compaction.history.budget import DEFAULT_BUDGET_TOKENS, effective_context_budget
    from glyphfold.errors import InputError

    if args.ratio is not None and args.window is None:
        msg = "--ratio needs --window (budget = window x ratio)"
        raise InputError(msg)
    if args.budget is None and args.window is None:
        msg = "give --budget N, or --window N with --ratio R"
        raise InputError(msg)
    if args.budget is not None:
        return args.budget, f"budget {args.budget:,} tokens (--budget)"
    budget = effective_context_budget(context_window=args.window, context_compact_ratio=args.ratio)
    if args.ratio is not None:
        return budget, f"budget {budget:,} tokens = window {args.window:,} x ratio {args.ratio:g}"
    how = (
        f"the default {DEFAULT_BUDGET_TOKENS:,}"
        if budget == DEFAULT_BUDGET_TOKENS
        else f"the default {DEFAULT_BUDGET_TOKENS:,} capped by the window"
    )
    return budget, f"budget {budget:,} tokens: {how} (no --ratio; --ratio R gives window x R)"


def _rung_names() -> list[str]:
    from glyphfold.compaction.ladder.registry import registered_rungs

    return list(registered_rungs())


def _check_rungs(args: argparse.Namespace) -> None:
    """--rungs in the command line's words (the library's say ``summarizer=...``)."""
    from glyphfold.errors import InputError

    if args.summary_model is not None and not args.summarizer:
        msg = (
            "--summary-model is for the summary rung: add --summarizer anthropic|openai, "
            "or drop --summary-model"
        )
        raise InputError(msg)
    if args.focus is not None and args.rungs:
        names = [r.strip() for r in args.rungs.split(",")]
        if "snapshot" not in names and not ("summary" in names and args.summarizer):
            msg = (
                "--focus is written in the snapshots' reading guide and sent to the "
                "summarizer: add snapshot (or summary with --summarizer) to --rungs, "
                "or drop --focus"
            )
            raise InputError(msg)
    if not args.rungs:
        return
    valid = _rung_names()
    names = [r.strip() for r in args.rungs.split(",") if r.strip()]
    unknown = [r for r in names if r not in valid]
    if unknown or not names:
        msg = f"--rungs {args.rungs}: unknown rung(s) {', '.join(unknown) or '(none given)'}"
        raise InputError(f"{msg}; choose from {','.join(valid)}")
    from glyphfold.compaction.ladder.registry import model_free_rungs

    with_model = [r for r in names if r not in model_free_rungs()]
    if with_model and not args.summarizer:
        rung = ",".join(with_model)
        msg = (
            f"--rungs {rung} needs --summarizer anthropic|openai (the model that writes the "
            f"summary; its key from the environment), or drop {rung} from --rungs"
        )
        raise InputError(msg)


def _check_outputs(args: argparse.Namespace) -> dict[str, Any]:
    """Every output path checked before the work (docs/cli.md, "Files")."""
    from glyphfold.commands._output import output_dir, output_file
    from glyphfold.errors import InputError

    if args.dry_run:
        return {"output": None, "report": None, "pages": None}
    if args.json and args.output in (None, "-"):
        msg = "--json prints the report on stdout: give -o FILE for the compacted history"
        raise InputError(msg)
    if args.output is None and sys.stdout.isatty():
        msg = (
            "not printing the compacted history (JSON with base64 PNG pages) to a terminal: "
            "give -o FILE, or -o - to print it anyway"
        )
        raise InputError(msg)
    return {
        "output": output_file(args.output),
        "report": output_file(args.report, option="--report") if args.report else None,
        "pages": output_dir(args.pages_dir, option="--pages-dir") if args.pages_dir else None,
    }


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import read_input

    budget, how = resolve_budget(args)
    if args.reserve >= budget:
        from glyphfold.errors import InputError

        msg = f"--reserve {args.reserve:,} leaves nothing of the {budget:,}-token budget"
        raise InputError(msg)
    check_profile(args.profile)
    _check_rungs(args)
    targets = _check_outputs(args)
    summarizer = summarizer_from_name(args.summarizer, args.summary_model)
    read = read_input(args.input, format=args.format)
    return _compact_and_write(
        args,
        read.history,
        read.restore,
        budget=budget,
        how=how,
        pins=read.pins(args.pin),
        summarizer=summarizer,
        targets=targets,
        repaired=read.repaired,
        messages_in=len(read.original.messages),
    )


def _compact_and_write(
    args: argparse.Namespace,
    h: Any,
    restore: Any,
    *,
    budget: int,
    how: str,
    pins: list[Any],
    summarizer: Any,
    targets: dict[str, Any],
    repaired: dict[str, Any] | None,
    messages_in: int,
) -> int:
    from glyphfold.commands._history_io import json_text, overflow_line, write_json
    from glyphfold.commands._output import write_pages, write_text
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import note, print_json, say
    from glyphfold.compaction.ladder.api import compact
    from glyphfold.compaction.ladder.provider import provider_messages
    from glyphfold.errors import ContextOverflowError

    quiet = args.quiet
    try:
        with progress(f"compacting {len(h.messages):,} messages to {budget:,} tokens"):
            result = compact(
                h,
                profile=args.profile,
                budget=budget,
                reserve=args.reserve,
                rungs=args.rungs,
                summarizer=summarizer,
                pins=pins,
                dry_run=args.dry_run,
                focus=args.focus,
            )
    except ContextOverflowError as exc:
        line = overflow_line(exc, _advice(args))
        if args.json:
            print_json(_failure(line, exc, budget, how, repaired))
        note(f"glyphfold: {line}; nothing written")
        return 1
    data = result.report()
    data.update(
        input=args.input,
        budget_rule=how,
        profile=args.profile,
        messages_before=messages_in,
        messages_after=len(result.history.messages) if result.history else None,
        repaired=repaired,
    )
    if args.dry_run:
        if args.json:
            print_json(data)
        else:
            say("\n".join([how, *result.summary_lines()]))
        return 0 if result.fits else 1
    out = restore(result.history)
    if args.provider_ready:
        out = provider_messages(out)
    with progress("writing"):
        text = json_text(out)  # encoded before any file is touched
        pages = write_pages(result.pages, targets["pages"]) if targets["pages"] else []
        data.update(output=args.output or "-", page_files=[str(p) for p in pages])
        if targets["report"] is not None:
            write_json(data, targets["report"])
        write_text(text, targets["output"])
    if args.json:
        print_json(data)
    elif not quiet:
        note("\n".join([how, *result.summary_lines()]))
        if pages:
            note(f"wrote {len(pages):,} page(s) to {args.pages_dir}")
    return 0


def _advice(args: argparse.Namespace) -> str:
    """What the user can change on this command line when the history cannot fit."""
    if args.rungs:
        return f"give a larger --budget, or more rungs in --rungs (all: {','.join(_rung_names())})"
    if not args.summarizer:
        return "give a larger --budget, or --summarizer for the summary rung"
    return "give a larger --budget"


def _failure(
    line: str, exc: Any, budget: int, how: str, repaired: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "fits": False,
        "exit_code": 1,
        "error": line,
        "budget": budget,
        "budget_rule": how,
        "estimate": exc.estimate,
        "overshoot": exc.overshoot,
        "repaired": repaired,
    }
