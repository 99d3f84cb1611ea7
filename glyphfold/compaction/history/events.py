"""Every event glyphfold announces, and the observer bus that delivers them.

History core: HistoryTrimmed, OrphansSwept, MessagesEvicted. Ladder: OverflowRecovery,
SummaryFailed, Compacted. Store: CheckpointDropped. They are defined here, in one place, so a
subscriber can import what it filters on without importing the ladder or the store.

SPEC §2.6: trimming is never silent; every dropped turn is announced to every
subscriber. A subscriber that raises is logged and skipped: it can break neither
the trim nor the other subscribers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from glyphfold.checks import check_choice

__all__ = [
    "TRIM_REASONS",
    "CheckpointDropped",
    "Compacted",
    "EventBus",
    "HistoryTrimmed",
    "MessagesEvicted",
    "OrphansSwept",
    "OverflowRecovery",
    "SummaryFailed",
    "default_bus",
    "publish",
    "subscribe",
]

log = logging.getLogger("glyphfold.events")

TRIM_REASONS = ("token_budget", "turn_limit", "overflow_recovery")
TrimReason = Literal["token_budget", "turn_limit", "overflow_recovery"]


@dataclass(frozen=True, slots=True)
class HistoryTrimmed:
    """Whole turns (docs/history.md) or whole steps (docs/ladder.md) were dropped from the history.

    ``dropped_range`` is the (start, end) slice of the *input* messages the dropped
    ones lie in: contiguous for the turn trims, because only the oldest turns go;
    the ladder's step fallback keeps the newest real user message and pinned steps,
    so there it may span kept messages too.
    """

    reason: str
    dropped_messages: int
    dropped_turns: int
    kept_turns: int
    tokens_before: int
    tokens_after: int
    dropped_range: tuple[int, int]
    breadcrumb: str
    # steps of a turn dropped whole by the ladder's last fallback (SPEC §5.7); 0 for
    # the turn-atomic trims of SPEC §2
    dropped_steps: int = 0

    def __post_init__(self) -> None:
        check_choice("HistoryTrimmed reason", self.reason, TRIM_REASONS, error=ValueError)


@dataclass(frozen=True, slots=True)
class OrphansSwept:
    """The orphan sweep (docs/history.md) repaired an inconsistent history.

    Indices refer to the input messages; ``synthesized`` lists the call ids that
    received a synthetic "result missing" result instead of being removed.
    """

    removed_results: tuple[tuple[int, str], ...]
    removed_calls: tuple[tuple[int, str], ...]
    synthesized: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MessagesEvicted:
    """FIFO eviction (docs/history.md) removed the oldest messages."""

    evicted_messages: int
    tokens_evicted: int
    total_tokens: int
    prompt_overhead: int
    max_safe_tokens: int


@dataclass(frozen=True, slots=True)
class OverflowRecovery:
    """A reactive recovery started (the provider's error, the numbers)."""

    error: str | None
    estimate: int
    target: int


@dataclass(frozen=True, slots=True)
class SummaryFailed:
    """The summarizer failed; the ladder went on without a summary."""

    reason: str


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction (``compact``, ``recover`` or ``shake``) finished: its numbers."""

    kind: str  # "compact", "recover" or "shake"
    tokens_before: int
    tokens_after: int
    budget: int
    target: int
    rungs: tuple[str, ...]  # the rungs that removed something, in order
    pages: int  # snapshot pages in the result
    ms: float  # wall time of the ladder

    def attributes(self) -> dict[str, Any]:
        """The numbers as ``glyphfold.*`` attributes (OpenTelemetry, log records)."""
        return {
            "glyphfold.kind": self.kind,
            "glyphfold.tokens_before": self.tokens_before,
            "glyphfold.tokens_after": self.tokens_after,
            "glyphfold.budget": self.budget,
            "glyphfold.target": self.target,
            "glyphfold.rungs": ",".join(self.rungs),
            "glyphfold.pages": self.pages,
            "glyphfold.ms": self.ms,
        }


@dataclass(frozen=True)
class CheckpointDropped:
    """A compaction replaced a checkpoint's target, so the checkpoint is dropped (docs/store.md)."""

    conversation_id: str
    label: str
    message_id: int | None
    compaction_id: int
    reason: str = "compaction replaced the checkpoint's message"


Subscriber = Callable[[Any], object]


class EventBus:
    """A synchronous observer bus; subscribers may filter by event type."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: list[tuple[Subscriber, tuple[type, ...] | None]] = []

    def subscribe(
        self, fn: Subscriber, *, types: tuple[type, ...] | type | None = None
    ) -> Callable[[], None]:
        """Register ``fn``; return a function that unsubscribes it."""
        if not callable(fn):
            msg = f"subscriber must be callable, got {type(fn).__name__}"
            raise TypeError(msg)
        kinds = (types,) if isinstance(types, type) else types
        entry = (fn, kinds)
        with self._lock:
            self._subs.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._subs:
                    self._subs.remove(entry)

        return unsubscribe

    def publish(self, event: Any) -> int:
        """Deliver ``event`` to every matching subscriber; return how many received it."""
        with self._lock:
            subs = list(self._subs)
        delivered = 0
        for fn, kinds in subs:
            if kinds is not None and not isinstance(event, kinds):
                continue
            try:
                fn(event)
            except Exception:  # a broken dashboard must not break trimming
                log.exception(
                    "glyphfold event subscriber %r failed on %s", fn, type(event).__name__
                )
                continue
            delivered += 1
        return delivered

    def __len__(self) -> int:
        with self._lock:
            return len(self._subs)


default_bus = EventBus()


def subscribe(
    fn: Subscriber, *, types: tuple[type, ...] | type | None = None
) -> Callable[[], None]:
    """Subscribe ``fn`` to the process-wide default bus."""
    return default_bus.subscribe(fn, types=types)


def publish(event: Any, bus: EventBus | None = None) -> int:
    """Publish on ``bus`` (default: the process-wide bus)."""
    return (bus if bus is not None else default_bus).publish(event)
