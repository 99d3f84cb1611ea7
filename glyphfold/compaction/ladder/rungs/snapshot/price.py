"""Pricing the planner's shortening candidates by sums, not layouts (issue 22).

The lossy search (SPEC §5.6, §5.9) looks for the shortest prefix of one ordered list
of *moves* (a tool result one cap level tighter, a step dropped) whose pages fit.
Laying out every candidate's text costs a layout of up to the whole middle per
probe. Instead :class:`MovePrices` prices a candidate from sums: each run's text
length at "no move" (exact, from the transcript), plus the change each move makes
(from the sizes of the message's tool results and arguments and the caps of the
level, prefix-summed per run), turned into pages and tokens with the run's own
density (characters per page and tokens per page of its level-0 layout, made once).

That estimate only steers: :func:`gallop` starts at the estimated boundary and finds
the exact one with the planner's exact prices (a layout of a candidate near the
target, a few pages), so the chosen plan is the one an exact search would choose
whenever the exact price falls as moves are added (the search's assumption), at a
handful of small layouts per call whatever the history size.
"""

from __future__ import annotations

import math
import weakref
from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from glyphfold.compaction.ladder.rungs.snapshot.source import LEVELS, level_config

if TYPE_CHECKING:  # pragma: no cover
    from glyphfold.compaction.ladder.rungs.snapshot.plan import Planner

__all__ = ["MovePrices", "gallop", "lower_bound"]

_STUB = 50  # an elided result or argument: a one-line stub of about this many chars
_RESULT_FRAME = 40  # the header and end lines an elided result no longer has
_MARKER = 126  # a dropped-steps marker line and its separator
_CUT_MARKER = 90  # the line that says a step's start was cut


# this many level moves or more are priced with arrays (MovePrices._level_moves)
_VECTOR_MOVES = 2048


