"""Snapshot rung: verbatim head + imaged middle + verbatim tail (SPEC §5.2-5.6).

The middle is cut at step boundaries (:mod:`glyphfold.compaction.history.steps`),
inside turns too: a single long turn has a middle. Its oldest steps are serialised
into a transcript (:mod:`.source`) and rendered into glyph pages with
``glyphfold.render``; the planner (:mod:`.plan`) images no more steps than
the target needs and, when even the whole middle as pages is too big, shortens the
pages in the order of SPEC §5.6. The newest real user message and pinned steps
stay text where they are: the imaged steps before and after them become one
snapshot each, so the model reads everything in the order it happened.

Re-render from source (SPEC §5.3): a snapshot message keeps its source text in
``meta["x_glyphfold"]`` and, in wire output, under the ``x_glyphfold`` key
(stripped by :func:`glyphfold.compaction.ladder.provider.provider_messages`). A
later pass finds earlier snapshots in its middle, unfolds their source in place,
and renders everything once more from text; pages are never made from pages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from glyphfold.checks import check_int
from glyphfold.compaction.history.model import History, Message
from glyphfold.compaction.history.steps import Regions, split_regions
from glyphfold.compaction.ladder.ledger import LedgerEntry
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome
from glyphfold.compaction.ladder.rungs.common import (
    kept_steps,
    regions,
    system_tokens,
    tool_names,
)
from glyphfold.compaction.ladder.rungs.snapshot.build import (
    SNAPSHOT_VERSION,
    BuildInput,
    Built,
    build,
    guide_text,
    is_snapshot,
    page_records,
)
from glyphfold.compaction.ladder.rungs.snapshot.factsheet import (
    FactsheetConfig,
    extract_facts,
    format_factsheet,
)
from glyphfold.compaction.ladder.rungs.snapshot.plan import Plan, Planner, Unit
from glyphfold.compaction.ladder.rungs.snapshot.source import Source
from glyphfold.compaction.ladder.rungs.transcribe import join
from glyphfold.compaction.ladder.transcript import TranscriptConfig, tool_output_spans
from glyphfold.errors import EncodeError, LayoutError
from glyphfold.render.profiles import Profile

__all__ = ["SNAPSHOT_VERSION", "Renderer", "Snapshot", "SnapshotConfig"]


# A glyphfold.render_text-compatible renderer: called as renderer(text, profile=...,
# shape=, font=, bits=, reflow=, collapse= (and ink= when SnapshotConfig.tool_ink is
# set)); its result has .pages whose items carry png, width, height, source_span and
# image_tokens like glyphfold.render.page.Page.
Renderer: TypeAlias = Callable[..., Any]

_BRIDGES = 7 + 24  # an assistant bridge before a snapshot and an acknowledgement after it


@dataclass(frozen=True, slots=True)
class SnapshotConfig:
    """Snapshot geometry and limits; ``None`` means "the profile's default"."""

    max_pages: int | None = None  # cap below the profile's images-per-request limit
    shape: str | None = None  # glyph shape name (glyphfold.render.shapes)
    font: str | None = None
    bits: int | None = None
    # Folding newlines into a glyph fills whole rows: code and logs have short
    # lines, and a half-empty page costs as much as a full one.
    reflow: bool = True
    # Fold whitespace that carries no meaning in a transcript (padding runs, blank
    # lines; indentation halved, so nesting stays visible): ~12% fewer image tokens
    # on real sessions, no measured loss of legibility (docs/rendering.md).
    collapse: bool = True
    # Print tool-result bodies in lighter ink (2-bit pages) so narrative stands out;
    # None: every character in full ink (1-bit pages, the smallest PNGs).
    tool_ink: float | None = None
    transcript: TranscriptConfig = dataclasses.field(default_factory=TranscriptConfig)
    factsheet: FactsheetConfig = dataclasses.field(default_factory=FactsheetConfig)
    max_fit_rounds: int = 3  # bounded re-plans when the built history misses the target
    # Start the imaged steps as late as the target allows: the older steps of the
    # needed range stay text when the newer ones save enough (old elided results are
    # one short line, as dear in pixels as in text). False: always image from the
    # oldest middle step, as 0.1 did.
    start_late: bool = True

    def __post_init__(self) -> None:
        if self.max_pages is not None:
            check_int("max_pages (or None)", self.max_pages, minimum=1, error=ValueError)
        if self.tool_ink is not None and not 0.0 < self.tool_ink <= 1.0:
            msg = f"tool_ink must be in (0, 1] or None, got {self.tool_ink}"
            raise ValueError(msg)
        check_int("max_fit_rounds", self.max_fit_rounds, minimum=1, error=ValueError)


def _default_renderer() -> Renderer:
    from glyphfold.render.api import render_text

    return render_text


class Snapshot:
    """Image the oldest steps of the middle into glyph pages."""

    name = "snapshot"
    model_free = True

    def __init__(self, config: SnapshotConfig | None = None, *, renderer: Renderer | None = None):
        self.config = config or SnapshotConfig()
        self._renderer = renderer

    @property
    def renderer(self) -> Renderer:
        return self._renderer or _default_renderer()

    def _options(self, text: str) -> dict[str, Any]:
        c = self.config
        opts: dict[str, Any] = {
            "shape": c.shape,
            "font": c.font,
            "bits": c.bits,
            "reflow": c.reflow,
            "collapse": c.collapse,
        }
        if c.tool_ink is not None:
            opts["ink"] = [(a, b, c.tool_ink) for a, b in tool_output_spans(text)]
        return opts

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        if not getattr(ctx.profile, "vision", False):
            return RungOutcome(history, None)  # a reader without vision: nothing to image
        try:
            return self._apply(history, ctx)
        except (EncodeError, LayoutError) as exc:
            # a page over the provider's byte limit (never at the default 1-bit pages),
            # or a page geometry the profile would downscale: documented fallback, the
            # rung steps aside and the next one runs
            before = ctx.tokens_of(history)
            return RungOutcome(
                history, LedgerEntry(self.name, before, before, note=f"skipped: {exc}")
            )

    def _units(
        self, history: History, reg: Regions, ctx: RungContext, costs: tuple[int, ...]
    ) -> tuple[list[Unit], Source]:
        kept = kept_steps(history, reg, ctx)
        units: list[Unit] = []
        imaged: list[Message] = []
        for k, s in enumerate(reg.middle_steps):
            keep = s.start in kept
            pos = () if keep else tuple(range(len(imaged), len(imaged) + len(s)))
            if not keep:
                imaged.extend(history.messages[s.start : s.end])
            cost = sum(costs[s.start : s.end])
            earlier = any(is_snapshot(m) for m in history.messages[s.start : s.end])
            units.append(Unit(k, s.start, s.end, keep, s.kind == "user", pos, cost, earlier))
        return units, Source(imaged, tool_names(history), self.config.transcript)

    def _page_cap(self, history: History, reg: Regions, units: list[Unit], profile: Profile) -> int:
        msgs = history.messages
        kept = [*msgs[: reg.head_end], *msgs[reg.tail_start :]]
        kept += [msgs[i] for u in units if u.kept for i in range(u.start, u.end)]
        cap = profile.max_images_per_request - sum(len(m.images) for m in kept)
        if self.config.max_pages is not None:
            cap = min(cap, self.config.max_pages)
        plan = self._planner_plan("x", profile)
        page_b64 = plan.max_png_bytes * 4 // 3 + 64
        # request bytes of what stays: text plus inline images (base64), a close bound
        other = sum(len(m.text) * 2 + sum(len(i.data or "") for i in m.images) for m in kept)
        room: int = (profile.max_request_bytes - other) // page_b64
        return max(0, min(cap, room))

    def _planner_plan(self, text: str, profile: Any) -> Any:
        from glyphfold.render.api import plan_text

        return plan_text(text, profile=profile, **self._options(text))

    def _overhead(self, ctx: RungContext) -> Callable[[str], int]:
        cfg = self.config.factsheet

        def overhead(text: str) -> int:
            facts = format_factsheet(extract_facts(text, config=cfg))
            guide = guide_text(999, len(text), 99, facts=bool(facts))
            return 8 + (len(guide) + len(facts) + 3) // 4 + _BRIDGES

        return overhead

    def _setup(
        self, history: History, reg: Regions, ctx: RungContext
    ) -> tuple[Planner, BuildInput] | None:
        """The planner and build input for one choice of tail (None: nothing to image)."""
        costs = ctx.message_costs(history)
        units, source = self._units(history, reg, ctx, costs)
        if not source.messages:
            return None  # no middle, or only kept steps in it
        profile = ctx.profile
        fixed = system_tokens(history, ctx) + sum(costs[: reg.head_end])
        fixed += sum(costs[reg.tail_start :])
        planner = Planner(
            units,
            source,
            fixed_tokens=fixed,
            target=ctx.target_tokens,
            page_cap=self._page_cap(history, reg, units, profile),
            plan=lambda t: self._planner_plan(t, profile),
            overhead=self._overhead(ctx),
            start_late=self.config.start_late,
        )
        inp = BuildInput(
            history=history,
            regions=reg,
            units=units,
            source=source,
            costs=costs,
            profile=profile,
            render=lambda t: self.renderer(t, profile=profile, **self._options(t)),
            factsheet=self.config.factsheet,
        )
        return planner, inp

    @staticmethod
    def _tails(history: History, reg: Regions) -> list[Regions]:
        """The run's tail, then ever shorter ones down to the newest step alone.

        The tail is a preference: a page, message or step is never dropped while
        imaging an older tail step would make room for it (SPEC §5.6).
        """
        n_steps = len(reg.tail_steps)
        out = [reg]
        while n_steps > 1:
            n_steps //= 2
            start = reg.tail_steps[-n_steps].start
            out.append(split_regions(history, tail_messages=len(history.messages) - start))
        return out

    def _apply(self, history: History, ctx: RungContext) -> RungOutcome:
        before = ctx.tokens_of(history)
        tails = self._tails(history, regions(history, ctx))
        found = None
        for k, reg in enumerate(tails):
            setup = self._setup(history, reg, ctx)
            if setup is None:
                continue
            found = self._fit(*setup, ctx, lossy=k == len(tails) - 1)
            if found is not None:
                break
        if found is None:
            note = "skipped: not even one page fits the room the head and tail leave"
            return RungOutcome(history, LedgerEntry(self.name, before, before, note=note))
        inp, plan, built, after = found
        if after >= before:  # pages of a short middle can cost more than its text
            note = f"skipped: the pages would cost {after - before:,} tokens more than the text"
            return RungOutcome(history, LedgerEntry(self.name, before, before, note=note))
        entry = self._entry(inp, plan, built, before, after, len(history.messages))
        return RungOutcome(built.history, entry, pages=tuple(built.pages))

    def _fit(
        self, planner: Planner, inp: BuildInput, ctx: RungContext, *, lossy: bool
    ) -> tuple[BuildInput, Plan, Built, int] | None:
        """Plan, build, price; re-plan (bounded) while the result misses the target or,
        having shortened the pages, leaves a page's worth of room unused.

        ``lossy=False``: only a plan that loses nothing (None otherwise).
        """
        target = ctx.target_tokens
        best: tuple[Plan, Built, int] | None = None
        over: tuple[Plan, Built, int] | None = None
        correction = 0
        for _ in range(self.config.max_fit_rounds):
            planner.target = target - correction
            plan = planner.lossless() or (planner.lossy() if lossy else None)
            if plan is None:
                break
            built = build(inp, plan)
            after = ctx.count(built.history)
            if after > target:
                over = over or (plan, built, after)
                if best is not None:
                    break
                correction += after - target + 16
                continue
            if best is None or after > best[2]:
                best = (plan, built, after)
            page = max((p.image_tokens for p in built.pages), default=0)
            if plan.treatment.lossless or target - after < page:
                break
            correction -= target - after - page // 4  # shortened more than needed: use the room
        found = best or (over if lossy else None)
        return None if found is None else (inp, *found)

    def _entry(
        self, inp: BuildInput, plan: Plan, built: Built, before: int, after: int, n: int
    ) -> LedgerEntry:
        reg = inp.regions
        units = inp.units
        imaged = [u for u in units[plan.first : plan.imaged] if not u.kept]
        whole = {k: len(_unit_text0(inp, units[k])) for rt in plan.runs for k in rt.units}
        t = plan.treatment
        dropped = sum(whole[k] for k in t.dropped) + (t.cut[1] if t.cut else 0)
        final = sum(len(rt.text) for rt in plan.runs)
        extra = {
            "head_messages": reg.head_end,
            "tail_messages": n - reg.tail_start,
            "tail_steps": len(reg.tail_steps),
            "imaged_steps": len(imaged),
            "text_steps": plan.first + sum(1 for u in units[plan.imaged :]),
            "leading_text_steps": plan.first,  # old steps before the imaged range, as text
            "kept_steps": sum(1 for u in units[plan.first : plan.imaged] if u.kept),
            "segments": len(plan.runs),
            "lossy": not plan.treatment.lossless,
            "dropped_chars": dropped,
            "compressed_chars": max(0, sum(whole.values()) - final - dropped),
            "source_chars": final,
            "facts": built.facts,
            "missing_glyphs": {f"U+{cp:04X}": k for cp, k in sorted(built.missing.items())},
            "hints": list(built.hints),
        }
        note = (
            f"{len(imaged):,} of {len(units):,} middle steps -> {len(built.pages):,} page(s)"
            f" in {len(plan.runs):,} snapshot(s)"
        )
        if extra["lossy"]:
            note += "; pages shortened to fit (see dropped_chars, compressed_chars)"
        if built.missing:
            note += f"; {sum(built.missing.values()):,} char(s) no font covers"
        return LedgerEntry(
            self.name, before, after, tuple(built.removed), page_records(built.pages), note, extra
        )


def _unit_text0(inp: BuildInput, u: Unit) -> str:
    """A unit's transcript at the configured caps (what the pages hold when nothing is lost)."""
    return join([inp.source.piece(p) for p in u.positions])[0]
