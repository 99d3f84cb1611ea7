"""``glyphfold context``: a ``/context``-style breakdown of where a history's tokens go."""

from __future__ import annotations

import argparse
from typing import Any

from glyphfold.commands._args import add_json, non_negative_int, positive_int

HELP = "show where a history's tokens go (by role, by content kind, largest messages, per rung)"
DESCRIPTION = """\
Show where a history's tokens go: by role, by content kind (text, tool calls,
tool results, images, framing; the rows add up to the total), the largest
messages, and what each free rung would save alone (a dry run each). Every
image is priced, as `compact` counts. Reference: docs/cli.md#context."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input

    add_input(parser)
    parser.add_argument(
        "--budget",
        type=positive_int,
        metavar="N",
        help="token budget for the per-rung estimate (default: the default budget, "
        "32,000 capped by the profile's window; docs/budget.md)",
    )
    parser.add_argument(
        "--top",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="how many of the largest messages to list (default 10)",
    )
    add_json(parser, "tokens, budget, by role, by kind, largest messages, per-rung savings")
    parser.epilog = "exit codes: 0 printed; 2 bad usage or bad input"


def _rungs(h: Any, profile: Any, budget: int) -> list[dict[str, Any]]:
    from glyphfold.commands._progress import progress
    from glyphfold.compaction.ladder.api import compact

    rows = []
    rungs = ("elide", "strip", "snapshot")
    for k, rung in enumerate(rungs, 1):
        with progress(f"dry run {k}/{len(rungs)}: what {rung} alone would save"):
            r = compact(h, profile=profile, budget=budget, rungs=(rung,), dry_run=True)
        note = r.ledger[0].summary_line().split(": ", 1)[1] if r.ledger else "nothing to do"
        rows.append({"rung": rung, "tokens_saved": r.tokens_before - r.tokens_after, "how": note})
    return rows


def context_data(h: Any, *, profile: Any, budget: int, top: int) -> dict[str, Any]:
    """Every figure of the breakdown of a canonical History (what --json prints)."""
    from glyphfold.commands._history_io import CLI_IMAGE_POLICY, pricing_profile
    from glyphfold.commands._progress import progress
    from glyphfold.compaction.history.breakdown import token_breakdown

    with progress("pricing every message"):
        bd = token_breakdown(h, profile=pricing_profile(profile), image_policy=CLI_IMAGE_POLICY)
    costs = bd.costs
    total = bd.total
    rows = []
    for i in bd.largest(top):
        m = h.messages[i]
        what = " ".join(m.text[:96].split())[:48] or (
            ", ".join(f"call {c.name}" for c in m.tool_calls) or f"{len(m.images)} image(s)"
        )
        rows.append({"index": i, "role": m.role, "tokens": costs.messages[i], "starts_with": what})
    figures = bd.as_dict()
    return {
        "format": h.format,
        "messages": len(h.messages),
        "tokens": total,
        "budget": budget,
        "fits": total <= budget,
        "over_by": max(0, total - budget),
        "by_role": figures["by_role"],
        "by_kind": figures["by_kind"],
        "largest": rows,
        "rungs": _rungs(h, profile, budget),
    }


def _table(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    cells = [tuple(str(c) for c in header)] + [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def fmt(r: tuple[str, ...]) -> str:
        # first column left-aligned (names), numbers right-aligned
        return "  ".join(
            c.ljust(w)
            if i == 0 or (i == len(r) - 1 and not c.replace(",", "").replace("-", "").isdigit())
            else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()

    return [title, fmt(cells[0]), "  ".join("-" * w for w in widths), *map(fmt, cells[1:]), ""]


def context_lines(d: dict[str, Any]) -> list[str]:
    """The human report of :func:`context_data`."""
    from glyphfold.commands._term import escape

    total = d["tokens"]

    def pct(n: int) -> str:
        return f"{100 * n / total:.1f}%" if total else "-"

    verdict = "fits" if d["fits"] else f"over by {d['over_by']:,}"
    out = [
        f"history: {d['messages']:,} messages, {total:,} tokens (estimate: docs/budget.md, "
        f"every image priced); budget {d['budget']:,}; {verdict}",
        "",
    ]
    out += _table(
        "by role",
        ("role", "messages", "tokens", "share"),
        [
            (k, f"{v['messages']:,}", f"{v['tokens']:,}", pct(v["tokens"]))
            for k, v in d["by_role"].items()
        ],
    )
    out += _table(
        "by content kind",
        ("kind", "tokens", "share"),
        [(k, f"{v:,}", pct(v)) for k, v in d["by_kind"].items()],
    )
    rows = [
        (r["index"], r["role"], f"{r['tokens']:,}", escape(r["starts_with"])) for r in d["largest"]
    ]
    out += _table(f"largest {len(rows)} messages", ("#", "role", "tokens", "starts with"), rows)
    rung_rows = [(r["rung"], f"{r['tokens_saved']:,}", r["how"][:90]) for r in d["rungs"]]
    rung_rows.append(("summary", "?", "one model call; run `glyphfold compact --summarizer ...`"))
    out += _table(
        "what each rung would save (alone, dry run)", ("rung", "tokens", "how"), rung_rows
    )
    return out


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import load
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import print_json, say
    from glyphfold.compaction.history.budget import effective_context_budget

    prof = check_profile(args.profile)
    with progress(f"reading {args.input}"):
        h, _ = load(args.input, format=args.format)
    budget = args.budget or effective_context_budget(context_window=prof.context_window)
    data = context_data(h, profile=prof, budget=budget, top=args.top)
    if args.json:
        print_json(data)
    else:
        say("\n".join(context_lines(data)))
    return 0
