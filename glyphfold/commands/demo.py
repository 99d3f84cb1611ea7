"""``glyphfold demo``: compact the built-in long coding session and write an HTML report.

The main job on built-in defaults: a ~300k-token agent session (generated
deterministically by :mod:`glyphfold.samples.demo_session`) compacted to a
60k budget with the Anthropic profile. Writes ``input.json``,
``compacted.json``, ``pages/page-0001.png``..., ``report.json`` and
``index.html`` (before/after tokens, the ledger, the pages) into ``--out``.
"""

from __future__ import annotations

import argparse
import sys

HELP = "compact the built-in ~300k-token demo session to 60k tokens; write pages + index.html"
DEMO_BUDGET = 60_000
DEMO_PROFILE = "anthropic"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        default="glyphfold-out",
        metavar="DIR",
        help="output directory (default: ./glyphfold-out/)",
    )
    parser.add_argument(
        "--format",
        choices=("anthropic", "openai"),
        default="anthropic",
        help="wire format of the demo session (default: anthropic)",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEMO_BUDGET,
        metavar="N",
        help=f"token budget (default {DEMO_BUDGET:,})",
    )


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from glyphfold.commands._history_io import write_json, write_pages
    from glyphfold.commands._report import report_html
    from glyphfold.compaction.ladder.api import compact
    from glyphfold.samples.demo_session import demo_session

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        msg = f"cannot write to {out}: {exc.strerror or exc}"
        raise OSError(msg) from None
    session = demo_session(format=args.format)
    t0 = time.perf_counter()
    result = compact(session, profile=DEMO_PROFILE, budget=args.budget)
    elapsed_ms = (time.perf_counter() - t0) * 1000
    write_json(session, str(out / "input.json"))
    write_json(result.messages, str(out / "compacted.json"))
    report = result.report()
    report["elapsed_ms"] = round(elapsed_ms, 1)
    report["profile"] = DEMO_PROFILE
    write_json(report, str(out / "report.json"))
    pages = write_pages(result.pages, out / "pages")
    html = report_html(
        result,
        session=session,
        page_files=[f"pages/{p.name}" for p in pages],
        profile=DEMO_PROFILE,
        elapsed_ms=elapsed_ms,
    )
    (out / "index.html").write_text(html, encoding="utf-8")
    for line in result.summary_lines():
        print(line, file=sys.stderr)
    print(
        f"wrote {out / 'index.html'} ({len(pages)} page(s), {elapsed_ms:.0f} ms)", file=sys.stderr
    )
    return 0 if result.fits else 1
