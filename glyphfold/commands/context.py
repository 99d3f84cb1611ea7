"""``glyphfold context``: a ``/context``-style breakdown of where a history's tokens go."""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

from glyphfold.commands._args import add_json, non_negative_int, positive_int

HELP = "show where a history's tokens go (by role, by content kind, largest messages, per rung)"
DESCRIPTION = """\
Show where a history's tokens go: by role, by content kind (text, tool calls,
tool results, images, framing; the rows add up to the total), the largest
messages, and what each free rung would save alone (a dry run each). Every
image is priced, as `compact` counts. Reference: docs/cli.md#context."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input

    add_input(parser, profile_default=None)
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="the model the history is for: its window (and, without --profile, its "
        "profile) from the built-in table (docs/serve.md lists it)",
    )
    parser.add_argument(
        "--window",
        type=positive_int,
        metavar="N",
        help="the model's context window in tokens (default: --model's, else the window "
        "of the profile's model, e.g. 200,000 for anthropic)",
    )
    parser.add_argument(
        "--budget",
        type=positive_int,
        metavar="N",
        help="token budget for the per-rung estimate (default: compact's default budget, "
        "32,000 capped by the window; docs/budget.md)",
    )
    parser.add_argument(
        "--top",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="how many of the largest messages to list (default 10)",
    )
    add_json(parser, "tokens, window, budget, by role, by kind, largest messages, per rung")
    parser.epilog = "exit codes: 0 printed; 2 bad usage or bad input"


class Window(NamedTuple):
    """The window a history is measured against, and where it came from (said aloud)."""

    tokens: int | None
    source: str  # "--window", "--model NAME (built-in table)", "the anthropic profile's model"


def resolve_window(args: argparse.Namespace) -> tuple[str, Window]:
    """(profile name, window) from --model, --window and --profile."""
    from glyphfold.errors import InputError
    from glyphfold.render.profiles import get_profile
    from glyphfold.serve.windows import KNOWN_MODELS, resolve_model

    model = None
    if args.model is not None:
        model = resolve_model(args.model, provider_profile="anthropic", windows={}, profiles={})
        if model.window is None:
            msg = (
                f"--model {args.model}: not in the built-in table of "
                f"{len(KNOWN_MODELS):,} models; give its window with --window N"
            )
            raise InputError(msg)
    profile = args.profile or (model.profile if model is not None else "anthropic")
    prof = get_profile(profile)
    if args.window is not None:
        return profile, Window(args.window, "--window")
    if model is not None:
        return profile, Window(model.window, f"{args.model}, built-in table")
    if prof.context_window is not None:
        source = f"{prof.model} via the {profile} profile; --model/--window set yours"
        return profile, Window(prof.context_window, source)
    return profile, Window(None, f"the {profile} profile names no model; --model/--window set it")


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


def context_data(
    h: Any, *, profile: Any, budget: int, top: int, window: Window | None = None
) -> dict[str, Any]:
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
    win = window.tokens if window is not None else None
    return {
        "format": h.format,
        "messages": len(h.messages),
        "tokens": total,
        "window": win,
        "window_source": window.source if window is not None else None,
        "window_percent": round(100 * total / win, 1) if win else None,
        "fits_window": total <= win if win else None,
        "over_window_by": max(0, total - win) if win else None,
        "budget": budget,
        "fits": total <= budget,
        "over_by": max(0, total - budget),
        "by_role": figures["by_role"],
        "by_kind": figures["by_kind"],
        "largest": rows,
        "rungs": _rungs(h, profile, budget),
    }


def _is_number(cell: str) -> bool:
    return cell in ("?", "-") or cell.replace(",", "").replace(".", "").rstrip("%").isdigit()


def _table(
    title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]], *, width: int
) -> list[str]:
    """A plain-text table: names left, numbers right; a long last cell wraps at a space,
    under its own column, never cut (a terminal of ``width`` columns shows every word)."""
    import textwrap

    cells = [tuple(str(c) for c in header)] + [tuple(str(c) for c in r) for r in rows]
    last = len(header) - 1
    widths = [max(len(r[i]) for r in cells) for i in range(last)]
    indent = sum(widths) + 2 * last
    room = max(24, width - indent)
    widths.append(min(room, max(len(r[last]) for r in cells)))
    numeric = [all(_is_number(r[i]) for r in cells[1:] if r[i]) for i in range(last + 1)]

    def fmt(r: tuple[str, ...]) -> list[str]:
        head = "  ".join(
            c.rjust(w) if numeric[i] else c.ljust(w)
            for i, (c, w) in enumerate(zip(r[:last], widths, strict=False))
        )
        tail = [r[last]] if numeric[last] else textwrap.wrap(r[last], room) or [""]
        pad = " " * indent
        first = f"{head}  {tail[0].rjust(widths[last]) if numeric[last] else tail[0]}".rstrip()
        return [first, *(f"{pad}{t}" for t in tail[1:])]

    body = [line for r in cells[1:] for line in fmt(r)]
    return [title, *fmt(cells[0]), "  ".join("-" * w for w in widths), *body, ""]


def _verdict(total: int, limit: int) -> str:
    share = f"{100 * total / limit:.1f}%"
    return f"{share}, fits" if total <= limit else f"{share}, over by {total - limit:,}"


def context_lines(d: dict[str, Any], *, width: int = 100) -> list[str]:
    """The human report of :func:`context_data` (tables wrapped to ``width`` columns)."""
    from glyphfold.commands._term import count, escape

    total = d["tokens"]

    def pct(n: int) -> str:
        return f"{100 * n / total:.1f}%" if total else "-"

    if d["window"]:
        window = f"window   {d['window']:,} tokens ({d['window_source']}): "
        window += _verdict(total, d["window"])
    else:
        window = f"window   unknown ({d['window_source']})"
    out = [
        f"history  {count(d['messages'], 'message')}, {count(total, 'token')} "
        "(estimate, every image priced: docs/budget.md)",
        window,
        f"budget   {d['budget']:,} tokens (compact's target; --budget N): "
        + _verdict(total, d["budget"]),
        "",
    ]
    out += _table(
        "by role",
        ("role", "messages", "tokens", "share"),
        [
            (k, f"{v['messages']:,}", f"{v['tokens']:,}", pct(v["tokens"]))
            for k, v in d["by_role"].items()
        ],
        width=width,
    )
    out += _table(
        "by content kind",
        ("kind", "tokens", "share"),
        [(k, f"{v:,}", pct(v)) for k, v in d["by_kind"].items()],
        width=width,
    )
    rows = [
        (r["index"], r["role"], f"{r['tokens']:,}", escape(r["starts_with"])) for r in d["largest"]
    ]
    out += _table(
        f"largest {count(len(rows), 'message')}",
        ("#", "role", "tokens", "starts with"),
        rows,
        width=width,
    )
    rung_rows = [(r["rung"], f"{r['tokens_saved']:,}", r["how"]) for r in d["rungs"]]
    rung_rows.append(("summary", "?", "one model call; run `glyphfold compact --summarizer ...`"))
    out += _table(
        "what each rung would save (alone, dry run)",
        ("rung", "tokens", "how"),
        rung_rows,
        width=width,
    )
    return out


def run(args: argparse.Namespace) -> int:
    import shutil

    from glyphfold.commands._args import check_profile
    from glyphfold.commands._history_io import load
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import print_json, say
    from glyphfold.compaction.history.budget import effective_context_budget
    from glyphfold.compaction.history.messages import plain_format

    profile, window = resolve_window(args)
    prof = check_profile(profile)
    with progress(f"reading {args.input}"):
        # the estimate prices plain text alike in every format (none is refused here)
        h, _ = load(args.input, format=args.format, plain=plain_format(prof) or "openai")
    budget = args.budget or effective_context_budget(context_window=window.tokens)
    data = context_data(h, profile=prof, budget=budget, top=args.top, window=window)
    data["profile"] = profile
    if args.json:
        print_json(data)
    else:
        width = shutil.get_terminal_size((100, 24)).columns
        say("\n".join(context_lines(data, width=width)))
    return 0