def _machine(values: np.ndarray) -> array[int]:
    """An int64 array as an ``array("q")`` (bisect reads it without numpy's per-item cost)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def lower_bound(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The least ``j`` in ``[lo, hi]`` with ``ok(j)`` (``ok(hi)`` assumed)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def gallop(ok: Callable[[int], bool], start: int, lo: int, hi: int) -> int:
    """A boundary ``j`` in ``[lo, hi]``: ``ok(j)`` and (``j == lo`` or not ``ok(j - 1)``),
    found from ``start`` outwards in doubling steps (``ok(hi)`` is known to hold).

    When ``ok`` is monotone the boundary is unique: the binary search's answer, found
    with about ``2 log2(distance)`` calls of ``ok`` instead of ``log2(hi - lo)``.
    """
    start = min(max(start, lo), hi)
    step = 1
    if ok(start):
        top = start
        while True:
            below = top - step
            if below < lo:
                bottom = lo - 1  # ok(lo - 1) is taken as False: lo is the least
                break
            if not ok(below):
                bottom = below
                break
            top = below
            step *= 2
    else:
        bottom = start
        while True:
            top = bottom + step
            if top >= hi:
                top = hi
                break
            if ok(top):
                break
            bottom = top
            step *= 2
    while top - bottom > 1:  # not ok(bottom) (or bottom == lo - 1), ok(top)
        mid = (bottom + top) // 2
        if ok(mid):
            top = mid
        else:
            bottom = mid
    return top


class MovePrices:
    """Estimated (tokens, pages) of the history after the first ``j`` moves over ``[0, c)``."""

    def __init__(self, planner: Planner, c: int, moves: Sequence[tuple[str, int, int]]) -> None:
        # a weak reference: the planner keeps its MovePrices, and a cycle would keep the
        # planner (units, slices: 10^6 objects at 10^5 messages) alive until the cyclic
        # collector runs, which compact pauses (issue 22)
        self.planner = weakref.proxy(planner)
        self.c = c
        self.runs = planner.runs_of(c)
        src = planner.source
        unit_of_pos = {p: u.index for u in planner.units[:c] for p in u.positions}
        run_of = {k: r for r, run in enumerate(self.runs) for k in run}
        self.base: list[int] = []
        self.density: list[tuple[float, int]] = []  # (chars per page, tokens per page)
        self.overhead = 0
        fallback: tuple[float, int] | None = None
        single: list[int] = []  # runs of one page: their density is not measured
        for r, run in enumerate(self.runs):
            whole = planner._run_of[run[0]]
            rt, plan = planner._full(whole)
            ends = [rt.spans[k][1] for k in run if k in rt.spans]
            self.base.append(ends[-1] if ends else 0)
            self.overhead += planner.overhead_of(whole)
            n_pages = len(plan.page_tokens)
            if n_pages >= 2:
                d = (plan.page_starts[-1] / (n_pages - 1), plan.page_tokens[0])
                fallback = d if fallback is None or d[0] > fallback[0] else fallback
            else:
                d = (float(max(1, len(rt.text))), sum(plan.page_tokens))
                single.append(r)
            self.density.append(d)
        for r in single if fallback is not None else ():  # the density of the fullest run
            self.density[r] = fallback  # type: ignore[assignment]
        caps = [level_config(src.config, lv) for lv in range(LEVELS + 1)]
        inf = 1 << 60
        rcap = [cfg.max_result_chars or inf for cfg in caps]
        acap = [cfg.max_args_chars or inf for cfg in caps]
        # per run: indices of the moves that touch it, the running change, the drops
        # machine integers, not int objects: ~3.5e5 moves per estimate at 10^5 messages
        lens0 = planner._lens0()
        unit_len = {k: lens0[k] for k in run_of}
        self._by_sizes: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
        text_units = [[k for k in run if unit_len[k]] for run in self.runs]  # at level 0
        where = {k: (r, i) for r, ks in enumerate(text_units) for i, k in enumerate(ks)}
        # the level moves come first (Planner.moves: every output capped before any step
        # is dropped); each changes its message's piece by a known amount, whatever the
        # other moves: many of them are priced with arrays
        n_level = 0
        for kind, _, _ in moves:
            if kind != "level":
                break
            n_level += 1
        if n_level >= _VECTOR_MOVES and all(m[0] == "drop" for m in moves[n_level:]):
            level_runs, level_deltas = self._level_moves(
                moves[:n_level], unit_of_pos, run_of, unit_len, rcap, acap
            )
            start = n_level
        else:
            level_runs, level_deltas = np.zeros(0, np.int64), np.zeros(0, np.int64)
            start = 0
        dropped: set[int] = set()
        est: dict[int, list[int]] = {}  # position -> its estimated length change per level
        runs_of_move: list[int] = []
        deltas: list[int] = []
        drop_at: list[int] = []
        for kind, a, level in moves[start:]:
            if kind == "level":
                k = unit_of_pos[a]
                r = run_of[k]
                by_level = est.get(a)
                if by_level is None:
                    by_level = est[a] = self._changes(a, rcap, acap)
                delta = by_level[level] - by_level[level - 1]
                unit_len[k] += delta
            else:
                k = a
                r, i = where[k]
                ks = text_units[r]
                left = i > 0 and ks[i - 1] in dropped
                right = i + 1 < len(ks) and ks[i + 1] in dropped
                marker = _MARKER if not (left or right) else -_MARKER if left and right else 0
                delta = marker - unit_len[k] - 1
                dropped.add(k)
                drop_at.append(len(runs_of_move))
            runs_of_move.append(r)
            deltas.append(delta)
        # per run, in move order: the moves' indices and the running total of their changes
        every_run = np.concatenate((level_runs, np.array(runs_of_move, dtype=np.int64)))
        every_delta = np.concatenate((level_deltas, np.array(deltas, dtype=np.int64)))
        is_drop = np.zeros(len(every_run), dtype=np.bool_)
        is_drop[np.array(drop_at, dtype=np.int64) + start] = True
        order = np.argsort(every_run, kind="stable")
        bounds = np.searchsorted(every_run[order], np.arange(len(self.runs) + 1))
        self._at: list[array[int]] = []
        self._cum: list[array[int]] = []
        self._drops: list[array[int]] = []
        for r in range(len(self.runs)):
            mine = order[bounds[r] : bounds[r + 1]]  # move indices, ascending (stable)
            self._at.append(_machine(mine))
            self._cum.append(_machine(np.cumsum(every_delta[mine])))
            self._drops.append(_machine(mine[is_drop[mine]]))

    def _level_moves(
        self,
        moves: Sequence[tuple[str, int, int]],
        unit_of_pos: dict[int, int],
        run_of: dict[int, int],
        unit_len: dict[int, int],
        rcap: list[int],
        acap: list[int],
    ) -> tuple[np.ndarray, np.ndarray]:
        """(run, change of its text's length) of each of ``moves`` (all level moves), and
        ``unit_len`` updated by them: what the per-move loop computes, with arrays."""
        pos = np.fromiter((a for _, a, _ in moves), dtype=np.int64, count=len(moves))
        lvl = np.fromiter((b for _, _, b in moves), dtype=np.int64, count=len(moves))
        distinct, row = np.unique(pos, return_inverse=True)
        table = np.array(
            [self._changes(p, rcap, acap) for p in distinct.tolist()], dtype=np.int64
        ).reshape(len(distinct), LEVELS + 2)
        delta = table[row, lvl] - table[row, lvl - 1]
        units = np.array([unit_of_pos[p] for p in distinct.tolist()], dtype=np.int64)
        runs = np.array([run_of[k] for k in units.tolist()], dtype=np.int64)
        # each unit's length after all of them: the sum of its messages' changes
        # (float sums of integers far below 2**53: exact)
        per_pos = np.rint(np.bincount(row, weights=delta, minlength=len(distinct))).astype(np.int64)
        for k, d in zip(units.tolist(), per_pos.tolist(), strict=True):
            unit_len[k] += d
        return runs[row], delta

    def _changes(self, pos: int, rcap: list[int], acap: list[int]) -> list[int]:
        """Estimated change of message ``pos``'s piece length at each level (0 at level 0);
        kept on the planner: the estimates of its choices of ``c`` price the same messages
        (the caps are the planner's source's, the same for all of them)."""
        known = self.planner.move_changes
        hit = known.get(pos)
        if hit is None:
            hit = known[pos] = self._changes_of(pos, rcap, acap)
        return hit

    def _changes_of(self, pos: int, rcap: list[int], acap: list[int]) -> list[int]:
        src = self.planner.source
        results, args = src.sizes(pos)
        if not results and not args:  # an earlier snapshot's source: its pieces, exactly
            n0 = len(src.piece(pos, 0))
            return [len(src.piece(pos, lv)) - n0 for lv in range(LEVELS + 2)]
        key = (results, args)  # the changes depend on the sizes only (same caps throughout)
        hit = self._by_sizes.get(key)
        if hit is None:
            hit = self._by_sizes[key] = self._sized(results, args, rcap, acap)
        return hit

    @staticmethod
    def _sized(
        results: tuple[int, ...], args: tuple[int, ...], rcap: list[int], acap: list[int]
    ) -> list[int]:
        # plain loops, no generator per sum: this runs for every imaged tool message
        r0, a0 = rcap[0], acap[0]
        capped = []  # the piece's capped size at each level 0..LEVELS
        for lv in range(LEVELS + 1):
            r, a = rcap[lv], acap[lv]
            size = 0
            for n in results:
                size += n if n < r else r
            for n in args:
                size += n if n < a else a
            capped.append(size)
        base = capped[0]
        out = [size - base for size in capped]
        # elided: one-line stubs for the results and the long arguments
        d = 0
        for n in results:
            if n > _STUB:
                d += _STUB - _RESULT_FRAME - (n if n < r0 else r0)
        for n in args:
            if n > 120:
                d += _STUB - (n if n < a0 else a0)
        out.append(d)
        return out

    def price(self, j: int, cut: tuple[int, int] | None = None) -> tuple[int, int]:
        """Estimated (tokens, pages) after the first ``j`` moves (and ``cut``: chars cut
        from the start of one step)."""
        p = self.planner
        tokens = p.fixed + p._after[self.c] + p._kept_before[self.c] + self.overhead
        pages = 0
        for r, run in enumerate(self.runs):
            n = bisect_left(self._at[r], j)
            chars = self.base[r] + (self._cum[r][n - 1] if n else 0)
            if cut is not None and cut[0] in run:
                chars += _CUT_MARKER - cut[1]
            if len(run) == bisect_left(self._drops[r], j):  # every step dropped: a line
                tokens += _MARKER // 4
                continue
            cpp, tpp = self.density[r]
            share = max(0, chars) / cpp
            tokens += math.ceil(share * tpp)
            pages += math.ceil(share)
        return tokens, pages
