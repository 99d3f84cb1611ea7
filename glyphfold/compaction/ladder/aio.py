"""Async entry points: ``acompact``, ``arecover``, ``ashake`` (every framework hook is async).

Each runs its synchronous twin in a worker thread (:func:`asyncio.to_thread`), so
parsing, pricing and rendering never block the event loop; the render kernels
release the GIL while they draw. Same arguments, same result, same errors as
:func:`~glyphfold.compaction.ladder.api.compact` and friends; events are published
from the worker thread (context variables are copied into it).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from glyphfold.compaction.ladder.api import compact, recover, shake

__all__ = ["acompact", "arecover", "ashake"]

P = ParamSpec("P")
R = TypeVar("R")


def _in_worker_thread(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``fn`` as a coroutine function that runs it in a worker thread (same signature)."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    run.__doc__ = f":func:`{fn.__name__}` in a worker thread (same arguments and result)."
    return run


acompact = _in_worker_thread(compact)
arecover = _in_worker_thread(recover)
ashake = _in_worker_thread(shake)
acompact.__name__, arecover.__name__, ashake.__name__ = "acompact", "arecover", "ashake"
