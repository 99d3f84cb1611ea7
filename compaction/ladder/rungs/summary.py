"""Summary rung: the last resort, one model call (SPEC §5: it decides what mattered).

The middle (head and tail as in snapshots) is serialised to a transcript —
earlier snapshots unfold to their source, earlier summaries to their text — and
summarised with bounded requests (:func:`summarize_bounded`). The summary
replaces the middle as one user-side message plus a short acknowledgement.

Documented fallback: when the summarizer raises, times out or returns
something unusable, the rung changes nothing and records the failure in the
ledger and as a :class:`SummaryFailed` event; the trim rung then guarantees
progress. The input is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.events import SummaryFailed
from glyphfold.compaction.history.messages import History, Message, Text
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import X_KEY, RungContext, RungOutcome, glyphfold_meta
from glyphfold.compaction.ladder.rungs.elide import tool_names
from glyphfold.compaction.ladder.rungs.snapshot import serialise
from glyphfold.compaction.ladder.summarizers import summarize_bounded, summary_input_chars
from glyphfold.compaction.ladder.transcript import TranscriptConfig, plain_text

from glyphfold.errors import SummarizerError

ACK_TEXT = "Understood: I will continue from the summary above."


@dataclass(frozen=True, slots=True)
class SummaryConfig:
    """Bounds of the summary rung."""

    head_turns: int = 1
    min_tail_turns: int = 1
    # one request never exceeds this (~100k tokens at 4 chars/token): fits every
    # current summariser model's window with room for the prompt and the reply
    max_input_chars: int = 400_000
    timeout_s: float | None = 120.0
    expected_summary_tokens: int = 2048  # reserved when choosing how many tail turns fit
    transcript: TranscriptConfig = field(default_factory=TranscriptConfig)

    def __post_init__(self) -> None:
        if self.head_turns < 0 or self.min_tail_turns < 1:
            msg = (
                f"head_turns must be >= 0 and min_tail_turns >= 1, got "
                f"{self.head_turns}, {self.min_tail_turns}"
            )
            raise ValueError(msg)
        if self.max_input_chars < 1000:
            msg = f"max_input_chars must be >= 1000, got {self.max_input_chars}"
            raise ValueError(msg)
        if self.timeout_s is not None and self.timeout_s <= 0:
            msg = f"timeout_s must be > 0 or None, got {self.timeout_s}"
            raise ValueError(msg)


class Summary:
    """Replace the middle with a model-written summary."""

    name = "summary"
    model_free = False

    def __init__(self, summarizer: Any, config: SummaryConfig | None = None) -> None:
        if not callable(summarizer):
            msg = f"summarizer must be callable (text -> summary), got {type(summarizer).__name__}"
            raise TypeError(msg)
        self.summarizer = summarizer
        self.config = config or SummaryConfig()

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        cfg = self.config
        seg = segment_turns(history)
        turns = seg.turns
        head_n = min(cfg.head_turns, len(turns))
        if len(turns) - head_n - cfg.min_tail_turns < 1:
            return RungOutcome(history, None)
        head_end = turns[head_n - 1].end if head_n else seg.leading_end
        mid_start = turns[head_n].start
        costs = [ctx.count_message(m) for m in history.messages]
        fixed = sum(costs[:head_end]) + cfg.expected_summary_tokens + 60
        tail_k = cfg.min_tail_turns
        tail_tokens = sum(costs[turns[len(turns) - tail_k].start :])
        for k in range(cfg.min_tail_turns + 1, len(turns) - head_n):
            t = turns[len(turns) - k]
            more = sum(costs[t.start : t.end])
            if fixed + tail_tokens + more > ctx.target_tokens:
                break
            tail_tokens += more
            tail_k = k
        tail_start = turns[len(turns) - tail_k].start
        pinned_mid = [i for i in range(mid_start, tail_start) if ctx.is_pinned(history.messages[i])]
        if pinned_mid:  # pins stay verbatim: the middle ends before the first pinned turn
            first = pinned_mid[0]
            starts = [t.start for t in turns if t.start <= first]
            tail_start = starts[-1]
            if tail_start <= mid_start:
                return RungOutcome(history, None)
        middle = [(i, history.messages[i]) for i in range(mid_start, tail_start)]
        source, _spans = serialise(middle, tool_names(history), cfg.transcript)
        source = plain_text(source)  # a text model reads the marks as plain labels
        before = ctx.tokens_of(history)
        if ctx.dry_run:
            # a plan must not call the model: report what would be summarised
            removed = tuple(
                Removed(i, "summary", len(m.text), costs[i], role=m.role) for i, m in middle
            )
            est_after = before - sum(costs[mid_start:tail_start]) + cfg.expected_summary_tokens
            entry = LedgerEntry(
                self.name, before, est_after, removed, note="dry run: the summarizer was not called"
            )
            return RungOutcome(history, entry)
        try:
            text, calls = summarize_bounded(
                source,
                self.summarizer,
                max_input_chars=summary_input_chars(self.summarizer, default=cfg.max_input_chars),
                timeout_s=cfg.timeout_s,
            )
        except SummarizerError as exc:
            entry = LedgerEntry(self.name, before, before, note=f"failed, skipped: {exc}")
            return RungOutcome(history, entry, events=(SummaryFailed(str(exc)),))
        if not text.strip():
            entry = LedgerEntry(self.name, before, before, note="failed, skipped: empty summary")
            return RungOutcome(history, entry, events=(SummaryFailed("empty summary"),))
        body = f"[glyphfold summary of {len(middle)} earlier messages]\n{text.strip()}"
        info = {"kind": "summary", "messages": len(middle), "source_chars": len(source)}
        summ = _marked("user", body, info)
        ack = _marked("assistant", ACK_TEXT, {"kind": "snapshot_ack"})
        head = list(history.messages[:head_end])
        inserted = [summ, ack]
        if head and head[-1].role == "user":
            inserted.insert(0, _marked("assistant", "(continuing)", {"kind": "bridge"}))
        out = history.replace_messages([*head, *inserted, *history.messages[tail_start:]])
        removed = tuple(
            Removed(
                i,
                "summary",
                len(m.text),
                costs[i],
                role=m.role,
                detail="earlier summary folded in" if glyphfold_meta(m).get("kind") else "",
            )
            for i, m in middle
        )
        entry = LedgerEntry(
            self.name,
            before,
            ctx.count(out),
            removed,
            note=f"{calls} summarizer call(s)",
            extra={"source_chars": len(source), "calls": calls},
        )
        return RungOutcome(out, entry)


def _marked(role: str, text: str, info: dict[str, Any]) -> Message:
    return Message(
        role, (Text(text),), raw={"role": role, X_KEY: info}, meta=MappingProxyType({X_KEY: info})
    )
