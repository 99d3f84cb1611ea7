"""Snapshot rung: verbatim head + imaged middle + verbatim tail (SPEC §5.2-5.6).

The middle is cut at step boundaries (:mod:`glyphfold.compaction.history.steps`),
inside turns too: a single long turn has a middle. Its oldest steps are serialised
into a transcript (:mod:`.source`) and rendered into glyph pages with
``glyphfold.render``; the planner (:mod:`.plan`) images no more steps than
the target needs and, when even the whole middle as pages is too big, shortens the
pages in the order of SPEC §5.6. The newest real user message and pinned steps
stay text where they are: the imaged steps before and after them become one
snapshot each, so the model reads everything in the order it happened.

Blocks, frozen (SPEC §5.10): a snapshot message is a *block* (reading guide, pages,
factsheet for one run of old steps); it keeps its full source text and a stable
block id in ``meta["x_glyphfold"]`` and, in wire output, under the ``x_glyphfold``
key (stripped by :func:`glyphfold.compaction.ladder.provider.provider_messages`). On a
later pass the blocks already sent, and everything before them, are frozen (the
ladder pins them, :func:`glyphfold.compaction.ladder.loop.frozen_prefix`): kept byte for
byte in place and priced as they are, and only the newly old steps after them are
imaged, as a new block. Only when that cannot fit losslessly (the per-request image
limit, or the target) are the blocks merged: unfolded to their source in place and
rendered once more from text with the rest (SPEC §5.3: pages are never made from
pages); the ledger entry says which (``frozen_blocks``, ``new_blocks``,
``merged_blocks``, ``merge_reason``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
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
    KINDS,
    Fact,
    FactScans,
    FactsheetConfig,
    extract_facts,
    format_factsheet,
)
from glyphfold.compaction.ladder.rungs.snapshot.plan import Plan, Planner, Unit
from glyphfold.compaction.ladder.rungs.snapshot.source import Source, cut_marker
from glyphfold.compaction.ladder.summarizers import check_focus
from glyphfold.compaction.ladder.transcript import TranscriptConfig, tool_output_spans
from glyphfold.errors import EncodeError, LayoutError
from glyphfold.render.config import Setup, page_size, resolve_setup
from glyphfold.render.layout import least_cells
from glyphfold.render.options import options_of
from glyphfold.render.profiles import Profile

__all__ = ["SNAPSHOT_VERSION", "Renderer", "Snapshot", "SnapshotConfig"]


# A glyphfold.render_text-compatible renderer: called as renderer(text, profile=...,
# shape=, font=, bits=, reflow=, collapse= (and ink= when SnapshotConfig.tool_ink is
# set)); its result has .pages whose items carry png, width, height, source_span and
# image_tokens like glyphfold.render.page.Page.
Renderer: TypeAlias = Callable[..., Any]

# _setup's positional arguments for one choice: history, tail split, context, shape,
# user messages as text, the shared piece cache, the shared memo
_Choice: TypeAlias = tuple[
    History, Regions, RungContext, "str | None", str, "dict[tuple[int, int], str]", "_Memo"
]

_BRIDGES = 7 + 24  # an assistant bridge before a snapshot and an acknowledgement after it
_LADDER = ("large", "regular", "dense")  # the registered shapes a ladder may step through


@dataclass(frozen=True, slots=True)
class SnapshotConfig:
    """Snapshot geometry and limits; ``None`` means "the profile's default"."""

    max_pages: int | None = None  # cap below the profile's images-per-request limit
    shape: str | None = None  # glyph shape name (glyphfold.render.shapes); set: no shape ladder
    # The shape ladder (SPEC §5.9): when the pages of one shape cannot hold the middle
    # losslessly, the next, denser shape is tried before any word is cut; words are cut
    # only at the last. None: the profile's default shape, then the next denser one
    # (regular -> dense, large -> regular). Ignored when ``shape`` or ``font`` is set.
    shapes: tuple[str, ...] | None = None
    # Real user messages of the middle are the task's own words: they stay text while the
    # target allows (each splits the pages in two). False: imaged with the rest, as 0.1 did
    # (still the last thing cut).
    keep_user_text: bool = True
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
    # The factsheet takes at most this share of the room the head and tail leave the
    # middle (in tokens, at ~4 chars a token), within ``factsheet.max_chars``: at a tight
    # budget the pages get most of the room (issue 20: at 20% of the estimate a
    # 750-token factsheet left no room for one page).
    factsheet_share: float = 0.25
    # The reading guide is written in full when it costs at most this share of that room,
    # else in its compact form (the same marks, half the words): at 20% of the estimate
    # the room can be a few hundred tokens, and every token of guide is a row of page the
    # reader does not get (issue 20).
    guide_share: float = 0.1
    max_fit_rounds: int = 5  # bounded re-plans when the built history misses the target
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
        if not 0.0 < self.factsheet_share <= 1.0:
            msg = f"factsheet_share must be in (0, 1], got {self.factsheet_share}"
            raise ValueError(msg)
        if not 0.0 <= self.guide_share <= 1.0:
            msg = f"guide_share must be in [0, 1] (0: always compact), got {self.guide_share}"
            raise ValueError(msg)
        if self.shapes is not None:
            from glyphfold.render.shapes import get_shape

            if not isinstance(self.shapes, tuple) or not self.shapes:
                msg = (
                    f"shapes must be a non-empty tuple of shape names or None, got {self.shapes!r}"
                )
                raise ValueError(msg)
            for name in self.shapes:
                get_shape(name)  # an unknown name raises, naming the valid ones


@dataclass
class _Memo:
    """What the choices of one rung call share: layouts of texts by shape, factsheet
    prices by text (the same run text recurs across tails and user-message choices)."""

    plans: dict[tuple[str | None, int], dict[str, Any]] = dataclasses.field(default_factory=dict)
    # per factsheet caps (max_chars, max_items) and guide form: text -> its overhead price;
    # per caps: text -> its facts
    overheads: dict[tuple[int, int, bool], dict[str, int]] = dataclasses.field(default_factory=dict)
    facts: dict[tuple[int, int], dict[str, list[Any]]] = dataclasses.field(default_factory=dict)
    # each text's identifiers, read once whatever the caps (a run text recurs under the
    # caps of several choices: the room the head and tail leave differs per tail)
    scans: FactScans = dataclasses.field(default_factory=FactScans)
    # the page geometry of each shape: a page's PNG bytes bound, the price floor (_geometry)
    geometry: dict[str | None, tuple[int, Callable[[int], int]]] = dataclasses.field(
        default_factory=dict
    )
    # each imaged unit's level-0 text length, by its message range (Planner's lengths)
    lengths: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    # each whole run's lossless text (Planner's full_texts): the reading aids' choices
    # image the same steps as the same units (issue 20's bare check, issue 22)
    full_texts: dict[Any, Any] = dataclasses.field(default_factory=dict)
    # each imaged unit's fewest cells, by its message range (Planner's cell_counts)
    cells: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    # the resolved render options of each shape (_setup_of), once per call
    setups: dict[str | None, Setup] = dataclasses.field(default_factory=dict)
    # renders by shape and text: a fit round that builds a run's text again reuses it
    renders: dict[str | None, dict[str, Any]] = dataclasses.field(default_factory=dict)

    history: _HistoryFacts | None = None

    def of(self, history: History, ctx: RungContext) -> _HistoryFacts:
        """The per-message sums of ``history`` (the rung's input: one per call)."""
        if self.history is None or self.history.history is not history:
            self.history = _HistoryFacts(history, ctx)
        return self.history

    def under(
        self, cfg: FactsheetConfig, compact: bool = False
    ) -> tuple[dict[str, int], dict[str, list[Any]]]:
        """The overhead prices (with the ``compact`` guide or the full one) and the facts
        by text under the caps of ``cfg``."""
        key = (cfg.max_chars, cfg.max_items)
        return self.overheads.setdefault((*key, compact), {}), self.facts.setdefault(key, {})


class _HistoryFacts:
    """What every choice of one call reads of the same input history, computed once:
    message costs, tool names, and prefix sums of costs, images and snapshots by message
    index (a range's total is two lookups); each message's request bytes when first asked
    (only what stays is asked: the head, the tail, the kept units)."""

    def __init__(self, history: History, ctx: RungContext) -> None:
        self.history = history
        msgs = history.messages
        self.costs = ctx.message_costs(history)
        self.names = tool_names(history)
        self._cost = list(accumulate(self.costs, initial=0))
        self._images = list(accumulate((len(m.images) for m in msgs), initial=0))
        snaps = [is_snapshot(m) for m in msgs]
        self._snaps = list(accumulate(snaps, initial=0))
        self._sent = list(
            accumulate(
                (len(m.images) if s else 0 for m, s in zip(msgs, snaps, strict=True)),
                initial=0,
            )
        )
        self._bytes: dict[int, int] = {}  # message index -> its request bytes

    @staticmethod
    def _sum(sums: list[int], ranges: list[tuple[int, int]]) -> int:
        return sum(sums[b] - sums[a] for a, b in ranges)

    def cost(self, a: int, b: int) -> int:
        return self._cost[b] - self._cost[a]

    def has_snapshot(self, a: int, b: int) -> bool:
        return self._snaps[b] > self._snaps[a]

    def images(self, ranges: list[tuple[int, int]]) -> int:
        return self._sum(self._images, ranges)

    def sent(self, ranges: list[tuple[int, int]]) -> int:
        """Images of the snapshot messages in ``ranges`` (frozen blocks' pages)."""
        return self._sum(self._sent, ranges)

    def request_bytes(self, ranges: list[tuple[int, int]]) -> int:
        """Request bytes of the messages in ``ranges``: text plus inline images (base64)."""
        known, msgs = self._bytes, self.history.messages
        total = 0
        for a, b in ranges:
            for i in range(a, b):
                n = known.get(i)
                if n is None:
                    m = msgs[i]
                    n = known[i] = len(m.text) * 2 + sum(len(im.data or "") for im in m.images)
                total += n
        return total


def _default_renderer() -> Renderer:
    from glyphfold.render.api import render_text

    return render_text


class Snapshot:
    """Image the oldest steps of the middle into glyph pages."""

    name = "snapshot"
    model_free = True

    def __init__(
        self,
        config: SnapshotConfig | None = None,
        *,
        renderer: Renderer | None = None,
        focus: str | None = None,
    ):
        self.config = config or SnapshotConfig()
        self._renderer = renderer
        # the user's instruction of what matters (issue 23): written in each reading
        # guide, never in the pages (they image the conversation, every word of it)
        self.focus = check_focus(focus)

    @property
    def renderer(self) -> Renderer:
        return self._renderer or _default_renderer()

    def shape_ladder(self, profile: Profile) -> tuple[str | None, ...]:
        """The shapes tried in turn, lossless first at each (SPEC §5.9); the last one is
        where words are cut if they must be."""
        c = self.config
        if c.shape is not None or c.font is not None:
            return (c.shape,)
        if c.shapes is not None:
            return c.shapes
        from glyphfold.render.shapes import get_shape

        default = getattr(profile, "default_shape", None)
        if default is None:
            return (None,)
        # density = characters per pixel of page: the smaller the cell, the denser
        area = {n: get_shape(n).cell_w * get_shape(n).cell_h for n in (*_LADDER, default)}
        denser = [n for n in _LADDER if area[n] < area[default]]
        nxt = max(denser, key=lambda n: area[n]) if denser else None
        return (default,) if nxt is None else (default, nxt)

    def _options(self, text: str, shape: str | None = None) -> dict[str, Any]:
        c = self.config
        opts: dict[str, Any] = {
            "shape": shape if shape is not None else c.shape,
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
        self,
        history: History,
        reg: Regions,
        ctx: RungContext,
        facts: _HistoryFacts,
        users_as_text: str = "none",
        pieces: dict[tuple[int, int], str] | None = None,
    ) -> tuple[list[Unit], Source]:
        kept = kept_steps(history, reg, ctx)
        users = [s.start for s in reg.middle_steps if s.kind == "user"]
        as_text = set(
            users if users_as_text == "all" else users[:1] if users_as_text == "first" else ()
        )
        units: list[Unit] = []
        imaged: list[Message] = []
        for k, s in enumerate(reg.middle_steps):
            # a real user message is the task's own words: text while the target allows
            keep = s.start in kept or s.start in as_text
            pos = () if keep else tuple(range(len(imaged), len(imaged) + len(s)))
            if not keep:
                imaged.extend(history.messages[s.start : s.end])
            cost = facts.cost(s.start, s.end)
            # an earlier pass's snapshot that is not kept (frozen) is rendered again
            earlier = not keep and facts.has_snapshot(s.start, s.end)
            units.append(Unit(k, s.start, s.end, keep, s.kind == "user", pos, cost, earlier))
        return units, Source(imaged, facts.names, self.config.transcript, shared=pieces)

    def _page_cap(
        self,
        history: History,
        reg: Regions,
        units: list[Unit],
        profile: Profile,
        memo: _Memo,
        facts: _HistoryFacts,
    ) -> int:
        # what stays: the head, the tail and the kept units (message index ranges)
        kept = [(0, reg.head_end), (reg.tail_start, len(history.messages))]
        kept += [(u.start, u.end) for u in units if u.kept]
        cap = profile.max_images_per_request - facts.images(kept)
        if self.config.max_pages is not None:
            # pages per request: frozen blocks' pages count (SPEC §5.10)
            cap = min(cap, self.config.max_pages - facts.sent(kept))
        shape = self.shape_ladder(profile)[-1]
        page_b64 = self._geometry(profile, shape, memo)[0] * 4 // 3 + 64
        # request bytes of what stays: text plus inline images (base64), a close bound
        other = facts.request_bytes(kept)
        room: int = (profile.max_request_bytes - other) // page_b64
        return max(0, min(cap, room))

    def _geometry(
        self, profile: Any, shape: str | None, memo: _Memo
    ) -> tuple[int, Callable[[int], int]]:
        """The pages of ``shape``, from the renderer's own geometry (once per shape and
        call, no layout): a bound of one page's PNG bytes, and the price floor: cells
        -> the least image tokens of pages that hold that many. Rows hold ``cols``
        cells each and a page ``rows`` rows; every page before the last has at least
        ``rows - 1`` of them (a row of wide glyphs may move to the next page, never
        more) and the last at least one, and a page's price never falls as it grows."""
        hit = memo.geometry.get(shape)
        if hit is None:
            from glyphfold.render.api import max_png_bytes

            setup = self._setup_of(profile, shape, memo)
            cfg = setup.config
            cols, rows = cfg.cols, cfg.rows
            one = setup.profile.cost(*page_size(setup, 1))
            full = setup.profile.cost(*page_size(setup, max(1, rows - 1)))

            def floor(cells: int) -> int:
                if cells <= 0:
                    return 0
                n_rows = -(-cells // cols)
                pages = -(-n_rows // rows)
                return (pages - 1) * full + one

            hit = memo.geometry[shape] = (max_png_bytes(setup), floor)
        return hit

    def _planner_plan(
        self, text: str, profile: Any, shape: str | None = None, limit: int | None = None
    ) -> Any:
        from glyphfold.render.api import plan_text

        return plan_text(text, profile=profile, max_pages=limit, **self._options(text, shape))

    def _setup_of(self, profile: Any, shape: str | None, memo: _Memo) -> Setup:
        """The resolved render options of ``shape``'s pages for a text without light ink
        (its geometry, and every plan when ``tool_ink`` is unset), once per call."""
        hit = memo.setups.get(shape)
        if hit is None:
            o = options_of(None, profile=profile, **self._options("", shape))
            hit = memo.setups[shape] = resolve_setup(o)
        return hit

    def _factsheet(self, room: int) -> FactsheetConfig:
        """The factsheet caps when the middle has ``room`` tokens (``factsheet_share``)."""
        cfg = self.config.factsheet
        chars = max(0, int(room * 4 * self.config.factsheet_share))
        return cfg if chars >= cfg.max_chars else dataclasses.replace(cfg, max_chars=chars)

    def _compact_guide(self, room: int) -> bool:
        """True when the full reading guide would cost more than ``guide_share`` of the
        ``room`` (tokens) the head and tail leave the middle."""
        full = guide_text(999, 10**6, 99, facts=True, focus=self.focus)
        return (len(full) + 3) // 4 > room * self.config.guide_share

    def _overhead(
        self, cfg: FactsheetConfig, memo: _Memo | None = None, compact: bool = False
    ) -> Callable[[str], int]:
        memo = _Memo() if memo is None else memo
        # the caps depend on the choice's room: prices and facts are kept per caps
        overheads, known = memo.under(cfg, compact)

        def overhead(text: str) -> int:
            hit = overheads.get(text)
            if hit is None:
                found = known.get(text)  # the same caps with the other guide form
                if found is None:
                    # build reuses them
                    found = known[text] = extract_facts(text, config=cfg, scans=memo.scans)
                facts = format_factsheet(found)
                guide = guide_text(
                    999, len(text), 99, facts=bool(facts), focus=self.focus, compact=compact
                )
                hit = overheads[text] = 8 + (len(guide) + len(facts) + 3) // 4 + _BRIDGES
            return hit

        return overhead

    def _overhead_floor(self, text: str) -> int:
        """The least :meth:`_overhead` of ``text`` whatever its factsheet: the guide
        without the factsheet's sentence (in either form, full or compact), no
        factsheet, the bridges."""
        n = len(text)
        guide = min(
            len(guide_text(999, n, 99, facts=f, focus=self.focus, compact=c))
            for f in (False, True)
            for c in (False, True)
        )
        return 8 + (guide + 3) // 4 + _BRIDGES

    def _overhead_ceiling(self, cfg: FactsheetConfig) -> Callable[[str], int]:
        """The most :meth:`_overhead` of a text can be under the caps of ``cfg``: the
        guide with the factsheet's sentence and a factsheet full to ``max_chars`` (each
        value costs its length + 3 against the cap, and takes at most its length + 1 in
        the list), with a line for every kind."""
        lines = len(format_factsheet([Fact(k, "", 0) for k in KINDS]))
        most = lines + cfg.max_chars

        def ceiling(text: str) -> int:
            n = len(text)
            guide = max(
                len(guide_text(999, n, 99, facts=f, focus=self.focus, compact=c))
                for f in (False, True)
                for c in (False, True)
            )
            return 8 + (guide + most + 3) // 4 + _BRIDGES

        return ceiling

    def _plan_fn(
        self, profile: Any, shape: str | None, memo: _Memo, limit: int
    ) -> Callable[[str], Any]:
        """Text -> its TextPlan in ``shape``, each text laid out once per rung call, up
        to ``limit`` pages (a text with more cannot be imaged whole: its plan says so)."""
        from glyphfold.render.api import plan_resolved

        plans = memo.plans.setdefault((shape, limit), {})
        # light ink sets the bit depth per text: those plans resolve their own options
        setup = None if self.config.tool_ink is not None else self._setup_of(profile, shape, memo)

        def plan(text: str) -> Any:
            hit = plans.get(text)
            if hit is None:
                if setup is None:
                    hit = self._planner_plan(text, profile, shape, limit)
                else:  # the options resolved once: plan_text's own steps, fewer checks
                    hit = plan_resolved(text, setup, max_pages=limit)
                plans[text] = hit
            return hit

        return plan

    def _render_fn(self, profile: Any, shape: str | None, memo: _Memo) -> Callable[[str], Any]:
        """Text -> its render in ``shape``, each text rendered once per rung call (the
        fit rounds build again; a run they do not change is the same text)."""
        done = memo.renders.setdefault(shape, {})

        def render(text: str) -> Any:
            hit = done.get(text)
            if hit is None:
                hit = done[text] = self.renderer(
                    text, profile=profile, **self._options(text, shape)
                )
            return hit

        return render

    def _setup(
        self,
        history: History,
        reg: Regions,
        ctx: RungContext,
        shape: str | None = None,
        users_as_text: str = "none",
        pieces: dict[tuple[int, int], str] | None = None,
        memo: _Memo | None = None,
        sheet_chars: int | None = None,
        compact_guide: bool = False,
    ) -> tuple[Planner, BuildInput] | None:
        """The planner and build input for one choice of tail, shape and user messages
        (None: nothing to image). ``pieces``: the transcript piece cache the choices of
        one call share (a message's transcript does not depend on the choice); ``memo``:
        the layouts and factsheet prices they share (the same run text recurs);
        ``sheet_chars``: a tighter factsheet cap than the room's, ``compact_guide``: the
        compact reading guide whatever the room (the reading aids yield to words)."""
        memo = memo or _Memo()
        facts = memo.of(history, ctx)
        costs = facts.costs
        units, source = self._units(history, reg, ctx, facts, users_as_text, pieces)
        if not source.messages:
            return None  # no middle, or only kept steps in it
        profile = ctx.profile
        fixed = system_tokens(history, ctx) + facts.cost(0, reg.head_end)
        fixed += facts.cost(reg.tail_start, len(costs))
        sheet = self._factsheet(ctx.target_tokens - fixed)
        if sheet_chars is not None and sheet_chars < sheet.max_chars:
            sheet = dataclasses.replace(sheet, max_chars=max(0, sheet_chars))
        compact = compact_guide or self._compact_guide(ctx.target_tokens - fixed)
        page_cap = self._page_cap(history, reg, units, profile, memo, facts)
        planner = Planner(
            units,
            source,
            fixed_tokens=fixed,
            target=ctx.target_tokens,
            page_cap=page_cap,
            # a plan of more pages than the cap cannot fit: laid out no further than that
            plan=self._plan_fn(profile, shape, memo, page_cap + 1),
            overhead=self._overhead(sheet, memo, compact),
            start_late=self.config.start_late,
            overhead_floor=self._overhead_floor,
            lengths=memo.lengths,
            full_texts=memo.full_texts,
            overhead_ceiling=self._overhead_ceiling(sheet),
            cells=least_cells,
            pages_floor=self._geometry(profile, shape, memo)[1],
            cell_counts=memo.cells,
        )
        inp = BuildInput(
            history=history,
            regions=reg,
            units=units,
            source=source,
            costs=costs,
            profile=profile,
            render=self._render_fn(profile, shape, memo),
            factsheet=sheet,
            focus=self.focus,
            compact_guide=compact,
            facts=memo.under(sheet, compact)[1],
            scans=memo.scans,
            lengths=memo.lengths,
        )
        return planner, inp

    @staticmethod
    def _tails(history: History, reg: Regions) -> list[Callable[[], Regions]]:
        """The run's tail, then ever shorter ones down to the newest step alone.

        The tail is a preference: a page, message or step is never dropped while
        imaging an older tail step would make room for it (SPEC §5.6). Each is split
        when first asked for (a split is a pass over the history; the search often
        needs one or two of them).
        """
        n_steps = len(reg.tail_steps)
        out: list[Callable[[], Regions]] = [lambda: reg]
        while n_steps > 1:
            n_steps //= 2
            tail = len(history.messages) - reg.tail_steps[-n_steps].start
            out.append(
                functools.cache(functools.partial(split_regions, history, tail_messages=tail))
            )
        return out

    def _choices(
        self, history: History, ctx: RungContext
    ) -> list[tuple[Callable[[], Regions], str | None, str]]:
        """(tail, shape, user messages as text) in the order they are tried losslessly.

        The real user messages of the middle are the task's own words: all of them stay
        text first, then the first of them (the question a session opens with, after a
        preamble), then none (imaged, never cut before the rest, SPEC §5.9). Within that,
        the tail is shortened before the shape gets denser (the tail is what the agent
        works on). Every lossless choice comes before any cut.
        """
        reg0 = regions(history, ctx)
        tails = self._tails(history, reg0)
        shapes = self.shape_ladder(ctx.profile)
        n_users = sum(1 for s in reg0.middle_steps if s.kind == "user")
        n_users = n_users if self.config.keep_user_text else 0
        users = (
            ["all", "first", "none"] if n_users > 1 else ["all", "none"] if n_users else ["none"]
        )
        return [(reg, shape, u) for u in users for reg in tails for shape in shapes]

    def _search(
        self, history: History, ctx: RungContext, *, lossless_only: bool
    ) -> tuple[tuple[BuildInput, Plan, Built, int], tuple[str | None, str]] | None:
        """The first lossless choice that fits, in the order of :meth:`_choices`; then,
        unless ``lossless_only``, the widest choice with words cut (SPEC §5.9)."""
        choices = self._choices(history, ctx)
        # the last choice images the most: when even it cannot hold the middle losslessly,
        # none can, and the words are cut there at once (no plan of the others is made)
        reg, shape, users = choices[-1]
        pieces: dict[tuple[int, int], str] = {}  # each message's transcript, built once
        memo = _Memo()  # each run text laid out (per shape) and priced once
        widest = self._setup(history, reg(), ctx, shape, users, pieces, memo)
        hopeless = widest is not None and len(choices) > 1 and not widest[0].has_lossless()
        for k, (reg, shape, users) in enumerate([] if hopeless else choices):
            last = k == len(choices) - 1
            setup = widest if last else self._setup(history, reg(), ctx, shape, users, pieces, memo)
            if setup is None:
                continue
            found = self._fit(*setup, ctx, lossy=False)
            if found is not None:
                return found, (shape, users)
        if lossless_only or widest is None:
            return None
        yielded = self._sheet_yields(history, ctx, choices, pieces, memo, widest[1].factsheet)
        if yielded is not None:
            return yielded
        reg, shape, users = choices[-1]
        found = self._fit(*widest, ctx, lossy=True)
        return None if found is None else (found, (shape, users))

    def _sheet_yields(
        self,
        history: History,
        ctx: RungContext,
        choices: list[tuple[Callable[[], Regions], str | None, str]],
        pieces: dict[tuple[int, int], str],
        memo: _Memo,
        sheet: FactsheetConfig,
    ) -> tuple[tuple[BuildInput, Plan, Built, int], tuple[str | None, str]] | None:
        """The reading aids yield to words (SPEC §5.9, issue 20): when no choice holds
        the middle losslessly with the factsheet and guide the room allows, but one does
        with the compact guide and no factsheet, the pages keep every word; the guide is
        then the full one if that still fits, and the factsheet keeps the widest cap (on
        a 64-char grid) that still fits. None when even the barest aids leave no room
        for every word: then words are cut, and the factsheet names the cut ones.

        The guide explains the marks and the factsheet repeats identifiers of the
        pages: words cut to make room for them would be words dropped while the
        densest pages could hold the middle."""
        reg, shape, users = choices[-1]
        bare = self._setup(
            history, reg(), ctx, shape, users, pieces, memo, sheet_chars=0, compact_guide=True
        )
        if bare is None or not bare[0].has_lossless():
            return None  # the common case at a tight budget: one check, then cut
        for reg, shape, users in choices:
            split = reg()
            choice = (history, split, ctx, shape, users, pieces, memo)
            setup = self._lossless_setup(choice, 0, True)
            if setup is None:
                continue
            compact = True
            full = self._lossless_setup(choice, 0, False)
            if full is not None and not self._compact_guide(full[0].target - full[0].fixed):
                setup, compact = full, False  # the full guide where the room would give it
            lo, hi = 0, sheet.max_chars // 64 + 1  # in 64-char steps: lo fits, hi does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                wider = self._lossless_setup(choice, mid * 64, compact)
                if wider is not None:
                    lo, setup = mid, wider
                else:
                    hi = mid
            found = self._fit(*setup, ctx, lossy=False)
            if found is not None:
                return found, (shape, users)
        return None

    def _lossless_setup(
        self, choice: _Choice, sheet_chars: int, compact: bool
    ) -> tuple[Planner, BuildInput] | None:
        """The setup of ``choice`` (``_setup``'s arguments) with these reading aids, when
        it holds the middle losslessly (None otherwise)."""
        got = self._setup(*choice, sheet_chars=sheet_chars, compact_guide=compact)
        return got if got is not None and got[0].has_lossless() else None

    def _merge_reason(self, history: History, ctx: RungContext) -> str:
        """Why the frozen blocks could not stay: the image limit, or the target."""
        reg, shape, users = self._choices(history, ctx)[-1]
        setup = self._setup(history, reg(), ctx, shape, users)
        if setup is not None:
            planner = setup[0]
            # the pages only: the floor's pages are the same, and need no factsheet
            if planner.page_cap < planner.lossless_tokens(len(planner.units), bound=-1)[1]:
                return "image limit"
        return "target"

    def _apply(self, history: History, ctx: RungContext) -> RungOutcome:
        before = ctx.tokens_of(history)
        frozen = sum(1 for m in history.messages if id(m) in ctx.frozen and is_snapshot(m))
        merge: dict[str, Any] = {"frozen_blocks": frozen, "merged_blocks": 0}
        searched = None
        if frozen:
            # SPEC §5.10: the blocks already sent stay; the newly old steps become a new
            # block after them, losslessly. Merge only when that cannot fit.
            searched = self._search(history, ctx, lossless_only=True)
            if searched is None:
                merge["merge_reason"] = self._merge_reason(history, ctx)
                ctx = dataclasses.replace(ctx, pinned=ctx.pinned - ctx.frozen, frozen=frozenset())
        if searched is None:
            searched = self._search(history, ctx, lossless_only=False)
            if searched is not None and "merge_reason" in merge:
                merge["frozen_blocks"] = 0
                merge["merged_blocks"] = frozen
        found, chosen = searched if searched is not None else (None, (None, "none"))
        if found is None:
            note = "skipped: not even one page fits the room the head and tail leave"
            return RungOutcome(history, LedgerEntry(self.name, before, before, note=note))
        inp, plan, built, after = found
        if after >= before:  # pages of a short middle can cost more than its text
            note = f"skipped: the pages would cost {after - before:,} tokens more than the text"
            return RungOutcome(history, LedgerEntry(self.name, before, before, note=note))
        entry = self._entry(inp, plan, built, before, after, len(history.messages), merge, chosen)
        return RungOutcome(built.history, entry, pages=tuple(built.pages))

    def _fit(
        self, planner: Planner, inp: BuildInput, ctx: RungContext, *, lossy: bool
    ) -> tuple[BuildInput, Plan, Built, int] | None:
        """Plan, build, price; re-plan (bounded) while the result misses the target or,
        having shortened the pages, leaves room unused: the planner's target is
        corrected by what the build really cost, and bisected between a correction
        that fit and one that overshot (SPEC §5.9: words are cut only as far as needed).

        ``lossy=False``: only a plan that loses nothing (None otherwise). A plan that
        draws no page (every imaged step dropped) is never chosen (issue 20): one
        marker line instead of the middle keeps less than trim, which keeps the newest
        steps as text, so the rung steps aside and the next rung runs.
        """
        target = ctx.target_tokens
        best: tuple[Plan, Built, int] | None = None
        over: tuple[Plan, Built, int] | None = None
        correction = 0
        # a larger correction is a tighter planner target: the smallest correction known
        # to fit and the largest known to overshoot bracket the best one
        fit_at: int | None = None
        over_at: int | None = None
        for _ in range(self.config.max_fit_rounds):
            planner.target = target - correction
            plan = planner.lossless() or (planner.lossy() if lossy else None)
            if plan is None:
                break
            built = build(inp, plan)
            after = ctx.count(built.history)
            drew = bool(built.pages)
            if after > target:
                if drew:
                    over = over or (plan, built, after)
                over_at = correction if over_at is None else max(over_at, correction)
                if fit_at is None:
                    correction += after - target + 16
                elif fit_at - over_at > 16:
                    correction = (fit_at + over_at) // 2
                else:
                    break
                continue
            if drew and (best is None or after > best[2]):
                best = (plan, built, after)
            fit_at = correction if fit_at is None else min(fit_at, correction)
            if plan.treatment.lossless:
                break
            # room left is worth another round when it is more than the estimate's
            # rounding: a sixteenth of a page, 64 tokens at least
            page = max((p.image_tokens for p in built.pages), default=0)
            if target - after < max(64, page // 16):
                break
            if over_at is None:
                correction -= target - after - min(page // 4, (target - after) // 4)
            elif fit_at - over_at > 16:
                correction = (fit_at + over_at) // 2
            else:
                break
        found = best or (over if lossy else None)
        return None if found is None else (inp, *found)

    def _entry(
        self,
        inp: BuildInput,
        plan: Plan,
        built: Built,
        before: int,
        after: int,
        n: int,
        merge: dict[str, Any],
        chosen: tuple[str | None, str] = (None, "none"),
    ) -> LedgerEntry:
        reg = inp.regions
        units = inp.units
        imaged = [u for u in units[plan.first : plan.imaged] if not u.kept]
        whole = {k: _unit_len0(inp, units[k]) for rt in plan.runs for k in rt.units}
        t = plan.treatment
        # every character of the steps' full text that is not on a page is counted
        # (SPEC §5.9): steps dropped, the cut start of one, tool output capped or elided
        lost = 0
        for rt in plan.runs:
            for k in rt.units:
                if k in t.dropped or k not in rt.spans:
                    lost += whole[k] if k in t.dropped else 0
                    continue
                a, b = rt.spans[k]
                shown = b - a - (len(cut_marker(t.cut[1])) if t.cut and t.cut[0] == k else 0)
                lost += max(0, whole[k] - shown)
        cut = sum(whole[k] for k in t.dropped) + (t.cut[1] if t.cut else 0)
        final = sum(len(rt.text) for rt in plan.runs)
        shape = chosen[0] or getattr(inp.profile, "default_shape", None)
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
            "dropped_chars": lost,  # all of it: whole steps, a cut start, capped output
            "compressed_chars": max(0, lost - cut),  # of which: tool output capped/elided
            "source_chars": final,
            "retained_chars": sum(len(rt.source or rt.text) for rt in plan.runs),
            "shape": shape,
            "users_as_text": chosen[1],
            "facts": built.facts,
            "missing_glyphs": {f"U+{cp:04X}": k for cp, k in sorted(built.missing.items())},
            "hints": list(built.hints),
            # SPEC §5.10: blocks kept as sent, blocks this pass made, blocks re-rendered
            "frozen_blocks": merge["frozen_blocks"],
            "new_blocks": sum(1 for rt in plan.runs if not rt.all_dropped),
            "merged_blocks": merge["merged_blocks"],
        }
        if merge["merged_blocks"]:
            extra["merge_reason"] = merge["merge_reason"]
        note = (
            f"{len(imaged):,} of {len(units):,} middle steps -> {len(built.pages):,} page(s)"
            f" in {len(plan.runs):,} snapshot(s)"
        )
        if shape is not None:
            note += f" ({shape} shape)"
        if extra["lossy"]:
            note += (
                f"; words cut to fit: {lost:,} chars not on the pages (dropped_chars; the"
                " snapshot keeps them for a later pass)"
            )
        if merge["frozen_blocks"]:
            note += f"; {merge['frozen_blocks']} earlier block(s) kept as sent"
        if merge["merged_blocks"]:
            why = (
                "the per-request image limit"
                if merge["merge_reason"] == "image limit"
                else "the target cannot be reached with them as sent"
            )
            note += (
                f"; {merge['merged_blocks']} earlier block(s) merged, re-rendered from "
                f"their source ({why})"
            )
        if built.missing:
            note += f"; {sum(built.missing.values()):,} char(s) no font covers"
        return LedgerEntry(
            self.name, before, after, tuple(built.removed), page_records(built.pages), note, extra
        )


def _unit_len0(inp: BuildInput, u: Unit) -> int:
    """The length of a unit's transcript at the configured caps (what the pages hold when
    nothing is lost): its non-empty pieces and a newline between each two, as joined
    (the planner's figure when it measured the unit: the same pieces)."""
    known = inp.lengths.get((u.start, u.end)) if u.positions else None
    if known is not None:
        return known
    sizes = [n for n in (inp.source.piece_len(p) for p in u.positions) if n]
    return sum(sizes) + len(sizes) - 1 if sizes else 0
