"""What a compaction tells the outside: a log record, an event, an OpenTelemetry span.

Every ``compact``/``recover``/``shake`` that is not a dry run leaves one record on the
``glyphfold.compaction`` logger (silent unless the application configures logging: the
``glyphfold`` logger has a NullHandler), one :class:`~glyphfold.compaction.history.
events.Compacted` event on the bus, and, when ``opentelemetry-api`` is installed, a
``glyphfold.compact`` span with the same numbers as ``glyphfold.*`` attributes (a no-op
unless the application set up an OpenTelemetry SDK).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from glyphfold.compaction.history.events import Compacted, EventBus, publish

__all__ = ["observed"]

log = logging.getLogger("glyphfold.compaction")

if TYPE_CHECKING:
    from glyphfold.compaction.ladder.result import CompactionResult

_R = TypeVar("_R", bound="CompactionResult[Any]")


def _tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("glyphfold")


@contextlib.contextmanager
def _span(name: str) -> Iterator[Any]:
    tracer = _tracer()
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(name) as span:
        yield span


def observed(kind: str, run: Callable[[], _R], *, dry_run: bool, bus: EventBus | None) -> _R:
    """Run ``run()`` (the ladder) and announce its CompactionResult."""
    started = time.perf_counter()
    with _span(f"glyphfold.{kind}") as span:
        result = run()
        ms = (time.perf_counter() - started) * 1000.0
        rungs = tuple(e.rung for e in result.ledger if e.tokens_after < e.tokens_before)
        event = Compacted(
            kind=kind,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            budget=result.budget,
            target=result.target,
            rungs=rungs,
            pages=len(result.pages),
            ms=round(ms, 3),
        )
        if span is not None:
            for key, value in event.attributes().items():
                span.set_attribute(key, value)
    if not dry_run:
        publish(event, bus)
        log.info(
            "%s: %d -> %d tokens (target %d) in %.1f ms; rungs: %s; %d page(s)",
            kind,
            event.tokens_before,
            event.tokens_after,
            event.target,
            ms,
            ", ".join(rungs) or "none",
            event.pages,
            extra={"glyphfold": event.attributes()},
        )
    return result
