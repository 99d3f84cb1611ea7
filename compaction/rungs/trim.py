"""Trim rung: the final fallback, turn-atomic trimming so compaction always makes progress.

Drops the oldest whole turns (never the newest one, never a turn holding a
pinned message, never the leading system messages) until the history fits,
marks the cut with a breadcrumb (SPEC §2.6) and reports a ``HistoryTrimmed``
event. Whole turns only, so a tool call never loses its result (SPEC §2.1).
"""

from __future__ import annotations

from types import MappingProxyType

from glyphfold.compaction.events import HistoryTrimmed
from glyphfold.compaction.ledger import LedgerEntry, Removed
from glyphfold.compaction.messages import History, Message, Text
from glyphfold.compaction.rungs.base import X_KEY, RungContext, RungOutcome, glyphfold_meta
from glyphfold.compaction.turns import BREADCRUMB_PREFIX, segment_turns

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
        seg = segment_turns(history)
        turns = list(seg.turns)
        if len(turns) < 2:
            return RungOutcome(history, None)
        msgs = history.messages
        costs = [ctx.count_message(m) for m in msgs]
        total = ctx.count(history)
        drop: list[int] = []  # turn indices, oldest first
        est = total + 40  # the breadcrumb pair costs ~40 tokens
        for k, t in enumerate(turns[:-1]):
            if est <= ctx.target_tokens:
                break
            span = range(t.start, t.end)
            if any(ctx.is_pinned(msgs[i]) for i in span):
                continue
            # an earlier breadcrumb turn goes too: the new one replaces it
            drop.append(k)
            est -= sum(costs[i] for i in span)
        if not drop:
            return RungOutcome(history, None)
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
        out = history.replace_messages(keep)
        after = ctx.count(out)
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
            dropped_range=(min(dropped_idx), max(dropped_idx) + 1),
            breadcrumb=crumb_text,
        )
        entry = LedgerEntry(self.name, total, after, removed, note=f"{len(drop)} turn(s) dropped")
        return RungOutcome(out, entry, events=(event,))


def _marked(role: str, text: str, kind: str) -> Message:
    info = {"kind": kind}
    return Message(
        role, (Text(text),), raw={"role": role, X_KEY: info}, meta=MappingProxyType({X_KEY: info})
    )
