"""Compactions in worker processes: the event loop never fights them for the GIL.

A compaction of a 10 MB history is seconds of CPU in the ladder (rendering pages,
pricing them). Run on a thread of the proxy process, it held the GIL against the event
loop, and the requests that needed no compaction waited for it (issue 21, "Done when":
p99 < 1 s while two 10 MB compactions run). :class:`CompactionPool` runs the ladder
(:func:`glyphfold.compact`) in ``compact_workers`` spawned processes instead, warmed at
start-up (imports, pricing, the renderer's kernels).

Only the ladder moves. Each conversation's :class:`~glyphfold.Compactor` stays in the
proxy (its ``FitCache``): it decides append/hit/compact, prices, and remembers what it
sent, so the prompt-cache state is in one place; when it must compact,
:class:`PooledCompactor` ships the candidate history to a worker and gets the
:class:`~glyphfold.CompactionResult` back (its canonical ``history`` dropped: the wire
messages are what is sent). Compactions with a summarizer stay on threads (a model
client is not shipped to another process).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from glyphfold.compaction.ladder.compactor import Compactor
from glyphfold.compaction.ladder.result import CompactionResult
from glyphfold.errors import GlyphfoldError

__all__ = ["CompactionPool", "PooledCompactor"]

# options a worker cannot take: the proxy's event bus holds a lock and its subscribers
_LOCAL_OPTIONS = ("bus",)


def _init_worker() -> None:
    """Runs once in each worker: load pricing and the renderer before the first job."""
    import glyphfold

    glyphfold.warm_up(background=False)
    glyphfold.estimate_history_tokens([{"role": "user", "content": "warm up"}], format="openai")


def _ready() -> int:
    return os.getpid()


def _compact(history: Any, options: dict[str, Any]) -> CompactionResult[Any]:
    import glyphfold

    # the worker's own bus: the proxy publishes nothing from the ladder (its bus is local)
    result = glyphfold.compact(history, bus=glyphfold.EventBus(), **options)
    # the canonical history holds mapping proxies (not picklable) and is not sent
    return dataclasses.replace(result, history=None)


class CompactionPool:
    """``workers`` spawned processes that run the ladder; started lazily or by warm_up()."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn: a fork of a process with threads (the event loop, the pricing
                # pool) may copy a held lock into the child
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                )
            return self._pool

    def warm_up(self) -> list[Any]:
        """Start every worker now (their initializer warms them); returns the futures."""
        pool = self._executor()
        return [pool.submit(_ready) for _ in range(self.workers)]

    def compact(self, history: Any, **options: Any) -> CompactionResult[Any]:
        """:func:`glyphfold.compact` in a worker; blocks the calling thread (GIL released).

        A worker that died (killed, out of memory) breaks the pool: this compaction
        raises a GlyphfoldError (serve sends the request as the client sent it) and the
        next one starts new workers.
        """
        pool = self._executor()
        try:
            return pool.submit(_compact, history, options).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            msg = "a compaction worker process died; new workers start with the next compaction"
            raise GlyphfoldError(msg) from None

    def shutdown(self) -> None:
        """Stop the workers; a compaction still running is abandoned (its client is gone)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:  # a running ladder would otherwise finish first
            if p.is_alive():
                p.terminate()


class PooledCompactor(Compactor):
    """A :class:`~glyphfold.Compactor` whose ladder runs in a :class:`CompactionPool`."""

    def __init__(self, pool: CompactionPool, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool = pool

    def _ladder(self, candidate: Any, budget: int) -> CompactionResult[Any]:
        options = {k: v for k, v in self.options.items() if k not in _LOCAL_OPTIONS}
        return self.pool.compact(
            candidate, budget=budget, profile=self.profile, format=self.format, **options
        )
