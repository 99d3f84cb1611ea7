"""Async entry points: ``acompact``, ``arecover``, ``ashake`` (every framework hook is async).

Each runs its synchronous twin in a worker thread (:func:`asyncio.to_thread`), so
parsing, pricing and rendering never block the event loop; the render kernels
release the GIL while they draw. Same arguments, same result, same errors as
:func:`~glyphfold.compaction.ladder.api.compact` and friends; events are published
from the worker thread (context variables are copied into it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from glyphfold.compaction.ladder.api import compact, recover, shake
from glyphfold.compaction.ladder.result import CompactionResult

__all__ = ["acompact", "arecover", "ashake"]


async def acompact(history: Any, **options: Any) -> CompactionResult:
    """:func:`compact` in a worker thread (keyword options as for ``compact``)."""
    return await asyncio.to_thread(compact, history, **options)


async def arecover(history: Any, **options: Any) -> CompactionResult:
    """:func:`recover` in a worker thread (keyword options as for ``recover``)."""
    return await asyncio.to_thread(recover, history, **options)


async def ashake(history: Any, **options: Any) -> CompactionResult:
    """:func:`shake` in a worker thread (keyword options as for ``shake``)."""
    return await asyncio.to_thread(shake, history, **options)
