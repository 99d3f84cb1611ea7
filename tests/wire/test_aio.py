"""acompact / arecover / ashake: the work runs in a worker thread; the event loop keeps ticking."""

from __future__ import annotations

import asyncio
import threading
import time

from wire_samples import responses_history

import glyphfold
from glyphfold.render.api import render_text


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
    """The renderer (inside the work) waits until the event loop has run meanwhile: if the
    work ran on the loop's thread the loop could not run and the wait would time out."""
    body = responses_history(turns=12, chars=20_000)
    sync = glyphfold.compact(body, budget=8_000, profile="openai")
    ticked = threading.Event()
    waits: list[bool] = []

    def renderer(text, **options):
        waits.append(ticked.wait(timeout=10))
        return render_text(text, **options)

    async def main():
        async def ticker():
            for _ in range(5):
                await asyncio.sleep(0.001)
            ticked.set()

        t = asyncio.create_task(ticker())
        result = await glyphfold.acompact(body, budget=8_000, profile="openai", renderer=renderer)
        await t
        return result

    result = asyncio.run(main())
    assert waits and all(waits)
    assert [p.png for p in result.pages] == [p.png for p in sync.pages]
    assert result.messages == sync.messages


def test_arecover_and_ashake():
    body = responses_history(turns=6, chars=8_000)
    shaken, _, _ = _run_with_ticker(lambda: glyphfold.ashake(body))
    assert shaken.tokens_after < shaken.tokens_before
    err = ValueError("maximum context length is 8192 tokens")
    recovered, _, _ = _run_with_ticker(lambda: glyphfold.arecover(body, error=err))
    assert recovered.tokens_after <= recovered.target
    assert recovered.tokens_after == glyphfold.recover(body, error=err).tokens_after
