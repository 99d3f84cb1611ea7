"""Trim rung: the final fallback, turn-atomic trimming so compaction always makes progress.

Drops the oldest whole turns (never the newest one, never the leading system
messages) until the history fits, with core's breadcrumb and
``HistoryTrimmed`` event (SPEC §2.1-2.6, :func:`glyphfold.compaction.history.trim.trim_history`).
Core's trim knows nothing of pins; when a droppable turn holds a pinned
message, this rung drops the unpinned turns itself, oldest first, and marks the
cut with a breadcrumb message pair instead.
"""

from __future__ import annotations

from types import MappingProxyType

from glyphfold.compaction.history.events import HistoryTrimmed
from glyphfold.compaction.history.messages import History, Message, Text
from glyphfold.compaction.history.turns import BREADCRUMB_PREFIX, segment_turns
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import X_KEY, RungContext, RungOutcome, glyphfold_meta

BREADCRUMB_ACK = "Understood."


def _breadcrumb(n_msgs: int, n_turns: int) -> str:
    return (
        f"{BREADCRUMB_PREFIX} {n_msgs} messages in {n_turns} turn(s) were removed to fit the "
        "context window.]"
    )


class Trim:
    """Drop the oldest unpinned whole turns until the history fits."""

    name = "trim"
    model_free = True

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        if not any(ctx.is_pinned(m) for m in history.messages):
            return self._core_trim(history, ctx)
        return self._pinned_trim(history, ctx)

    def _core_trim(self, history: History, ctx: RungContext) -> RungOutcome:
        from glyphfold.compaction.history.events import EventBus
        from glyphfold.compaction.history.trim import trim_history

        reason = "overflow_recovery" if ctx.options.get("reactive") else "token_budget"
        # a dry run announces nothing: its event goes to a private bus
        bus = EventBus() if ctx.dry_run else ctx.options.get("bus")
        res = trim_history(
            history,
            budget=max(ctx.target_tokens, 1),
            reason=reason,
            profile=ctx.profile,
            counter=ctx.options.get("counter"),
            image_policy=ctx.options.get("image_policy", "spec"),
            bus=bus,
        )
        if res.event is None:
            return RungOutcome(history, None)
        ev = res.event
        msgs = history.messages
        a, b = ev.dropped_range
        removed = tuple(
            Removed(
                i,
                "trimmed",
                len(msgs[i].text),
                ctx.count_message(msgs[i]),
                role=msgs[i].role,
                detail="dropped whole turn (fallback)",
            )
            for i in range(a, b)
        )
        entry = LedgerEntry(
            self.name,
            ev.tokens_before,
            ev.tokens_after,
            removed,
            note=f"{ev.dropped_turns} turn(s) dropped",
        )
        return RungOutcome(res.history, entry, events=(ev,))

    def _pinned_trim(self, history: History, ctx: RungContext) -> RungOutcome:
        seg = segment_turns(history)
        turns = list(seg.turns)
        if len(turns) < 2:
            return RungOutcome(history, None)
        msgs = history.messages
        costs = [ctx.count_message(m) for m in msgs]
        total = ctx.tokens_of(history)
        droppable = [
            k
            for k, t in enumerate(turns[:-1])
            if not any(ctx.is_pinned(msgs[i]) for i in range(t.start, t.end))
        ]
        if not droppable:
            return RungOutcome(history, None)
        # first guess from per-message costs, then verify with the real estimate
        n_drop = 0
        est = total + 40  # the breadcrumb pair costs ~40 tokens
        while n_drop < len(droppable) and est > ctx.target_tokens:
            t = turns[droppable[n_drop]]
            est -= sum(costs[i] for i in range(t.start, t.end))
            n_drop += 1
        while True:
            drop = droppable[:n_drop]
            out, real, crumb_text = self._build(history, turns, drop)
            after = ctx.count(out)
            if after <= ctx.target_tokens or n_drop >= len(droppable):
                break
            n_drop += 1
        removed = tuple(
            Removed(
                i,
                "trimmed",
                len(msgs[i].text),
                costs[i],
                role=msgs[i].role,
                detail="dropped whole turn (fallback)",
            )
            for i in real
        )
        event = HistoryTrimmed(
            reason="overflow_recovery" if ctx.options.get("reactive") else "token_budget",
            dropped_messages=len(real),
            dropped_turns=len(drop),
            kept_turns=len(turns) - len(drop),
            tokens_before=total,
            tokens_after=after,
            dropped_range=(turns[drop[0]].start, turns[drop[-1]].end),
            breadcrumb=crumb_text,
        )
        entry = LedgerEntry(self.name, total, after, removed, note=f"{len(drop)} turn(s) dropped")
        return RungOutcome(out, entry, events=(event,))

    @staticmethod
    def _build(history: History, turns: list, drop: list[int]) -> tuple[History, list[int], str]:
        msgs = history.messages
        dropped_idx = [i for k in drop for i in range(turns[k].start, turns[k].end)]
        dropped_set = set(dropped_idx)
        real = [i for i in dropped_idx if glyphfold_meta(msgs[i]).get("kind") != "breadcrumb"]
        keep = [m for i, m in enumerate(msgs) if i not in dropped_set]
        crumb_text = _breadcrumb(len(real), len(drop))
        crumb = _marked("user", crumb_text, "breadcrumb")
        ack = _marked("assistant", BREADCRUMB_ACK, "breadcrumb")
        # the breadcrumb pair goes where the first dropped turn was
        first = turns[drop[0]].start
        pos = sum(1 for i in range(first) if i not in dropped_set)
        if pos and keep[pos - 1].role == "user":  # keep alternation valid
            keep.insert(pos, _marked("assistant", "(continuing)", "bridge"))
            pos += 1
        keep[pos:pos] = [crumb, ack]
        return history.replace_messages(keep), real, crumb_text


def _marked(role: str, text: str, kind: str) -> Message:
    info = {"kind": kind}
    return Message(
        role, (Text(text),), raw={"role": role, X_KEY: info}, meta=MappingProxyType({X_KEY: info})
    )
