"""``glyphfold demo``: compact the built-in long coding session and write an HTML report.

The main job on built-in defaults: a ~300k-token agent session (generated
deterministically by :mod:`glyphfold.samples.demo_session`) compacted to a
15k budget with the Anthropic profile. Writes ``input.json``,
``compacted.json``, ``pages/page-0001.png``..., ``report.json`` and
``index.html`` (before/after tokens, the ledger, the pages) into ``--out``.
"""

from __future__ import annotations

import argparse

from glyphfold.commands._args import positive_int

HELP = "compact the built-in ~300k-token demo session to 15k tokens; write pages + index.html"
DESCRIPTION = """\
The main job on built-in defaults: a built-in ~300k-token coding-agent session
compacted to a 15,000-token budget with the Anthropic profile. Writes
input.json, compacted.json, report.json, pages/page-0001.png... and index.html
(open it in a browser) into --out. Reference: docs/cli.md#demo."""
EPILOG = """\
exit codes: 0 written and within the budget; 1 the session cannot fit --budget
(nothing is written); 2 bad usage or an output folder that cannot be written"""
DEMO_BUDGET = 15_000
DEMO_PROFILE = "anthropic"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.add_argument(
        "--out",
        default="glyphfold-out",
        metavar="DIR",
        help="output folder (default: ./glyphfold-out/)",
    )
    parser.add_argument(
        "--format",
        choices=("anthropic", "openai"),
        default="anthropic",
        help="wire format of the demo session (default: anthropic)",
    )
    parser.add_argument(
        "--budget",
        type=positive_int,
        default=DEMO_BUDGET,
        metavar="N",
        help=f"token budget (default {DEMO_BUDGET:,})",
    )


def run(args: argparse.Namespace) -> int:
    import time

    from glyphfold.commands._history_io import json_text, overflow_line
    from glyphfold.commands._output import output_dir, own_subdir, write_pages, write_text
    from glyphfold.commands._progress import progress
    from glyphfold.commands._report import report_html
    from glyphfold.commands._term import note
    from glyphfold.compaction.ladder.api import compact
    from glyphfold.errors import ContextOverflowError
    from glyphfold.samples.demo_session import demo_session

    output_dir(args.out, create=False)  # checked now, made only when there is a result
    with progress("building the demo session"):
        session = demo_session(format=args.format)
    t0 = time.perf_counter()
    try:
        with progress(f"compacting it to {args.budget:,} tokens"):
            result = compact(session, profile=DEMO_PROFILE, budget=args.budget)
    except ContextOverflowError as exc:
        note(f"glyphfold: {overflow_line(exc, 'give a larger --budget')}; nothing written")
        return 1
    elapsed_ms = (time.perf_counter() - t0) * 1000
    out = output_dir(args.out)
    report = result.report()
    report["elapsed_ms"] = round(elapsed_ms, 1)
    report["profile"] = DEMO_PROFILE
    with progress("writing the report"):
        pages = write_pages(result.pages, own_subdir(out, "pages"))
        html = report_html(
            result,
            session=session,
            page_files=[f"pages/{p.name}" for p in pages],
            profile=DEMO_PROFILE,
            elapsed_ms=elapsed_ms,
        )
        write_text(json_text(session), out / "input.json")
        write_text(json_text(result.messages), out / "compacted.json")
        write_text(json_text(report), out / "report.json")
        write_text(html, out / "index.html")
    if not getattr(args, "quiet", False):
        for line in result.summary_lines():
            note(line)
        note(f"wrote {out / 'index.html'} ({len(pages):,} page(s), {elapsed_ms:,.0f} ms)")
    return 0
