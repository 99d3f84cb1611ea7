"""Make one request fit its model's window: price it, compact a copy, remember the result.

Runs in a worker thread (pricing and compaction are CPU work). The client's body
is never changed: a compacted request is a new body around a compacted copy of
the history. Each conversation has a :class:`~glyphfold.Compactor`, found again from
the request itself (:class:`~glyphfold.serve.prefix_cache.FitCache`): once it has
compacted, the following requests get its previous output byte for byte plus their
new messages (``cache: append``) until the history passes the budget again; then it
compacts to a lower target and the snapshot pages already sent stay frozen in place
(SPEC §5.10), so the provider's prompt cache keeps serving the prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import glyphfold
from glyphfold.compaction.ladder.compactor import Compactor, Fitted
from glyphfold.errors import ContextOverflowError, GlyphfoldError
from glyphfold.serve.prefix_cache import FitCache
from glyphfold.serve.providers import Endpoint, history_items
from glyphfold.serve.windows import ModelResolution
from glyphfold.serve.workers import PooledCompactor

__all__ = ["Fit", "FitContext", "fit_request", "price", "recover_request"]

# below this many tokens for the history, compacting is not worth trying
_MIN_HISTORY_BUDGET = 1_024


@dataclass(frozen=True, slots=True)
class FitContext:
    """Everything a fit depends on, resolved once per request."""

    endpoint: Endpoint
    body: Mapping[str, Any]
    raw: bytes
    model: ModelResolution
    budget: int  # SPEC §3.1 budget for the whole request
    reserve: int  # the reply's max tokens
    overhead: int  # tool schemas, priced as text
    rungs: tuple[str, ...]
    reactive_rungs: tuple[str, ...]
    cache: FitCache
    summarizer: Any = None
    bus: Any = None
    pool: Any = None  # a CompactionPool: the ladder runs in its worker processes

    @property
    def history_budget(self) -> int:
        """What the history itself must fit: the budget less reply and tool schemas."""
        limit = self.budget
        if self.model.window is not None and self.reserve:
            limit = min(limit, self.model.window - self.reserve)
        return limit - self.overhead


@dataclass(frozen=True, slots=True)
class Fit:
    """What the proxy sends: ``raw`` (the client's bytes) when nothing changed."""

    raw: bytes
    history: Any  # the history as sent, snapshot sources kept (recovery re-renders from it)
    tokens_before: int | None  # None: the request has no history to price
    tokens_after: int | None
    rungs: tuple[str, ...] = ()
    cache: str = "none"  # none | compact | hit | append | recover
    compacted: bool = False
    ledger: tuple[Any, ...] = ()
    failure: str | None = None  # why compaction could not fit it (the original is sent)


def _dumps(body: Mapping[str, Any]) -> bytes:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate (issue 21 item 8): sent as a JSON escape
        return json.dumps(body, separators=(",", ":")).encode()


def _split(history: Any) -> tuple[Any, list[Any]]:
    return history_items(history)


def _rungs_of(ledger: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.rung for e in ledger if e.tokens_saved > 0))


def _estimate(ctx: FitContext, history: Any) -> int:
    return glyphfold.estimate_history_tokens(
        history, profile=ctx.model.profile, image_policy="all", format=ctx.endpoint.format
    )


def price(ctx: FitContext) -> Fit | None:
    """The unchanged request, priced, when it needs no compaction; None when it does."""
    return _price(ctx)[0]


def _price(ctx: FitContext) -> tuple[Fit | None, int]:
    history = ctx.endpoint.history(ctx.body)
    if history is None:
        return Fit(ctx.raw, None, None, None), 0
    _, messages = _split(history)
    before = _estimate(ctx, history)
    total = before + ctx.overhead
    if before <= ctx.history_budget or not messages:
        return Fit(ctx.raw, history, total, total), before
    if ctx.history_budget < _MIN_HISTORY_BUDGET:
        failure = f"history budget {ctx.history_budget} is too small"
        return Fit(ctx.raw, history, total, total, failure=failure), before
    return None, before


