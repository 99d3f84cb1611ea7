"""Make one request fit its model's window: price it, compact a copy, cache the result.

Runs in a worker thread (pricing and compaction are CPU work). The client's body
is never changed: a compacted request is a new body around a compacted copy of
the history. Compaction is deterministic, and results are cached by a chained
hash of the request prefix: when the next request of a session is the previous
one plus new messages, the cached compacted prefix is reused byte for byte
(the provider's prompt cache keeps hitting) as long as it still fits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import glyphfold
from glyphfold.errors import ContextOverflowError, GlyphfoldError
from glyphfold.serve.prefix_cache import CachedFit, FitCache, prefix_hashes
from glyphfold.serve.providers import Endpoint, history_items, with_items
from glyphfold.serve.windows import ModelResolution

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

    @property
    def history_budget(self) -> int:
        """What the history itself must fit: the budget less reply and tool schemas."""
        limit = self.budget
        if self.model.window is not None and self.reserve:
            limit = min(limit, self.model.window - self.reserve)
        return limit - self.overhead

    @property
    def seed(self) -> str:
        """What the compaction depends on besides the history (part of the cache key)."""
        return "|".join(
            (self.endpoint.provider, self.model.profile, str(self.history_budget), *self.rungs)
        )


@dataclass(frozen=True, slots=True)
class Fit:
    """What the proxy sends: ``raw`` (the client's bytes) when nothing changed."""

    raw: bytes
    history: Any  # the history as sent, snapshot sources kept (recovery re-renders from it)
    tokens_before: int | None  # None: the request has no history to price
    tokens_after: int | None
    rungs: tuple[str, ...] = ()
    cache: str = "none"  # none | miss | hit | prefix
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


def _extend(cached: Any, tail: list[Any]) -> Any:
    return with_items(cached, [*history_items(cached)[1], *tail])


def _rungs_of(ledger: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.rung for e in ledger if e.tokens_saved > 0))


def _estimate(ctx: FitContext, history: Any) -> int:
    return glyphfold.estimate_history_tokens(history, profile=ctx.model.profile, image_policy="all")


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


def _as_fit(
    ctx: FitContext, entry: CachedFit, cache: str, raw: bytes | None = None, history: Any = None
) -> Fit:
    if history is None:
        history = entry.messages
    if raw is None:
        raw = _dumps(ctx.endpoint.with_history(ctx.body, glyphfold.provider_messages(history)))
    return Fit(
        raw=raw,
        history=history,
        tokens_before=entry.tokens_before + ctx.overhead,
        tokens_after=entry.tokens_after + ctx.overhead,
        rungs=entry.rungs,
        cache=cache,
        compacted=True,
    )


def _store(
    ctx: FitContext,
    key: bytes,
    messages: Any,
    length: int,
    before: int,
    after: int,
    rungs: tuple[str, ...],
) -> tuple[CachedFit, bytes]:
    raw = _dumps(ctx.endpoint.with_history(ctx.body, glyphfold.provider_messages(messages)))
    entry = CachedFit.of(messages, length, before, after, rungs)
    ctx.cache.put(key, entry)
    return entry, raw


def fit_request(ctx: FitContext) -> Fit:
    """Price the request and compact a copy of its history if it exceeds the budget."""
    unchanged, before = _price(ctx)
    if unchanged is not None:
        return unchanged
    history = ctx.endpoint.history(ctx.body)
    system, messages = _split(history)
    hb = ctx.history_budget
    total = before + ctx.overhead
    hashes = prefix_hashes(ctx.seed, system, messages)
    hit = ctx.cache.longest(hashes)
    if hit is not None and hit.length == len(messages):
        return _as_fit(ctx, hit, "hit")
    if hit is not None:
        candidate = _extend(hit.messages, messages[hit.length :])
        after = _estimate(ctx, candidate)
        if after <= hb:
            entry, raw = _store(ctx, hashes[-1], candidate, len(messages), before, after, hit.rungs)
            return _as_fit(ctx, entry, "prefix", raw, candidate)
    try:
        result = glyphfold.compact(
            history,
            profile=ctx.model.profile,
            budget=hb,
            rungs=ctx.rungs,
            summarizer=ctx.summarizer,
            bus=ctx.bus,
        )
    except ContextOverflowError as exc:
        return Fit(ctx.raw, history, total, total, failure=str(exc))
    rungs = _rungs_of(result.ledger)
    entry, raw = _store(
        ctx,
        hashes[-1],
        result.messages,
        len(messages),
        result.tokens_before,
        result.tokens_after,
        rungs,
    )
    fit = _as_fit(ctx, entry, "miss", raw, result.messages)
    return Fit(**{**_fields(fit), "ledger": result.ledger})


def _fields(fit: Fit) -> dict[str, Any]:
    return {k: getattr(fit, k) for k in Fit.__slots__}


def recover_request(ctx: FitContext, sent: Fit, error: Any) -> Fit:
    """Reactive recovery (SPEC §3.6): two thirds of what was sent, model-free rungs only.

    Raises ContextOverflowError (or another GlyphfoldError) when it cannot.
    """
    history = sent.history
    if history is None:
        msg = "the request has no history to recover"
        raise GlyphfoldError(msg)
    result = glyphfold.recover(
        history, error=error, profile=ctx.model.profile, rungs=ctx.reactive_rungs, bus=ctx.bus
    )
    system, messages = _split(ctx.endpoint.history(ctx.body))
    hashes = prefix_hashes(ctx.seed, system, messages)
    before = result.tokens_before
    if sent.tokens_before is not None:
        before = sent.tokens_before - ctx.overhead  # the client's history, not what was sent
    rungs = tuple(dict.fromkeys((*sent.rungs, *_rungs_of(result.ledger))))
    # cached under the client's prefix: the session's next request starts from it
    entry, raw = _store(
        ctx,
        hashes[-1],
        result.messages,
        len(messages),
        before,
        result.tokens_after,
        rungs,
    )
    fit = _as_fit(ctx, entry, sent.cache, raw, result.messages)
    return Fit(**{**_fields(fit), "ledger": result.ledger})
