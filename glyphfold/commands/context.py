"""``glyphfold context``: a ``/context``-style breakdown of where a history's tokens go."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

HELP = "show where a history's tokens go (by role, by content kind, largest messages, per rung)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from glyphfold.commands._history_io import add_input

    add_input(parser)
    parser.add_argument(
        "--budget",
        type=int,
        metavar="N",
        help="token budget for the per-rung estimate (default: SPEC §3.1 "
        "default for the profile's window)",
    )
    parser.add_argument(
        "--top",
        type=int,
        default=10,
        metavar="N",
        help="how many of the largest messages to list (default 10)",
    )


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


def breakdown(history: Any, *, profile: Any, budget: int, top: int, format: str) -> list[str]:
    """The report lines (pure: used by the command and the tests)."""
    from glyphfold.compaction.history.messages import Image, ToolCall, ToolResult, coerce
    from glyphfold.compaction.history.tokens import (
        FRAMING_TOKENS,
        token_costs,
    )
    from glyphfold.compaction.ladder.api import compact
    from glyphfold.errors import ContextOverflowError

    h, _ = coerce(history, format=format)
    # priced as compact() prices: every image left in the wire history is billed
    costs = token_costs(h, profile=profile, image_policy="all")
    total = costs.total
    by_role: dict[str, list[int]] = {}
    for m, c in zip(h.messages, costs.messages, strict=True):
        r = by_role.setdefault(m.role, [0, 0])
        r[0] += 1
        r[1] += c
    if costs.system:
        by_role["system (top-level)"] = [1, costs.system]
    # per content kind, priced the way the total prices each message; the rows add
    # up to the total
    kinds = {"text": 0, "tool calls": 0, "tool results": 0, "images": 0, "framing": 0}
    for m, cost in zip(h.messages, costs.messages, strict=True):
        parts = {"text": 0, "tool calls": 0, "tool results": 0, "images": 0}
        for b in m.blocks:
            if isinstance(b, ToolResult):
                text_only = dataclasses.replace(
                    b, content=tuple(c for c in b.content if not isinstance(c, Image))
                )
                parts["tool results"] += _block_tokens(m.role, text_only, profile)
                for c in b.content:
                    if isinstance(c, Image):
                        parts["images"] += _block_tokens(m.role, c, profile)
            elif isinstance(b, ToolCall):
                parts["tool calls"] += _block_tokens(m.role, b, profile)
            elif isinstance(b, Image):
                parts["images"] += _block_tokens(m.role, b, profile)
            else:
                parts["text"] += _block_tokens(m.role, b, profile)
        # whatever the per-block figures miss (rounding, images not sent, bytes vs
        # chars of old results) is settled against the message's real cost
        body = max(cost - FRAMING_TOKENS, 0)
        unpriced = sum(parts.values()) - body
        if unpriced > 0:
            take = min(unpriced, parts["images"])
            parts["images"] -= take
            unpriced -= take
        biggest = max(parts, key=lambda k: parts[k])
        parts[biggest] -= unpriced
        for k, v in parts.items():
            kinds[k] += v
        kinds["framing"] += cost - body
    kinds["text"] += costs.system  # the Anthropic top-level system prompt

    def pct(n: int) -> str:
        return f"{100 * n / total:.1f}%" if total else "-"

    verdict = "fits" if total <= budget else f"over by {total - budget:,}"
    out = [
        f"history: {len(h.messages)} messages, {total:,} tokens (estimate: SPEC §3.4, every image "
        f"priced); "
        f"budget {budget:,}; {verdict}",
        "",
    ]
    out += _table(
        "by role",
        ("role", "messages", "tokens", "share"),
        [(k, v[0], f"{v[1]:,}", pct(v[1])) for k, v in sorted(by_role.items())],
    )
    out += _table(
        "by content kind",
        ("kind", "tokens", "share"),
        [(k, f"{v:,}", pct(v)) for k, v in kinds.items()],
    )
    largest = sorted(range(len(h.messages)), key=lambda i: (-costs.messages[i], i))[:top]
    rows = []
    for i in largest:
        m = h.messages[i]
        what = m.text[:48].replace("\n", " ") or (
            ", ".join(f"call {c.name}" for c in m.tool_calls) or f"{len(m.images)} image(s)"
        )
        rows.append((i, m.role, f"{costs.messages[i]:,}", what))
    out += _table(f"largest {len(rows)} messages", ("#", "role", "tokens", "starts with"), rows)
    rung_rows = []
    for rung in ("elide", "strip", "snapshot"):
        try:
            r = compact(h, profile=profile, budget=budget, rungs=(rung,), dry_run=True)
        except ContextOverflowError as exc:  # pragma: no cover - dry runs do not raise
            rung_rows.append((rung, "-", str(exc)[:60]))
            continue
        saved = r.tokens_before - r.tokens_after
        note = r.ledger[0].summary_line().split(": ", 1)[1] if r.ledger else "nothing to do"
        rung_rows.append((rung, f"{saved:,}", note[:90]))
    rung_rows.append(("summary", "?", "one model call; run `glyphfold compact --summarizer ...`"))
    out += _table(
        "what each rung would save (alone, dry run)", ("rung", "tokens", "how"), rung_rows
    )
    return out


def _block_tokens(role: str, block: Any, profile: Any) -> int:
    from glyphfold.compaction.history.messages import Message
    from glyphfold.compaction.history.tokens import FRAMING_TOKENS, estimate_message_tokens

    one = Message(role, (block,))
    n = estimate_message_tokens(one, images_sent=True, tool_results_by_bytes=False, profile=profile)
    return n - FRAMING_TOKENS


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._history_io import read_history
    from glyphfold.compaction.history.budget import effective_context_budget
    from glyphfold.render.profiles import get_profile

    history = read_history(args.input)
    prof = get_profile(args.profile)
    budget = args.budget or effective_context_budget(context_window=prof.context_window)
    for line in breakdown(history, profile=prof, budget=budget, top=args.top, format=args.format):
        print(line)
    return 0
