"""acompact / arecover / ashake: the work runs in a worker thread; the event loop keeps ticking."""

from __future__ import annotations

import asyncio
import time

from wire_samples import responses_history

import glyphfold


def _run_with_ticker(coro_factory):
    """Run the coroutine while a 2 ms ticker runs; return (result, ticks, seconds)."""

    async def main():
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(0.002)
                ticks += 1

        t = asyncio.create_task(ticker())
        start = time.perf_counter()
        result = await coro_factory()
        elapsed = time.perf_counter() - start
        done.set()
        await t
        return result, ticks, elapsed

    return asyncio.run(main())


def test_acompact_does_not_block_the_loop():
    body = responses_history(turns=12, chars=20_000)
    sync = glyphfold.compact(body, budget=8_000, profile="openai")
    result, ticks, elapsed = _run_with_ticker(
        lambda: glyphfold.acompact(body, budget=8_000, profile="openai")
    )
    assert [p.png for p in result.pages] == [p.png for p in sync.pages]
    assert result.messages == sync.messages

    async def blocking():  # the same work on the loop's own thread, for comparison
        return glyphfold.compact(body, budget=8_000, profile="openai")

    _, blocked_ticks, _ = _run_with_ticker(blocking)
    assert blocked_ticks <= 1
    assert ticks >= 5, (ticks, elapsed)  # the loop kept running while the pages were drawn


def test_arecover_and_ashake():
    body = responses_history(turns=6, chars=8_000)
    shaken, _, _ = _run_with_ticker(lambda: glyphfold.ashake(body))
    assert shaken.tokens_after < shaken.tokens_before
    err = ValueError("maximum context length is 8192 tokens")
    recovered, _, _ = _run_with_ticker(lambda: glyphfold.arecover(body, error=err))
    assert recovered.tokens_after <= recovered.target
    assert recovered.tokens_after == glyphfold.recover(body, error=err).tokens_after
