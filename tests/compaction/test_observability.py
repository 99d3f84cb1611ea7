"""A compaction is visible: a log record, an event on the bus, an OpenTelemetry span (issue 23)."""

from __future__ import annotations

import logging

import pytest

import glyphfold
from glyphfold.compaction.history.events import Compacted, EventBus


def _history():
    out = [{"role": "user", "content": "Read the files."}]
    for k in range(12):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"line {k} " * 300},
        ]
    return [*out, {"role": "user", "content": "Now summarise."}]


def test_the_glyphfold_logger_is_silent_by_default():
    handlers = logging.getLogger("glyphfold").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_a_compaction_leaves_a_record_and_an_event(caplog):
    bus = EventBus()
    seen: list = []
    bus.subscribe(seen.append, types=Compacted)
    with caplog.at_level(logging.INFO, logger="glyphfold.compaction"):
        res = glyphfold.compact(_history(), budget=2_000, rungs=("elide", "trim"), bus=bus)
    (event,) = seen
    assert (event.kind, event.tokens_before, event.tokens_after) == (
        "compact",
        res.tokens_before,
        res.tokens_after,
    )
    assert event.rungs and event.ms >= 0 and event.pages == 0
    (record,) = [r for r in caplog.records if r.name == "glyphfold.compaction"]
    assert f"{res.tokens_before} -> {res.tokens_after} tokens" in record.getMessage()
    assert record.glyphfold["glyphfold.tokens_after"] == res.tokens_after


def test_a_dry_run_announces_nothing():
    bus = EventBus()
    seen: list = []
    bus.subscribe(seen.append, types=Compacted)
    glyphfold.compact(_history(), budget=2_000, rungs=("elide", "trim"), bus=bus, dry_run=True)
    assert seen == []


def test_an_opentelemetry_span_carries_the_numbers():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    res = glyphfold.compact(_history(), budget=2_000, rungs=("elide", "trim"))
    spans = [s for s in exporter.get_finished_spans() if s.name == "glyphfold.compact"]
    assert spans and spans[-1].attributes["glyphfold.tokens_after"] == res.tokens_after
