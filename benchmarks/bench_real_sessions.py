"""The ladder on real agent sessions: compact at 50% / 20% of the estimate and recover().

Run: ``python benchmarks/bench_real_sessions.py [DIR ...] [--profile P] [--quiet]``
(default DIR: ``../shared/realdata`` next to the repository, or ``$GLYPHFOLD_REALDATA``).
Every ``*.json`` file in DIR that holds a history (an OpenAI message list or an
Anthropic ``{"system", "messages"}`` dict) is one session. Per session and call the
table shows: raised (``R``; ``r`` when the floor exceeds the budget: the head, the
newest real user message and the newest step with the breadcrumbs that mark the cuts,
``glyphfold.compaction.ladder.api.floor_tokens``, which no model-free ladder can go
below), tokens after / budget, pages, chars lost (dropped, cut or shortened on the
pages), milliseconds; then totals, where "bare part" is the floor without breadcrumbs.
Every output is checked: provider validator; head, newest real user message and newest
step verbatim; tokens_after <= budget; and, whenever anything was lost, unused budget
below the cost of one page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glyphfold.compaction.history.messages import FORMATS, coerce, to_wire
from glyphfold.compaction.history.model import History
from glyphfold.compaction.history.steps import split_regions
from glyphfold.compaction.history.tokens import token_costs
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.api import compact, floor_tokens, recover
from glyphfold.errors import ContextOverflowError, GlyphfoldError
from glyphfold.render.profiles import get_profile

CALLS = ("c50", "c20", "rec")


def default_dirs() -> list[Path]:
    env = os.environ.get("GLYPHFOLD_REALDATA")
    if env:
        return [Path(env)]
    return [
        Path(__file__).resolve().parents[2] / "shared" / "realdata",
        Path("/work/shared/realdata"),
    ]


def load_sessions(dirs: list[Path]) -> list[tuple[str, History]]:
    """(name, canonical history) for every history file of ``dirs`` (other JSON is
    skipped). A file named ``<name>.<format>.json`` is read in that format: a session
    of plain user/assistant text fits several formats and is refused without it."""
    out: list[tuple[str, History]] = []
    for d in dirs:
        for p in sorted(d.glob("*.json")):
            name = p.name.removesuffix(".json")
            suffix = name.rsplit(".", 1)[-1]
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
                h = coerce(data, format=suffix if suffix in FORMATS else "auto")[0]
            except (ValueError, GlyphfoldError):
                continue
            out.append((name, h))
        if out:
            break
    return out


def bare_minimum(h: Any, profile: Any) -> int:
    """Head + newest real user message + newest step, without the breadcrumbs."""
    costs = token_costs(h, profile=profile)
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    keep = set(range(reg.head_end)) | set(range(reg.tail_start, len(h.messages)))
    if reg.newest_user is not None:
        keep.add(reg.newest_user)
    return costs.system + sum(costs.messages[i] for i in keep)


def page_cost(profile: Any) -> int:
    from glyphfold.render.api import plan_text

    return max(plan_text("x" * 200_000, profile=profile, reflow=True).page_tokens)


@dataclass
class Outcome:
    raised: bool = False
    floor_over: bool = False  # the floor (with the breadcrumbs marking the cuts) exceeds it
    bare_over: bool = False  # head + newest real user message + newest step alone exceed it
    tokens_after: int = 0
    budget: int = 0
    pages: int = 0
    dropped_chars: int = 0
    ms: float = 0.0
    problems: list[str] = field(default_factory=list)


def dropped_chars(result: Any) -> int:
    n = 0
    for e in result.ledger:
        n += int(e.extra.get("dropped_chars", 0)) + int(e.extra.get("compressed_chars", 0))
        n += sum(r.chars for r in e.removed if r.dest == "trimmed")
    return n


def check(result: Any, h: Any, budget: int, page_tokens: int) -> list[str]:
    """What the output gets wrong (empty: nothing)."""
    problems = [f"invalid: {v}" for v in find_violations(result.messages)[:1]]
    out = coerce(result.messages)[0]
    src = to_wire(h)
    dst = to_wire(out)
    src_m = src["messages"] if isinstance(src, dict) else src
    dst_m = dst["messages"] if isinstance(dst, dict) else dst
    costs = token_costs(h, image_policy="all")
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    if dst_m[: reg.head_end] != src_m[: reg.head_end]:
        problems.append("head changed")
    if reg.newest_user is not None and src_m[reg.newest_user] not in dst_m:
        problems.append("newest user message not verbatim")
    n_tail = len(src_m) - reg.tail_start
    if n_tail and dst_m[-n_tail:] != src_m[-n_tail:]:
        problems.append("newest step not verbatim")
    if result.tokens_after > budget:
        problems.append(f"over budget {result.tokens_after} > {budget}")
    if dropped_chars(result) and budget - result.tokens_after >= page_tokens:
        problems.append(f"waste: {budget - result.tokens_after} unused after dropping")
    return problems


def run_call(
    call: str, h: Any, estimate: int, floors: tuple[int, int], profile: Any, pc: int
) -> Outcome:
    budget = {"c50": estimate // 2, "c20": estimate // 5}.get(call, 0)
    floor, bare = floors
    t0 = time.perf_counter()
    try:
        if call == "rec":
            result = recover(h, profile=profile)
            budget = result.budget
        else:
            result = compact(h, budget=max(budget, 1), profile=profile)
    except ContextOverflowError as exc:
        ms = (time.perf_counter() - t0) * 1000
        if call == "rec":
            budget = exc.window or (estimate * 2 // 3)
        return Outcome(
            raised=True, floor_over=floor > budget, bare_over=bare > budget, budget=budget, ms=ms
        )
    ms = (time.perf_counter() - t0) * 1000
    return Outcome(
        floor_over=floor > budget,
        bare_over=bare > budget,
        tokens_after=result.tokens_after,
        budget=budget,
        pages=len(result.pages),
        dropped_chars=dropped_chars(result),
        ms=ms,
        problems=check(result, h, budget, pc),
    )


def fmt(o: Outcome) -> str:
    if o.raised:
        return f"{'r' if o.floor_over else 'R'} {o.budget:,}"
    flag = "!" if o.problems else ""
    return f"{o.tokens_after:,}/{o.budget:,} p{o.pages} d{o.dropped_chars:,} {o.ms:.0f}ms{flag}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="directories of history files")
    ap.add_argument("--profile", default="anthropic")
    ap.add_argument("--quiet", action="store_true", help="totals only")
    args = ap.parse_args(argv)
    sessions = load_sessions(args.dirs or default_dirs())
    if not sessions:
        print("no history files found (give a directory)", file=sys.stderr)
        return 2
    profile = get_profile(args.profile)
    from glyphfold.render.warm import warm_up

    warm_up(profile=profile)
    pc = page_cost(profile)
    rows: list[tuple[str, str, int, int, dict[str, Outcome]]] = []
    for name, h in sessions:
        est = token_costs(h, profile=profile, image_policy="all").total
        floor = floor_tokens(h, profile=profile)
        floors = (floor, bare_minimum(h, profile))
        outs = {c: run_call(c, h, est, floors, profile, pc) for c in CALLS}
        rows.append((name, h.format, est, floor, outs))
        if not args.quiet:
            cells = " | ".join(fmt(outs[c]) for c in CALLS)
            print(f"{name:<52} {h.format[:4]} {est:>8,} {floor:>7,} | {cells}")
            for c in CALLS:
                for p in outs[c].problems:
                    print(f"    {c}: {p}")
    print_totals(rows, pc)
    return 0


def print_totals(rows: list[Any], pc: int) -> None:
    print(f"\npage cost {pc:,} tokens; {len(rows)} histories")
    print(
        "| format | call | calls | raised | raised, floor fits | raised, bare part fits "
        "| invalid | not verbatim | over budget | waste | median ms | max ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for fmt_name in ("openai", "anthropic", "all"):
        for c in (*CALLS, "all"):
            outs = [
                o
                for _, f, _, _, d in rows
                for k, o in d.items()
                if (fmt_name == "all" or f == fmt_name) and (c == "all" or k == c)
            ]
            if not outs:
                continue
            probs = [p for o in outs for p in o.problems]
            ms = [o.ms for o in outs]
            print(
                f"| {fmt_name} | {c} | {len(outs)} | {sum(o.raised for o in outs)} "
                f"| {sum(o.raised and not o.floor_over for o in outs)} "
                f"| {sum(o.raised and not o.bare_over for o in outs)} "
                f"| {sum(p.startswith('invalid') for p in probs)} "
                f"| {sum('verbatim' in p or 'changed' in p for p in probs)} "
                f"| {sum(p.startswith('over budget') for p in probs)} "
                f"| {sum(p.startswith('waste') for p in probs)} "
                f"| {statistics.median(ms):.1f} | {max(ms):.0f} |"
            )


if __name__ == "__main__":
    sys.exit(main())
