"""Summarizer protocol, SDK adapters with recording fake clients, bounded chunking.

SPEC §5 (summary rung: one model call, bounded input).
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from glyphfold.compaction.ladder.summarizers import (
    SUMMARY_PROMPT,
    AnthropicSummarizer,
    OpenAISummarizer,
    Summarizer,
    call_with_timeout,
    chunk_text,
    summarize_bounded,
)
from glyphfold.errors import SummarizerError


class FakeAnthropic:
    def __init__(self):
        self.requests = []
        self.messages = SimpleNamespace(create=self._create)

    def _create(self, **kw):
        self.requests.append(kw)
        return SimpleNamespace(content=[SimpleNamespace(type="text", text="SUMMARY")])


class FakeOpenAI:
    def __init__(self):
        self.requests = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kw):
        self.requests.append(kw)
        msg = SimpleNamespace(content="SUMMARY")
        return SimpleNamespace(choices=[SimpleNamespace(message=msg)])


def test_anthropic_adapter_request_shape():
    """The Anthropic adapter sends the summary prompt as system and the text as user."""
    client = FakeAnthropic()
    s = AnthropicSummarizer(client, model="m", max_tokens=77)
    assert isinstance(s, Summarizer)
    assert s("the text") == "SUMMARY"
    (req,) = client.requests
    assert req == {
        "model": "m",
        "max_tokens": 77,
        "system": SUMMARY_PROMPT,
        "messages": [{"role": "user", "content": "the text"}],
    }


def test_openai_adapter_request_shape():
    """The OpenAI adapter sends a system + user chat request."""
    client = FakeOpenAI()
    assert OpenAISummarizer(client, model="m")("t") == "SUMMARY"
    (req,) = client.requests
    assert req["model"] == "m"
    assert req["messages"] == [
        {"role": "system", "content": SUMMARY_PROMPT},
        {"role": "user", "content": "t"},
    ]


def test_prompt_keeps_what_matters():
    """The prompt asks for goals, constraints, decisions, open items, exact identifiers."""
    low = SUMMARY_PROMPT.lower()
    for word in ("goals", "constraints", "decisions", "open items", "exact identifiers"):
        assert word in low


def test_chunk_text_bounds_and_tiles():
    """Chunks are bounded, cut at line breaks, and concatenate back to the input."""
    text = "".join(f"line {i}\n" for i in range(2000))
    chunks = chunk_text(text, 1000)
    assert "".join(chunks) == text
    assert all(len(c) <= 1000 for c in chunks)
    assert all(c.endswith("\n") for c in chunks)
    assert chunk_text("", 10) == []


def test_summarize_bounded_never_exceeds_the_limit():
    """The rung never sends a request larger than the limit (issue 5)."""
    sent = []

    def summ(text):
        sent.append(len(text))
        return text[:50]

    text = "".join(f"fact {i} /work/a/b{i}.py\n" for i in range(5000))
    out, calls = summarize_bounded(text, summ, max_input_chars=4000)
    assert max(sent) <= 4000
    assert calls == len(sent) > 1
    assert len(out) <= 4000


def test_async_summarizer_supported():
    """Async summarizers are awaited, also when the caller has a running loop."""

    async def summ(text):
        await asyncio.sleep(0)
        return "async " + text

    assert call_with_timeout(summ, "x", timeout_s=5) == "async x"

    async def inside_loop():
        return call_with_timeout(summ, "y", timeout_s=5)

    assert asyncio.run(inside_loop()) == "async y"


def test_summarizer_errors_and_timeouts():
    """A summarizer that raises, hangs or returns non-text gives SummarizerError."""

    def boom(text):
        raise RuntimeError("quota")

    with pytest.raises(SummarizerError, match="quota"):
        call_with_timeout(boom, "x", timeout_s=5)

    def slow(text):
        time.sleep(1.0)
        return "late"

    t0 = time.perf_counter()
    with pytest.raises(SummarizerError, match="timed out"):
        call_with_timeout(slow, "x", timeout_s=0.05)
    assert time.perf_counter() - t0 < 0.9
    with pytest.raises(SummarizerError, match="must return str"):
        call_with_timeout(lambda t: 42, "x", timeout_s=5)
    with pytest.raises(SummarizerError, match="not shorter"):
        summarize_bounded("a\n" * 100, lambda t: t + t, max_input_chars=50)


def test_requests_are_bounded_by_the_summarizer_window():
    """A declared context_window lowers the per-request bound (never the full window)."""
    from glyphfold.compaction.ladder.summarizers import summary_input_chars

    small = AnthropicSummarizer(FakeAnthropic(), context_window=5000, max_tokens=1000)
    limit = summary_input_chars(small, default=400_000)
    assert limit < (5000 - 1000) * 4
    assert summary_input_chars(lambda t: t, default=1234) == 1234
    big = OpenAISummarizer(FakeOpenAI(), context_window=10_000_000)
    assert summary_input_chars(big, default=400_000) == 400_000
    with pytest.raises(SummarizerError, match="no room"):
        summary_input_chars(AnthropicSummarizer(FakeAnthropic(), context_window=100), default=9)


def test_summary_rung_respects_the_adapter_window(_sessions):
    """End to end: with a small-window adapter every request stays under its bound."""
    import copy

    from glyphfold.compaction.ladder.api import compact
    from glyphfold.compaction.ladder.summarizers import summary_input_chars

    client = FakeAnthropic()
    adapter = AnthropicSummarizer(client, context_window=8000, max_tokens=1000)
    result = compact(
        copy.deepcopy(_sessions["anthropic"]),
        budget=20_000,
        rungs="summary,trim",
        summarizer=adapter,
    )
    bound = summary_input_chars(adapter, default=400_000)
    sizes = [len(r["messages"][0]["content"]) for r in client.requests]
    assert len(sizes) > 1 and max(sizes) <= bound
    assert result.ledger[0].rung == "summary" and result.ledger[0].extra["calls"] == len(sizes)
