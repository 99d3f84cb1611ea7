"""Trim rung: the last fallback, so compaction always makes progress (SPEC §5.7).

Where nothing else reached the target (no vision, pages that cannot be encoded, a
summary that failed), it drops the oldest steps of the middle, whole, until the
history fits: never the head, never the tail, never the newest real user message,
never a pinned step. It uses the history core's one trimming algorithm
(:func:`glyphfold.compaction.history.trim.drop_spans`): one breadcrumb before each
kept part, earlier breadcrumbs folded in, a ledger row per dropped message and a
:class:`HistoryTrimmed` event. The turn-atomic trims of SPEC §2 are that same
algorithm applied to whole turns.
"""

from __future__ import annotations

from glyphfold.compaction.history.events import HistoryTrimmed
from glyphfold.compaction.history.model import History
from glyphfold.compaction.history.steps import Regions, Step
from glyphfold.compaction.history.trim import Dropped, Span, drop_spans
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome
from glyphfold.compaction.ladder.rungs.common import kept_steps, regions

_CRUMB_TOKENS = 70  # a breadcrumb with its bridge and acknowledgement, about


def spans_of(steps: list[Step]) -> list[Span]:
    """Consecutive steps (oldest first) grouped into contiguous spans."""
    out: list[Span] = []
    for s in steps:
        if out and out[-1].end == s.start:
            last = out[-1]
            out[-1] = Span(last.start, s.end, steps=last.steps + 1)
        else:
            out.append(Span(s.start, s.end, steps=1))
    return out


class Trim:
    """Drop the oldest middle steps, whole, until the history fits."""

    name = "trim"
    model_free = True

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        reg = regions(history, ctx)
        kept = kept_steps(history, reg, ctx)
        droppable = [s for s in reg.middle_steps if s.start not in kept]
        droppable += self._older_tail_steps(history, reg, ctx)
        before = ctx.tokens_of(history)
        if not droppable or before <= ctx.target_tokens:
            return RungOutcome(history, None)
        costs = ctx.message_costs(history)
        n, est = 0, before + _CRUMB_TOKENS
        while n < len(droppable) and est > ctx.target_tokens:  # first guess, then verify
            est -= sum(costs[droppable[n].start : droppable[n].end])
            n += 1
        while True:
            done = drop_spans(history, spans_of(droppable[:n]))
            after = ctx.count(done.history)
            if after <= ctx.target_tokens or n >= len(droppable):
                break
            n += 1
        return self._outcome(history, ctx, done, n, before, after, costs)

    @staticmethod
    def _older_tail_steps(history: History, reg: Regions, ctx: RungContext) -> list[Step]:
        """The tail's steps but the newest, oldest first: dropped only after the whole
        middle, when the history is still over the target. The floor
        (:func:`~glyphfold.compaction.ladder.loop.minimal_tokens`) keeps only the newest
        step, so every budget at or above it fits (issue 21, item 14): the tail the run
        fixed may be wider, and an earlier rung may have moved its pages into it."""
        msgs = history.messages
        request = set(reg.request)
        return [
            s
            for s in reg.tail_steps[:-1]
            if s.start not in request and not any(ctx.is_pinned(msgs[i]) for i in s.indices)
        ]

    def _outcome(
        self,
        history: History,
        ctx: RungContext,
        done: Dropped,
        n_steps: int,
        before: int,
        after: int,
        costs: tuple[int, ...],
    ) -> RungOutcome:
        msgs = history.messages
        why = {i: "dropped whole step (last fallback)" for i in done.indices}
        why.update({i: "earlier breadcrumb folded into the new one" for i in done.folded})
        removed = tuple(
            Removed(i, "trimmed", len(msgs[i].text), costs[i], role=msgs[i].role, detail=d)
            for i, d in sorted(why.items())
        )
        turns_before = len(segment_turns(history).turns)
        turns_after = len(segment_turns(done.history).turns)
        event = HistoryTrimmed(
            reason="overflow_recovery" if ctx.reactive else "token_budget",
            dropped_messages=len(done.indices),
            dropped_turns=turns_before - turns_after,
            kept_turns=turns_after,
            tokens_before=before,
            tokens_after=after,
            dropped_range=(done.start, done.end),
            breadcrumb=done.breadcrumbs[0],
            dropped_steps=n_steps,
        )
        note = f"{n_steps:,} step(s) dropped, {len(done.breadcrumbs):,} breadcrumb(s)"
        entry = LedgerEntry(self.name, before, after, removed, note=note)
        return RungOutcome(done.history, entry, events=(event,))
