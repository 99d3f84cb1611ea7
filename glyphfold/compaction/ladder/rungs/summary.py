"""Summary rung: the last resort, one model call (SPEC §5: it decides what mattered).

The oldest steps of the middle (head, tail and the steps every rung keeps, as for
snapshots: :mod:`glyphfold.compaction.ladder.rungs.common`) are serialised to a
transcript — earlier snapshots unfold to their source, earlier summaries to their
text — and summarised with bounded requests (:func:`summarize_bounded`). The
summary replaces them as one user-side message (plus an acknowledgement where
alternation needs one); as many of the newest middle steps as the budget allows
stay verbatim.

Documented fallback: when the summarizer raises, times out or returns
something unusable, the rung changes nothing and records the failure in the
ledger and as a :class:`SummaryFailed` event; the trim rung then guarantees
progress. The input is never touched.

A ``focus`` (what the user wants kept) goes to the summarizer as a header on every
request and is written in the summary's preamble, so the model reading the summary
knows what it was asked to keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.events import SummaryFailed
from glyphfold.compaction.history.markers import (
    SNAPSHOT_ACK,
    SUMMARY,
    SUMMARY_ACK_TEXT,
    glyphfold_meta,
    marked_message,
)
from glyphfold.compaction.history.model import History, Message
from glyphfold.compaction.history.splice import append_user_side
from glyphfold.compaction.history.steps import Regions, Step
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome
from glyphfold.compaction.ladder.rungs.common import kept_steps, regions, tool_names
from glyphfold.compaction.ladder.rungs.transcribe import serialise
from glyphfold.compaction.ladder.summarizers import (
    check_focus,
    summarize_bounded,
    summary_input_chars,
)
from glyphfold.compaction.ladder.transcript import TranscriptConfig, plain_text
from glyphfold.errors import SummarizerError

ACK_TEXT = SUMMARY_ACK_TEXT


@dataclass(frozen=True, slots=True)
class SummaryConfig:
    """Bounds of the summary rung."""

    # one request never exceeds this (~100k tokens at 4 chars/token): fits every
    # current summariser model's window with room for the prompt and the reply
    max_input_chars: int = 400_000
    timeout_s: float | None = 120.0
    expected_summary_tokens: int = 2048  # reserved when choosing how many steps stay text
    # a summary request is bounded: tool output is capped head+tail, as 0.1 did
    transcript: TranscriptConfig = field(
        default_factory=lambda: TranscriptConfig(max_result_chars=6000, max_args_chars=2000)
    )

    def __post_init__(self) -> None:
        check_int("max_input_chars", self.max_input_chars, minimum=1000, error=ValueError)
        if self.timeout_s is not None and self.timeout_s <= 0:
            msg = f"timeout_s must be > 0 or None, got {self.timeout_s}"
            raise ValueError(msg)
        check_int(
            "expected_summary_tokens", self.expected_summary_tokens, minimum=0, error=ValueError
        )


class Summary:
    """Replace the middle with a model-written summary.

    ``summarizer`` is any callable ``text -> str`` (or an async one); ``focus`` the
    user's instruction of what to keep (see the module docstring).
    """

    name = "summary"
    model_free = False

    def __init__(
        self, summarizer: Any, config: SummaryConfig | None = None, *, focus: str | None = None
    ) -> None:
        if not callable(summarizer):
            msg = f"summarizer must be callable (text -> summary), got {type(summarizer).__name__}"
            raise TypeError(msg)
        self.summarizer = summarizer
        self.config = config or SummaryConfig()
        self.focus = check_focus(focus)

    def _span(self, history: History, reg: Regions, ctx: RungContext) -> list[Step]:
        """The oldest middle steps to summarise: up to the first kept step, no more than needed."""
        kept = kept_steps(history, reg, ctx)
        run: list[Step] = []
        for s in reg.middle_steps:
            if s.start in kept:
                break
            run.append(s)
        if not run:
            return []
        costs = ctx.message_costs(history)
        before = ctx.tokens_of(history)
        extra = self.config.expected_summary_tokens + 60
        gone = 0
        for k, s in enumerate(run):  # the fewest oldest steps whose summary fits
            gone += sum(costs[s.start : s.end])
            if before - gone + extra <= ctx.target_tokens:
                return run[: k + 1]
        return run

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        cfg = self.config
        reg = regions(history, ctx)
        span = self._span(history, reg, ctx)
        if not span:
            return RungOutcome(history, None)
        msgs = history.messages
        start, end = span[0].start, span[-1].end
        costs = ctx.message_costs(history)
        middle = [(i, msgs[i]) for i in range(start, end)]
        source, _spans = serialise(middle, tool_names(history), cfg.transcript)
        source = plain_text(source)  # a text model reads the marks as plain labels
        before = ctx.tokens_of(history)
        if ctx.dry_run:
            # a plan must not call the model: report what would be summarised
            removed = tuple(
                Removed(i, "summary", len(m.text), costs[i], role=m.role) for i, m in middle
            )
            est_after = before - sum(costs[start:end]) + cfg.expected_summary_tokens
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
                focus=self.focus,
            )
        except SummarizerError as exc:
            entry = LedgerEntry(self.name, before, before, note=f"failed, skipped: {exc}")
            return RungOutcome(history, entry, events=(SummaryFailed(str(exc)),))
        if not text.strip():
            entry = LedgerEntry(self.name, before, before, note="failed, skipped: empty summary")
            return RungOutcome(history, entry, events=(SummaryFailed("empty summary"),))
        out = self._splice(history, start, end, text, len(middle), len(source), self.focus)
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
            note=f"{calls:,} summarizer call(s)",
            extra={"source_chars": len(source), "calls": calls, "steps": len(span)},
        )
        return RungOutcome(out, entry)

    @staticmethod
    def _splice(
        history: History,
        start: int,
        end: int,
        text: str,
        n_msgs: int,
        n_chars: int,
        focus: str | None = None,
    ) -> History:
        msgs = history.messages
        head = f"[glyphfold summary of {n_msgs} earlier messages]"
        if focus:
            head += f"\n[written with the focus: {focus}]"
        body = f"{head}\n{text.strip()}"
        summ = marked_message("user", body, SUMMARY, messages=n_msgs, source_chars=n_chars)
        out: list[Message] = list(msgs[:start])
        nxt = msgs[end] if end < len(msgs) else None
        append_user_side(out, summ, nxt, ack_text=ACK_TEXT, ack_kind=SNAPSHOT_ACK)
        out.extend(msgs[end:])
        return history.replace_messages(out)
