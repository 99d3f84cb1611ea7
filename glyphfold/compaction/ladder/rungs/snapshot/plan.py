"""The snapshot planner: how much of the middle to image, and how to fit it (SPEC §5.6).

The middle is a sequence of *units* (its steps, oldest first). Some are *kept*: they
stay text where they are (the newest real user message, pinned steps); the others
are imaged, in runs between kept units, one snapshot per run.

1. Lossless first: image the fewest oldest units whose pages bring the history
   under the target (the imaged prefix ``c``). Nothing is lost but legibility for a
   reader without vision; every unit after ``c`` stays text. Then the imaged range
   starts as late as the target allows (``first``): when the newest units of the
   prefix save what the target needs, the older ones stay text (an elided result is
   one short line, about as dear as pixels as it is as text), so the rung images no
   more than the target needs (SPEC §5.6). The range always covers the units that
   hold an earlier pass's snapshot: they are rendered again from source (SPEC §5.3).
2. When even the whole middle as pages does not fit, the pages lose what matters
   least first, oldest first, until they fit the room left (never more): tool output
   under tighter head+tail caps (level by level), then tool output elided to stubs,
   then whole assistant/tool steps, then user messages (the last thing pages lose).
   The last unit that has to go is cut from its start rather than dropped whole, so
   the pages fill the room they have.

Prices come from :func:`glyphfold.render.api.plan_text` (the renderer's own page
geometry), the per-message estimates of the ladder, and a factsheet bound per run.
Each run's level-0 text is laid out once (up to the page cap + 1); the shortening
candidates are estimated by sums (:mod:`.price`) and only the boundary between what
fits and what does not is laid out, so the search makes a few small layouts per call
whatever the history size, and chooses what an exact binary search would (issue 22).
Before any layout, a choice is priced at a floor (the text that stays, and pages that
hold no more than its runs' printable characters): a choice, or a prefix, whose floor
is over the target is ruled out without laying anything out (:meth:`Planner._price_floors`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from glyphfold.compaction.ladder.rungs.snapshot.price import MovePrices, gallop, lower_bound
from glyphfold.compaction.ladder.rungs.snapshot.source import (
    LEVELS,
    Source,
    cut_marker,
    dropped_marker,
    level_config,
)
from glyphfold.compaction.ladder.rungs.transcribe import join

__all__ = ["Plan", "Planner", "RunText", "Treatment", "Unit"]

PlanFn = Callable[[str], Any]  # text -> glyphfold.render.api.TextPlan


@dataclass(frozen=True, slots=True)
class Unit:
    """One middle step as the planner sees it."""

    index: int  # position among the middle's steps
    start: int  # first message index in the history
    end: int
    kept: bool  # stays text where it is
    user: bool  # a real user message: the last thing pages lose
    positions: tuple[int, ...]  # its messages' positions in the Source (imaged units)
    cost: int  # tokens as text
    earlier: bool = False  # holds an earlier pass's snapshot


@dataclass(slots=True)
class Treatment:
    """How the imaged text is shortened: levels per message, dropped units, one cut."""

    levels: dict[int, int] = field(default_factory=dict)  # Source position -> level
    dropped: set[int] = field(default_factory=set)  # unit indices dropped whole
    cut: tuple[int, int] | None = None  # (unit index, chars cut from its start)
    # (Source position, result chars): the last output capped keeps the widest cap that
    # fits, between its level's cap and the one before (SPEC §5.6: no more cut than needed)
    cap: tuple[int, int] | None = None

    @property
    def lossless(self) -> bool:
        return not self.levels and not self.dropped and self.cut is None


@dataclass(frozen=True, slots=True)
class RunText:
    """The text of one snapshot: its units and where each unit's text lies."""

    units: tuple[int, ...]
    text: str
    spans: dict[int, tuple[int, int]]  # unit index -> (start, end) in text; dropped: absent
    all_dropped: bool  # every unit dropped: shown as text, no page
    # every word of the run's units, whatever the treatment (SPEC §5.9): what the snapshot
    # retains, so a later pass with more room restores what these pages had to leave out
    source: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """What the snapshot will do: units [first, imaged) imaged, as these runs."""

    imaged: int
    runs: tuple[RunText, ...]
    treatment: Treatment
    tokens: int  # the planner's estimate of the resulting history
    loss: int = 0  # characters of transcript the treatment takes off the pages
    first: int = 0  # the units before it stay text (a lossless plan that starts later)


_NONE = Treatment()  # nothing shortened (read only)
# a run and a set of dropped units at least this long are read with arrays (run_text)
_VECTOR_MIN = 64
# a middle of at most this many units is priced by a floor before any layout
# (_price_floors: one pass per planner, measured to pay for itself on real sessions)
_FLOOR_UNITS = 4096