def _compactor(ctx: FitContext) -> Compactor:
    """A new conversation's compactor: the budget a target, the window the hard limit.

    With a pool (and no summarizer, whose model client stays here) its ladder runs in a
    worker process; the compactor itself, with what it sent, stays in this process."""
    window = ctx.model.window
    hard = None
    if window is not None and window - ctx.overhead - ctx.reserve > ctx.history_budget:
        hard = window - ctx.overhead
    options: dict[str, Any] = {
        "window": hard,
        "reserve": ctx.reserve if hard is not None else 0,
        "profile": ctx.model.profile,
        "rungs": ctx.rungs,
        "summarizer": ctx.summarizer,
        "bus": ctx.bus,
        "namespace": ctx.endpoint.provider,
        "format": ctx.endpoint.format,  # the route says it (a claude model on chat completions)
    }
    if ctx.pool is not None and ctx.summarizer is None:
        return PooledCompactor(ctx.pool, ctx.history_budget, **options)
    return Compactor(ctx.history_budget, **options)


def _as_fit(ctx: FitContext, fitted: Fitted[Any], before: int, cache: str) -> Fit:
    raw = _dumps(ctx.endpoint.with_history(ctx.body, fitted.messages))
    ledger = fitted.result.ledger if fitted.result is not None else ()
    return Fit(
        raw=raw,
        history=fitted.compacted,
        tokens_before=before + ctx.overhead,
        tokens_after=fitted.tokens + ctx.overhead,
        rungs=_rungs_of(ledger),
        cache=cache,
        compacted=True,
        ledger=ledger,
    )


def fit_request(ctx: FitContext) -> Fit:
    """Price the request; past the budget, let its conversation's compactor fit it."""
    unchanged, before = _price(ctx)
    if unchanged is not None:
        return unchanged
    history = ctx.endpoint.history(ctx.body)
    total = before + ctx.overhead
    fresh = _compactor(ctx)
    digests = fresh.digests(history)
    compactor = ctx.cache.find(digests) or fresh
    previous = compactor.last_digests
    try:
        # the lookup's digests serve the compactor too when it is the fresh one (same seed)
        fitted = compactor(history, digests=digests if compactor.seed == fresh.seed else None)
    except ContextOverflowError as exc:
        return Fit(ctx.raw, history, total, total, failure=str(exc))
    ctx.cache.put(compactor, previous=previous)
    return _as_fit(ctx, fitted, before, "compact" if fitted.action == "none" else fitted.action)


def recover_request(ctx: FitContext, sent: Fit, error: Any) -> Fit:
    """Reactive recovery (SPEC §3.6): two thirds of what was sent, model-free rungs only.

    The conversation's compactor adopts the result, so its next request appends to
    it. Raises ContextOverflowError (or another GlyphfoldError) when it cannot.
    """
    history = sent.history
    if history is None:
        msg = "the request has no history to recover"
        raise GlyphfoldError(msg)
    result = glyphfold.recover(
        history,
        error=error,
        profile=ctx.model.profile,
        rungs=ctx.reactive_rungs,
        bus=ctx.bus,
        format=ctx.endpoint.format,
    )
    client = ctx.endpoint.history(ctx.body)
    fresh = _compactor(ctx)
    compactor = ctx.cache.find(fresh.digests(client)) or fresh
    previous = compactor.last_digests
    compactor.adopt(client, result.messages)
    ctx.cache.put(compactor, previous=previous)
    before = result.tokens_before
    if sent.tokens_before is not None:
        before = sent.tokens_before - ctx.overhead  # the client's history, not what was sent
    rungs = tuple(dict.fromkeys((*sent.rungs, *_rungs_of(result.ledger))))
    raw = _dumps(ctx.endpoint.with_history(ctx.body, glyphfold.provider_messages(result.messages)))
    return Fit(
        raw=raw,
        history=result.messages,
        tokens_before=before + ctx.overhead,
        tokens_after=result.tokens_after + ctx.overhead,
        rungs=rungs,
        cache="recover",
        compacted=True,
        ledger=result.ledger,
    )