class Planner:
    """Chooses the imaged prefix and the treatment that fit ``target`` tokens."""

    def __init__(
        self,
        units: Sequence[Unit],
        source: Source,
        *,
        fixed_tokens: int,
        target: int,
        page_cap: int,
        plan: PlanFn,
        overhead: Callable[[str], int],
        start_late: bool = True,
        overhead_floor: Callable[[str], int] | None = None,
        lengths: dict[tuple[int, int], int] | None = None,
        full_texts: dict[Any, RunText] | None = None,
        overhead_ceiling: Callable[[str], int] | None = None,
        cells: Callable[[str], int] | None = None,
        pages_floor: Callable[[int], int] | None = None,
        cell_counts: dict[tuple[int, int], int] | None = None,
    ) -> None:
        self.units = list(units)
        self.source = source
        self.fixed = fixed_tokens  # system + head + tail: always text
        self.target = target
        self.page_cap = page_cap
        self._plan = plan
        self._overhead = overhead  # text of a run -> guide + factsheet + bridges (tokens)
        # the least ``overhead`` of a text, known without reading its factsheet: a price
        # with it that does not fit says the exact price does not either
        self._overhead_floor = overhead_floor or (lambda text: 0)
        # the most ``overhead`` of a text can be (its factsheet full to the caps): a price
        # with it that fits says the exact price fits too (None: not known)
        self._overhead_ceiling = overhead_ceiling
        self.start_late = start_late  # a lossless plan may leave its oldest units as text
        self._after = [0] * (len(self.units) + 1)  # tokens of units [c, m) as text
        for k in range(len(self.units) - 1, -1, -1):
            self._after[k] = self._after[k + 1] + self.units[k].cost
        self._kept_before = [0]
        self._text_before = [0]  # tokens of the units [0, k) that would be imaged
        for u in self.units:
            self._kept_before.append(self._kept_before[-1] + (u.cost if u.kept else 0))
            self._text_before.append(self._text_before[-1] + (0 if u.kept else u.cost))
        earlier = [u.index for u in self.units if u.earlier]
        # a lossless plan images every earlier snapshot again, from its source
        self._least = earlier[-1] + 1 if earlier else 1
        self._latest = earlier[0] if earlier else len(self.units)  # no later first
        self._full_plans: dict[tuple[int, ...], Any] = {}
        # unit texts by (unit, level of each of its messages; () for all at 0)
        self._unit_texts: dict[tuple[int, tuple[int, ...]], str] = {}
        self._overheads: dict[tuple[int, ...], int] = {}  # whole run -> its overhead
        self._floors: dict[tuple[int, ...], int] = {}  # whole run -> its overhead floor
        self._ceilings: dict[tuple[int, ...], int] = {}  # whole run -> its overhead ceiling
        # the lossy search: exact prices by (c, moves applied, cut), estimates by c
        # (choice, moves applied, cut, cap) -> (tokens, pages), laid out
        self._exact: dict[
            tuple[int, int, tuple[int, int] | None, tuple[int, int] | None], tuple[int, int]
        ] = {}
        self._estimates: dict[int, MovePrices] = {}
        self._moves: dict[int, list[tuple[str, int, int]]] = {}
        self._level0: list[int] | None = None
        # imaged unit (start, end) -> its level-0 text length: the planners of one call
        # share it (a unit's messages and their pieces do not depend on the choice)
        self._lengths: dict[tuple[int, int], int] = {} if lengths is None else lengths
        # (run, its units' first messages, its last message) -> the run's lossless text:
        # shared by the planners of one call like ``lengths``
        self._full_texts: dict[Any, RunText] = {} if full_texts is None else full_texts
        self._all_levels: dict[int, tuple[int, dict[int, int]]] = {}  # c -> moves, levels
        self._arrays: dict[tuple[int, ...], Any] = {}  # run -> its units as arrays
        self._runs: dict[tuple[int, int], list[tuple[int, ...]]] = {}  # (c, first) -> runs
        # Source position -> its estimated length change per level (MovePrices)
        self.move_changes: dict[int, list[int]] = {}
        self._widest_c: int | None = None
        # a price floor known without a layout: text -> the fewest cells it takes, cells
        # -> the least image tokens of pages holding them (None: every price laid out)
        self._cells = cells
        self._pages_floor = pages_floor
        # imaged unit (start, end) -> its level-0 text's fewest cells (shared like lengths)
        self._cell_counts: dict[tuple[int, int], int] = {} if cell_counts is None else cell_counts
        self._lb: list[int] | None = None
        self._lb_least = 0  # the least floor over the prefixes a lossless plan may image
        self.full_runs = self.runs_of(len(self.units))
        self._run_of = {k: r for r in self.full_runs for k in r}  # unit -> its whole run

    # ------------------------------------------------------------------ texts

    def runs_of(self, c: int, first: int = 0) -> list[tuple[int, ...]]:
        """Runs of imaged units among [first, c): split at kept units (the same list for
        the same range: read only)."""
        hit = self._runs.get((c, first))
        if hit is None:
            hit = self._runs[(c, first)] = self._split_runs(c, first)
        return hit

    def _split_runs(self, c: int, first: int) -> list[tuple[int, ...]]:
        runs: list[list[int]] = []
        cur: list[int] = []
        for u in self.units[first:c]:
            if u.kept:
                if cur:
                    runs.append(cur)
                cur = []
            else:
                cur.append(u.index)
        if cur:
            runs.append(cur)
        return [tuple(r) for r in runs]

    def _unit_text(self, k: int, treat: Treatment) -> str:
        positions = self.units[k].positions
        levels = tuple(treat.levels.get(p, 0) for p in positions) if treat.levels else ()
        cap = treat.cap if treat.cap is not None and treat.cap[0] in positions else None
        if not any(levels):  # level 0: joined when asked (no copy of every unit is kept)
            text = join(self._pieces0(k))[0]
        elif cap is not None:
            pieces = [
                self.source.piece_capped(p, lv, cap[1]) if p == cap[0] else self.source.piece(p, lv)
                for p, lv in zip(positions, levels, strict=True)
            ]
            text = join(pieces)[0]
        else:
            text = self._unit_texts.get((k, levels), "")
            if not text:
                pieces = [self.source.piece(p, lv) for p, lv in zip(positions, levels, strict=True)]
                text = self._unit_texts[(k, levels)] = join(pieces)[0]
        if treat.cut is not None and treat.cut[0] == k and text:
            cut = min(treat.cut[1], len(text))
            text = cut_marker(cut) + text[cut:]
        return text

    def _pieces0(self, k: int) -> list[str]:
        """The non-empty level-0 pieces of unit ``k`` (shared with the Source's cache)."""
        return [t for t in (self.source.piece(p) for p in self.units[k].positions) if t]

    def _lens0(self) -> list[int]:
        """Each unit's text length with nothing shortened (0: a unit without text)."""
        if self._level0 is None:
            out = []
            known = self._lengths
            for u in self.units:
                if not u.positions:
                    out.append(0)  # kept (or empty): no text on the pages
                    continue
                n = known.get((u.start, u.end))
                if n is None:
                    ps = self._pieces0(u.index)
                    n = known[(u.start, u.end)] = sum(map(len, ps)) + len(ps) - 1 if ps else 0
                out.append(n)
            self._level0 = out
        return self._level0

    def _touched(self, k: int, treat: Treatment) -> bool:
        """True when ``treat`` changes unit ``k``'s text (a level or the cut)."""
        if treat.cut is not None and treat.cut[0] == k:
            return True
        levels = treat.levels
        return bool(levels) and any(levels.get(p, 0) for p in self.units[k].positions)

    def _gaps(
        self, run: tuple[int, ...], dropped: set[int]
    ) -> tuple[list[tuple[int, int, int]], tuple[int, int], bool]:
        """The units of ``run`` that have text and are not ``dropped``, each with the gap
        of dropped units with text just before it: ``[(unit, gap messages, gap chars)]``;
        the gap after the last one; and whether every unit of the run is dropped.

        A long run under a treatment that drops many units (the lossy search at 10^4+
        messages) is read with arrays: the few units that stay and the sums of the gaps
        between them, not a pass over every unit in Python (issue 22)."""
        lens0 = self._lens0()
        if len(dropped) < _VECTOR_MIN or len(run) < _VECTOR_MIN:
            out: list[tuple[int, int, int]] = []
            units = self.units
            gap_msgs = gap_chars = 0
            for k in run:
                n0 = lens0[k]
                if not n0:
                    continue  # a bridge or an acknowledgement: no text, nothing on the pages
                if k in dropped:
                    gap_msgs += len(units[k].positions)
                    gap_chars += n0
                    continue
                out.append((k, gap_msgs, gap_chars))
                gap_msgs = gap_chars = 0
            return out, (gap_msgs, gap_chars), all(k in dropped for k in run)
        every, ks, msgs, chars = self._run_arrays(run)
        mask = np.zeros(len(self.units), dtype=np.bool_)
        mask[np.fromiter(dropped, dtype=np.int64, count=len(dropped))] = True
        gone = mask[ks]
        # prefix sums of the dropped units' messages and chars, over the run's text units
        pm = np.zeros(len(ks) + 1, dtype=np.int64)
        pc = np.zeros(len(ks) + 1, dtype=np.int64)
        np.cumsum(np.where(gone, msgs, 0), out=pm[1:])
        np.cumsum(np.where(gone, chars, 0), out=pc[1:])
        stay = np.flatnonzero(~gone)
        after = np.concatenate(([0], stay + 1))  # the gap before stay[j] starts after stay[j-1]
        gm = (pm[stay] - pm[after[:-1]]).tolist()
        gc = (pc[stay] - pc[after[:-1]]).tolist()
        out = list(zip(ks[stay].tolist(), gm, gc, strict=True))
        last = int(after[-1])
        tail = (int(pm[-1] - pm[last]), int(pc[-1] - pc[last]))
        return out, tail, bool(mask[every].all())

    def _run_arrays(
        self, run: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(every unit, the units with text, their messages, their level-0 lengths) of
        ``run`` as arrays (once per run)."""
        hit = self._arrays.get(run)
        if hit is None:
            lens0 = self._lens0()
            ks = [k for k in run if lens0[k]]
            units = self.units
            hit = self._arrays[run] = (
                np.array(run, dtype=np.int64),
                np.array(ks, dtype=np.int64),
                np.array([len(units[k].positions) for k in ks], dtype=np.int64),
                np.array([lens0[k] for k in ks], dtype=np.int64),
            )
        return hit

    def run_text(self, run: tuple[int, ...], treat: Treatment, *, source: bool = True) -> RunText:
        """The text of ``run`` under ``treat``; dropped units leave one marker line per gap.

        Units the treatment leaves alone go in as their messages' pieces (joined once,
        into the run's text: no per-unit copy). ``source=False``: without the run's full
        text (a candidate that is only priced; the source is as long as the middle)."""
        pieces: list[str] = []
        keys: list[int | None] = []
        lens0 = self._lens0()
        dropped = treat.dropped
        lossless = treat.lossless
        stay, (tail_msgs, tail_chars), all_dropped = self._gaps(run, dropped)
        for k, gap_msgs, gap_chars in stay:
            if gap_msgs:
                pieces.append(dropped_marker(gap_msgs, gap_chars))
                keys.append(None)
            if lossless or not self._touched(k, treat):
                ps = self._pieces0(k)
                pieces.extend(ps)
                keys.extend([k] * len(ps))
            else:
                pieces.append(self._unit_text(k, treat))
                keys.append(k)
        if tail_msgs:
            pieces.append(dropped_marker(tail_msgs, tail_chars))
            keys.append(None)
        text, spans = join(pieces)
        by_unit: dict[int, tuple[int, int]] = {}
        for key, (a, b) in zip(keys, spans, strict=True):
            if key is not None:
                first = by_unit.get(key)
                by_unit[key] = (a if first is None else first[0], b)
        words = text
        if not lossless and not source:
            words = ""
        elif not lossless:  # every treatment of the run retains the same words
            full = self._full_plans.get(run)  # the lossless text: the same words, joined
            if full is not None:
                words = full[0].text
            else:
                words = join([p for k in run if lens0[k] for p in self._pieces0(k)])[0]
        return RunText(run, text, by_unit, all_dropped, words)

    # ------------------------------------------------------------------ prices

    def _full(self, run: tuple[int, ...]) -> tuple[RunText, Any]:
        hit = self._full_plans.get(run)
        if hit is None:
            # the lossless text of a run is its messages' pieces joined: the planners of
            # one call that image the same steps as the same units share it (one join of
            # up to 100M chars, one string: its layout and factsheet are found by it)
            units = self.units
            key = (run, tuple(units[k].start for k in run), units[run[-1]].end)
            rt = self._full_texts.get(key)
            if rt is None:
                rt = self._full_texts[key] = self.run_text(run, Treatment())
                # the run's messages' level-0 pieces become spans of its text (one copy)
                self.source.back(rt.text, 0, [p for k in run for p in units[k].positions])
            hit = (rt, self._plan(rt.text))
            self._full_plans[run] = hit
        return hit

    def overhead_of(self, whole: tuple[int, ...]) -> int:
        """Guide, factsheet and bridges of a whole run (its factsheet read when first
        asked: a choice or prefix that the floor already rules out never reads it)."""
        hit = self._overheads.get(whole)
        if hit is None:
            hit = self._overheads[whole] = self._overhead(self._full(whole)[0].text)
        return hit

    def _floor_of(self, whole: tuple[int, ...]) -> int:
        hit = self._floors.get(whole)
        if hit is None:
            hit = self._floors[whole] = self._overhead_floor(self._full(whole)[0].text)
        return hit

    def _ceiling_of(self, whole: tuple[int, ...]) -> int:
        hit = self._ceilings.get(whole)
        if hit is None:
            assert self._overhead_ceiling is not None
            hit = self._ceilings[whole] = self._overhead_ceiling(self._full(whole)[0].text)
        return hit

    def _of_whole(self, bound: int) -> Callable[[tuple[int, ...]], int]:
        """A whole run's overhead: its floor (``bound`` < 0), exact, or ceiling (> 0)."""
        return self._floor_of if bound < 0 else self._ceiling_of if bound > 0 else self.overhead_of

    def _of_text(self, bound: int) -> Callable[[str], int]:
        if bound < 0:
            return self._overhead_floor
        if bound > 0:
            assert self._overhead_ceiling is not None
            return self._overhead_ceiling
        return self._overhead

    def _decide(self, price: Callable[[int], tuple[int, int]]) -> bool:
        """``_fits(*price(0))``, where ``price(bound)`` prices with each run's overhead
        floor (``bound`` -1), exact (0) or ceiling (1): a floor's price that does not
        fit, or a ceiling's that does, decides without reading a factsheet."""
        if not self._fits(*price(-1)):
            return False
        if self._overhead_ceiling is not None and self._fits(*price(1)):
            return True
        return self._fits(*price(0))

    def _pages(self, rt: RunText) -> tuple[int, int]:
        """(image tokens, pages) of a run's text (a run that is all dropped: no page)."""
        if rt.all_dropped or not rt.text:
            return 0, 0
        p = self._plan(rt.text)
        # a plan stopped at the page limit: more pages than any plan may have
        return sum(p.page_tokens), len(p.page_tokens) + (0 if p.complete else 1)

    def _prefix_pages(self, run: tuple[int, ...], upto: int) -> tuple[int, int]:
        """Pages of the first ``upto`` units of ``run`` at level 0, from the full run's plan."""
        rt, plan = self._full(run)
        # units without text (an acknowledgement) have no span: the last one that has
        ends = [rt.spans[k][1] for k in run[:upto] if k in rt.spans]
        if not ends:
            return 0, 0
        end = ends[-1]
        starts = plan.page_starts
        k = sum(1 for s in starts if s < end)
        if k == 0:
            return 0, 0
        if k == len(starts) and not plan.complete:  # past the page limit: too many pages
            return sum(plan.page_tokens), k + 1
        last = self._plan(rt.text[starts[k - 1] : end])
        return sum(plan.page_tokens[: k - 1]) + sum(last.page_tokens[:1]), k

    def lossless_pages(self, c: int) -> int:
        """Pages when units [0, c) are imaged at level 0 (as :meth:`lossless_tokens`
        counts them: a run's prefix ends on the page its last unit ends on)."""
        pages = 0
        for run in self.runs_of(c):
            whole = self._run_of[run[0]]
            rt, plan = self._full(whole)
            ends = [rt.spans[k][1] for k in run if k in rt.spans]
            if ends:
                k = sum(1 for s in plan.page_starts if s < ends[-1])
                past = k == len(plan.page_starts) and not plan.complete
                pages += k + 1 if past else k
        return pages

    def _price_floors(self) -> list[int]:
        """For each imaged prefix ``c`` (index ``c``), a floor of ``lossless_tokens(c)``
        known without a layout: the text that stays, and for each run of the prefix the
        least price of pages holding its units' printable characters (no factsheet, no
        guide). Empty when not known (no floor given, or a middle of more than
        ``_FLOOR_UNITS`` units: one pass per planner, cheap next to a layout only there).
        A choice whose floor is over the target at every prefix cannot fit losslessly:
        it is ruled out without laying its text out (issue 22: most of a compaction's
        layouts priced choices that fail)."""
        if self._lb is None:
            self._lb = []
            floor, cells = self._pages_floor, self._cells
            if floor is None or cells is None or len(self.units) > _FLOOR_UNITS:
                return self._lb
            out = [0]
            done = cur = 0  # floors of the runs closed before c; the open run's cells
            known = self._cell_counts
            for c, u in enumerate(self.units, 1):
                if u.kept:
                    done += floor(cur)
                    cur = 0
                elif u.positions:
                    n = known.get((u.start, u.end))
                    if n is None:
                        n = known[(u.start, u.end)] = sum(map(cells, self._pieces0(u.index)))
                    cur += n
                out.append(self.fixed + self._after[c] + self._kept_before[c] + done + floor(cur))
            self._lb = out
            self._lb_least = min(out[self._least :], default=0)
        return self._lb

    def lossless_tokens(self, c: int, *, bound: int = 0) -> tuple[int, int]:
        """(estimated tokens, pages) when units [0, c) are imaged at level 0 (``bound``
        -1 / 1: with each run's overhead floor / ceiling, a lower / upper bound of the
        tokens, the same pages)."""
        tokens = self.fixed + self._after[c] + self._kept_before[c]
        pages = 0
        of_whole = self._of_whole(bound)
        for run in self.runs_of(c):
            whole = self._run_of[run[0]]
            t, n = self._prefix_pages(whole, len(run))
            tokens += t + of_whole(whole)
            pages += n
        return tokens, pages

    def _lossless_fits(self, c: int) -> bool:
        """``_fits(*lossless_tokens(c))``, the factsheets read only when the bounds do
        not decide, and nothing laid out when the floor without a layout does."""
        floors = self._price_floors()
        if floors and floors[c] > self.target:
            return False
        return self._decide(lambda bound: self.lossless_tokens(c, bound=bound))

    def _span_pages(self, whole: tuple[int, ...], run: tuple[int, ...]) -> tuple[int, int]:
        """Estimated (image tokens, pages) of ``run``, a stretch of ``whole`` that does not
        start at its first unit: its share of the pages of the whole run's plan."""
        rt, plan = self._full(whole)
        spans = [rt.spans[k] for k in run if k in rt.spans]
        if not spans:
            return 0, 0
        a, b = spans[0][0], spans[-1][1]
        if not plan.complete:  # the plan stopped at the page limit
            if b > plan.page_starts[-1]:
                return sum(plan.page_tokens), len(plan.page_tokens) + 1
            plan = dataclasses.replace(
                plan, page_starts=plan.page_starts[:-1], page_tokens=plan.page_tokens[:-1]
            )
        starts = (*plan.page_starts, len(rt.text))
        share = tokens = 0.0
        for p, tok in enumerate(plan.page_tokens):
            lo, hi = max(a, starts[p]), min(b, starts[p + 1])
            if hi > lo:
                frac = (hi - lo) / max(1, starts[p + 1] - starts[p])
                share += frac
                tokens += tok * frac
        return int(tokens) + 1, max(1, math.ceil(share))

    def tokens_from(self, first: int, c: int, *, exact: bool, bound: int = 0) -> tuple[int, int]:
        """(tokens, pages) when units [first, c) are imaged at level 0 and those before
        ``first`` stay text. ``exact=False`` prices a run cut at ``first`` by its share
        of the whole run's pages (no layout); ``exact=True`` lays it out. ``bound`` as
        for :meth:`lossless_tokens`."""
        if first == 0:
            return self.lossless_tokens(c, bound=bound)
        over = self._of_text(bound)
        of_whole = self._of_whole(bound)
        tokens = self.fixed + self._after[c] + self._kept_before[c] + self._text_before[first]
        pages = 0
        for run in self.runs_of(c, first):
            whole = self._run_of[run[0]]
            if run[0] == whole[0]:  # the run starts where it would: as lossless_tokens does
                t, n = self._prefix_pages(whole, len(run))
                tokens += t + of_whole(whole)
            elif exact:
                rt = self.run_text(run, Treatment())
                t, n = self._pages(rt)
                tokens += t + over(rt.text)
            else:
                t, n = self._span_pages(whole, run)
                tokens += t + of_whole(whole)
            pages += n
        return tokens, pages

    def _fits_from(self, first: int, c: int, *, exact: bool) -> bool:
        """``_fits(*tokens_from(first, c, exact=exact))``, decided by the bounds first."""
        return self._decide(lambda bound: self.tokens_from(first, c, exact=exact, bound=bound))

    def _latest_first(self, c: int) -> tuple[int, int]:
        """(first, tokens): the latest start of the imaged range [first, c) that still
        fits (0: none later), and the history's tokens with it."""
        lo, hi = 0, min(c, self._latest + 1) if self.start_late else 1  # lo fits
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._fits_from(mid, c, exact=False):
                lo = mid
            else:
                hi = mid
        while lo > 0:
            # the bounds first: a start they decide needs no factsheet of its run to
            # decide (the plan's price is exact: the build lists those facts anyway)
            if self._fits_from(lo, c, exact=True):
                return lo, self.tokens_from(lo, c, exact=True)[0]
            lo //= 2  # the estimate was optimistic: halve the shift until it fits
        return 0, self.lossless_tokens(c)[0]

    def treated_tokens(
        self, treat: Treatment, c: int, *, sources: bool = True
    ) -> tuple[int, int, list[RunText]]:
        """(estimated tokens, pages, run texts) when units [0, c) are imaged under ``treat``
        (``sources=False``: a price only, the texts without their source)."""
        tokens = self.fixed + self._after[c] + self._kept_before[c]
        pages = 0
        texts = []
        for run in self.runs_of(c):
            rt = self.run_text(run, treat, source=sources)
            t, n = self._pages(rt)
            whole = self._run_of[run[0]]
            tokens += t + self.overhead_of(whole)
            if rt.all_dropped:
                tokens += -(-len(rt.text) // 4)
            pages += n
            texts.append(rt)
        return tokens, pages, texts

    def _fits(self, tokens: int, pages: int) -> bool:
        return tokens <= self.target and pages <= self.page_cap

    def _fits_slack(self, tokens: int, pages: int, slack: int) -> bool:
        return self._fits(tokens - slack, pages)

    # ------------------------------------------------------------------ search

    def _widest(self) -> int:
        """The widest imaged prefix whose level-0 pages stay within the page cap (once
        per planner: the fit rounds change the target, not the pages)."""
        if self._widest_c is None:
            self._widest_c = self._find_widest()
        return self._widest_c

    def _find_widest(self) -> int:
        m = len(self.units)
        if self.lossless_pages(m) <= self.page_cap:
            return m
        lo, hi = 0, m  # pages grow with the prefix: invariant pages(lo) <= cap < pages(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.lossless_pages(mid) <= self.page_cap:
                lo = mid
            else:
                hi = mid
        return lo

    def has_lossless(self) -> bool:
        """``lossless() is not None``, without finding the plan (the widest prefix within
        the page cap fits, or none does): what the rung asks of its widest choice."""
        return self._lossless_hi() is not None

    def _lossless_hi(self) -> int | None:
        """The widest imaged prefix within the page cap when it fits (None: no lossless
        plan: :meth:`lossless` searches the fewest units below it)."""
        if self.fixed + self._kept_before[-1] > self.target:
            # the units kept as text and the head and tail alone exceed the target: every
            # prefix's price counts them (lossless_tokens), so none fits; no layout needed
            return None
        if self._price_floors() and self._lb_least > self.target:
            return None  # no prefix fits even at its floor: no layout needed either
        hi = self._widest()  # more imaging saves tokens, up to what the page cap allows
        if hi < self._least or not self._lossless_fits(hi):
            return None
        return hi

    def lossless(self) -> Plan | None:
        """The fewest oldest units whose pages fit, nothing lost; None when none does."""
        hi = self._lossless_hi()
        if hi is None:
            return None
        lo = self._least  # invariant: imaging [0, hi) fits
        while lo < hi:
            mid = (lo + hi) // 2
            if self._lossless_fits(mid):
                hi = mid
            else:
                lo = mid + 1
        first, tokens = self._latest_first(hi)
        runs = tuple(self.run_text(r, Treatment()) for r in self.runs_of(hi, first))
        return Plan(hi, runs, Treatment(), tokens, first=first)

    def moves(self, c: int) -> list[tuple[str, int, int]]:
        """The shortening moves of [0, c), in the order pages lose things (SPEC §5.6, §5.9)."""
        # a unit without text (a bridge, an acknowledgement) has nothing to lose
        lens0 = self._lens0()
        units = [u for u in self.units[:c] if not u.kept and lens0[u.index]]
        tool = [p for u in units for p in u.positions if self.source.tool_output[p]]
        out: list[tuple[str, int, int]] = []
        for level in range(1, LEVELS + 2):  # LEVELS + 1: elided
            out.extend(zip(repeat("level"), tool, repeat(level)))
        out.extend(zip(repeat("drop"), [u.index for u in units if not u.user], repeat(0)))
        out.extend(zip(repeat("drop"), [u.index for u in units if u.user], repeat(0)))
        return out

    @staticmethod
    def apply(moves: Sequence[tuple[str, int, int]], j: int) -> Treatment:
        """The treatment after the first ``j`` moves."""
        head = moves[:j]
        levels = {a: b for kind, a, b in head if kind == "level"}  # the last level wins
        return Treatment(levels, {a for kind, a, _ in head if kind == "drop"})

    def _apply_at(self, c: int, moves: Sequence[tuple[str, int, int]], j: int) -> Treatment:
        """:meth:`apply` for the moves of ``[0, c)``: past the level moves, every tool
        output is at its last level (copied, not replayed)."""
        hit = self._all_levels.get(c)
        if hit is None:
            n = sum(1 for m in moves if m[0] == "level")
            hit = self._all_levels[c] = (n, self.apply(moves, n).levels)
        n, levels = hit
        if j < n:
            return self.apply(moves, j)
        return Treatment(dict(levels), {a for _, a, _ in moves[n:j]})

    def lossy(self, slack: int = 0) -> Plan | None:
        """Shorten the imaged text until it fits, losing the least (``slack``: extra room).

        The whole middle is imaged, unless the page cap binds: then also the widest
        prefix within the cap (and one between), its newer steps kept as text; the
        candidate that loses fewest characters wins.
        """
        m = len(self.units)
        hi = self._widest()
        best: Plan | None = None
        for c in sorted({m, hi, (hi + m) // 2} - {0}, reverse=True):
            plan = self._lossy_at(c, slack)
            if plan is not None and (best is None or plan.loss < best.loss):
                best = plan
        return best

    def _exact_at(
        self,
        c: int,
        moves: Sequence[tuple[str, int, int]],
        j: int,
        cut: tuple[int, int] | None,
        cap: tuple[int, int] | None = None,
    ) -> tuple[int, int]:
        """(tokens, pages) after the first ``j`` moves (and ``cut``, ``cap``), laid out;
        memoised (the fit rounds search again with another target), without the texts."""
        key = (c, j, cut, cap)
        hit = self._exact.get(key)
        if hit is None:
            treat = self._apply_at(c, moves, j)
            treat.cut = cut
            treat.cap = cap
            tokens, pages, _ = self.treated_tokens(treat, c, sources=False)
            hit = self._exact[key] = (tokens, pages)
        return hit

    def _estimate(self, c: int, moves: Sequence[tuple[str, int, int]]) -> MovePrices:
        est = self._estimates.get(c)
        if est is None:
            est = self._estimates[c] = MovePrices(self, c, moves)
        return est

    def _lossy_at(self, c: int, slack: int) -> Plan | None:
        moves = self._moves.get(c)
        if moves is None:
            moves = self._moves[c] = self.moves(c)

        def fits(j: int, cut: tuple[int, int] | None = None) -> bool:
            return self._fits_slack(*self._exact_at(c, moves, j, cut), slack)

        if not moves or not fits(len(moves)):
            return None
        # the estimate by sums says where the boundary lies; exact prices confirm it
        est = self._estimate(c, moves)

        def likely(j: int) -> bool:
            tokens, pages = est.price(j)
            return self._fits(tokens - slack, pages)

        hi = gallop(fits, lower_bound(0, len(moves), likely), 0, len(moves))
        cut = cap = None
        if hi and moves[hi - 1][0] == "drop":  # cut the last unit from its start instead
            cut = self._refine_cut(c, moves, hi, moves[hi - 1][1], slack)
        elif hi and moves[hi - 1][0] == "level":  # the last output capped: as wide as fits
            cap = self._refine_cap(c, moves, hi, slack)
        j = hi - 1 if cut is not None else hi
        treat = self._apply_at(c, moves, j)
        treat.cut = cut
        treat.cap = cap
        tokens, _, texts = self.treated_tokens(treat, c)
        lens0 = self._lens0()
        whole = sum(lens0[k] for rt in texts for k in rt.units)
        loss = max(0, whole - sum(len(rt.text) for rt in texts))
        return Plan(c, tuple(texts), treat, tokens - slack, loss)

    def _refine_cap(
        self, c: int, moves: Sequence[tuple[str, int, int]], j: int, slack: int
    ) -> tuple[int, int] | None:
        """The widest cap of the output the ``j``-th move caps (a level move) that fits,
        between that level's cap and the one before it (its whole length after level 0);
        None when only the level's own cap fits (or the move elides)."""
        _, pos, level = moves[j - 1]
        if not 1 <= level <= LEVELS:
            return None
        config = self.source.config
        low = level_config(config, level).max_result_chars
        longest = max(self.source.sizes(pos)[0], default=0)
        high = longest if level == 1 else level_config(config, level - 1).max_result_chars
        if low is None or high is None:
            return None
        high = min(high, longest)
        step = 64  # the price steps with whole rows: caps on a grid of 64 chars
        n = (high - low) // step
        if n < 1:
            return None

        def over(x: int) -> bool:  # the cap low + x * step no longer fits
            cap = (pos, low + x * step)
            return not self._fits_slack(*self._exact_at(c, moves, j, None, cap), slack)

        if not over(n):
            return (pos, low + n * step)
        best = lower_bound(1, n, over) - 1  # the last grid cap that fits
        return None if best < 1 else (pos, low + best * step)

    def _refine_cut(
        self, c: int, moves: Sequence[tuple[str, int, int]], j: int, k: int, slack: int
    ) -> tuple[int, int] | None:
        """The fewest chars cut from the start of unit ``k`` (instead of dropping it, the
        ``j``-th move) that fit; None when no cut does."""
        n = len(self._unit_text(k, self._apply_at(c, moves, j - 1)))
        if n == 0:
            return None

        def fits(x: int) -> bool:
            return self._fits_slack(*self._exact_at(c, moves, j - 1, (k, x)), slack)

        if not fits(n):  # cutting everything is at least as short as dropping, up to the marker
            return None
        # a plain binary search, as the exact search did: the price of a cut steps with
        # whole rows of the last page, so an estimate of where it crosses is no closer than
        # the width of one step; log2 of one step's chars is as few probes as any
        return (k, lower_bound(1, n, fits))
