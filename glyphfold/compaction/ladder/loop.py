"""The rung loop: cheapest rung first, stop as soon as the history fits (SPEC §5).

:func:`run_ladder` is what ``compact``, ``recover`` and ``shake`` share: parse once,
price once, fix the tail once (:func:`tail_messages`: the newest steps, within the
tail allowance, SPEC §1), run the rungs in order with one :class:`RungContext` each,
collect the ledger and the events, announce them, and raise when the target is out
of reach.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from glyphfold.compaction.history.events import EventBus, publish
from glyphfold.compaction.history.markers import (
    SNAPSHOT,
    SNAPSHOT_ACK,
    marker_kind,
    pinned_by_meta,
)
from glyphfold.compaction.history.model import History, Message, ToolCall, ToolResult
from glyphfold.compaction.history.steps import Regions, split_regions
from glyphfold.compaction.history.tokens import (
    DEFAULT_IMAGE_POLICY,
    DEFAULT_PROFILE,
    ImagePolicy,
    TokenCounter,
    envelope_tokens,
    estimate_message_tokens,
    token_costs,
)
from glyphfold.compaction.ladder.breakpoints import place_cache_breakpoint
from glyphfold.compaction.ladder.ledger import LedgerEntry
from glyphfold.compaction.ladder.result import CompactionResult
from glyphfold.compaction.ladder.rungs.base import Rung, RungContext
from glyphfold.errors import ContextOverflowError, InputError
from glyphfold.render.profiles import Profile, get_profile

__all__ = [
    "LadderRun",
    "Pin",
    "Pricing",
    "counters",
    "frozen_prefix",
    "minimal_tokens",
    "resolve_pins",
    "run_ladder",
    "tail_messages",
]

# a pinned message: its index, a (start, stop) span or range of indices, or an id
# (a tool call's id, or a message's "id")
Pin: TypeAlias = int | range | tuple[int, int] | str

DEFAULT_TAIL_TOKENS = 8_000


@dataclass(frozen=True, kw_only=True)
class LadderRun:
    """One run of the ladder: the rungs, the numbers, and the options every rung sees."""

    rungs: tuple[Rung, ...]
    target: int  # the history must end at or under this
    budget: int  # what the caller asked for (target + reserve)
    profile: Profile
    pins: Iterable[Pin] = ()
    dry_run: bool = False
    counter: TokenCounter | None = None
    raise_if_over: bool = True
    extra_events: tuple[object, ...] = ()  # announced before the rungs run
    reactive: bool = False  # recovery after an overflow (the rungs are told, SPEC §3.6)
    bus: EventBus | None = None
    image_policy: ImagePolicy = DEFAULT_IMAGE_POLICY
    tail_tokens: int = DEFAULT_TAIL_TOKENS  # the tail allowance (LadderConfig.tail_tokens)
    min_saving_tokens: int = 0  # elide and strip do not act below this
    freeze_blocks: bool = True  # earlier snapshot blocks stay byte for byte (SPEC §5.10)


@dataclass(frozen=True)
class Pricing:
    """How one run prices: a whole history, its messages one by one, one message alone."""

    count: Callable[[History], int]
    costs: Callable[[History], tuple[int, ...]]
    count_message: Callable[[Message], int]


def counters(
    profile: Profile, counter: TokenCounter | None, image_policy: ImagePolicy = DEFAULT_IMAGE_POLICY
) -> Pricing:
    """The prices of a run under ``profile`` and ``image_policy``.

    ``count(h) == system + sum(costs(h))``: ``costs`` are the per-message estimates
    in place (old tool results by bytes, earlier turns' thinking free, nothing before
    a compaction block); ``count_message`` prices a message alone, images sent.
    """
    if not profile.vision:
        # a text-only profile prices no image (core's pricing raises); the strip rung
        # removes them all for such a profile, so price them as on the default profile
        profile = get_profile(DEFAULT_PROFILE)
    last: dict[str, Any] = {}

    def priced(h: History) -> Any:
        # rungs price the same history several times in a row: remember the last one
        if last.get("h") is not h:
            last["h"] = h
            last["c"] = token_costs(h, profile=profile, counter=counter, image_policy=image_policy)
        return last["c"]

    def count(h: History) -> int:
        return int(priced(h).total)

    def costs(h: History) -> tuple[int, ...]:
        return tuple(priced(h).messages)

    memo: dict[int, tuple[Message, int]] = {}

    def count_message(m: Message) -> int:
        # messages are immutable and several rungs price the same ones: remember by identity
        # (the message is kept in the memo so its id cannot be reused while it lives)
        hit = memo.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        n = estimate_message_tokens(
            m, images_sent=True, tool_results_by_bytes=False, profile=profile, counter=counter
        )
        memo[id(m)] = (m, n)
        return n

    return Pricing(count, costs, count_message)


def _fixed_tokens(h: History, price: Pricing) -> tuple[int, Regions, tuple[int, ...]]:
    """(system + head + newest real user message, the zero-tail regions, the costs)."""
    costs = price.costs(h)
    reg = split_regions(h, costs=costs, tail_tokens=0)
    system = price.count(h) - sum(costs)
    fixed = system + sum(costs[: reg.head_end])
    fixed += sum(costs[i] for i in reg.request if reg.region_of(i) == "middle")
    return fixed, reg, costs


def tail_messages(h: History, price: Pricing, *, target: int, tail_tokens: int) -> int:
    """How many newest messages form the tail of this run (SPEC §1).

    The newest steps within the tail allowance: ``tail_tokens``, and never more than
    half of what the target leaves after the head and the newest real user message,
    so the middle keeps room to work in. At least the newest step.
    """
    fixed, _, costs = _fixed_tokens(h, price)
    allowance = tail_tokens if target <= 0 else min(tail_tokens, max(0, (target - fixed) // 2))
    reg = split_regions(h, costs=costs, tail_tokens=allowance)
    return len(h.messages) - reg.tail_start


def minimal_tokens(h: History, price: Pricing, pinned: frozenset[int] = frozenset()) -> int:
    """The least a model-free ladder can reach: head, newest real user message, newest step.

    Everything else of the middle dropped, with the breadcrumbs that mark the cuts (the
    last fallback's output, SPEC §5.7); pinned steps stay too.
    """
    from glyphfold.compaction.history.trim import Span, drop_spans

    _, reg, _ = _fixed_tokens(h, price)
    msgs = h.messages
    request = set(reg.request)
    keep = {i for i in reg.middle if id(msgs[i]) in pinned or i in request}
    spans: list[Span] = []
    for s in reg.middle_steps:
        if any(i in keep for i in s.indices):
            continue
        if spans and spans[-1].end == s.start:
            spans[-1] = Span(spans[-1].start, s.end, steps=spans[-1].steps + 1)
        else:
            spans.append(Span(s.start, s.end, steps=1))
    if not spans:
        return price.count(h)
    return price.count(drop_spans(h, spans).history)


def _message_ids(msgs: tuple[Message, ...]) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {}
    for i, m in enumerate(msgs):
        for b in m.blocks:
            if isinstance(b, ToolCall):
                ids.setdefault(b.id, []).append(i)
            elif isinstance(b, ToolResult):
                ids.setdefault(b.call_id, []).append(i)
        rid = m.raw.get("id") if m.raw is not None else None
        if isinstance(rid, str):
            ids.setdefault(rid, []).append(i)
    return ids


def _pin_indices(p: Any, ids: dict[str, list[int]]) -> list[int]:
    if isinstance(p, bool):
        msg = f"a pin must be an index, a span or an id, got {p!r}"
        raise InputError(msg)
    if isinstance(p, int):
        return [p]
    if isinstance(p, range):
        return list(p)
    if isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, int) for x in p):
        return list(range(p[0], p[1]))
    if isinstance(p, str):
        if p not in ids:
            msg = f"pin {p!r} names no tool call, tool result or message id in the history"
            raise InputError(msg)
        return ids[p]
    msg = f"a pin must be an index, a (start, stop) span, a range or an id, got {p!r}"
    raise InputError(msg)


def resolve_pins(h: History, pins: Iterable[Pin]) -> frozenset[int]:
    """Pins -> id() of the pinned canonical messages.

    A pin is a message index (int), a ``range`` or ``(start, stop)`` span of
    indices, or a string id (a tool call id, or a message's ``id``). Messages
    whose wire dict carries ``"x_glyphfold": {"pin": true}`` are pinned too.
    """
    msgs = h.messages
    ids: dict[str, list[int]] | None = None  # found when a pin names an id
    out: set[int] = {id(m) for m in msgs if pinned_by_meta(m)}
    for p in pins:
        if ids is None and isinstance(p, str):
            ids = _message_ids(msgs)
        for i in _pin_indices(p, ids or {}):
            if not -len(msgs) <= i < len(msgs):
                msg = f"pin index {i} is outside the history (0..{len(msgs) - 1})"
                raise InputError(msg)
            out.add(id(msgs[i]))
    return frozenset(out)


def frozen_prefix(h: History) -> int:
    """How many leading messages an earlier compaction sent and a new one keeps (SPEC §5.10).

    Everything up to the newest snapshot block (and the acknowledgement after it): the
    pages already sent, and the text around them, stay byte for byte in place so the
    provider's prompt cache keeps serving them; only what follows is compacted. 0 when
    the history holds no snapshot.
    """
    msgs = h.messages
    last = next((i for i in range(len(msgs) - 1, -1, -1) if marker_kind(msgs[i]) == SNAPSHOT), -1)
    if last < 0:
        return 0
    end = last + 1
    if end < len(msgs) and marker_kind(msgs[end]) == SNAPSHOT_ACK:
        end += 1
    return end


@dataclass
class _State:
    """What the loop carries from rung to rung."""

    history: History
    tokens: int
    ledger: list[LedgerEntry] = field(default_factory=list)
    events: list[object] = field(default_factory=list)
    pages: tuple[Any, ...] = ()


def _context(
    run: LadderRun,
    state: _State,
    price: Pricing,
    pinned: frozenset[int],
    tail: int,
    frozen: frozenset[int] = frozenset(),
) -> RungContext:
    return RungContext(
        target_tokens=run.target,
        count=price.count,
        count_message=price.count_message,
        costs=price.costs,
        profile=run.profile,
        pinned=pinned | frozen,
        frozen=frozen,
        dry_run=run.dry_run,
        reactive=run.reactive,
        tokens=state.tokens,
        history_id=id(state.history),
        tail_messages=tail,
        min_saving_tokens=run.min_saving_tokens,
    )


def _step(run: LadderRun, state: _State, rung: Rung, ctx: RungContext, price: Pricing) -> None:
    outcome = rung.apply(state.history, ctx)
    state.events.extend(outcome.events)
    if not run.dry_run:
        for ev in outcome.events:
            publish(ev, run.bus)
    if outcome.entry is not None:
        state.ledger.append(outcome.entry)
    if outcome.history is not state.history:
        state.history = outcome.history
        entry = outcome.entry
        # every rung's entry carries the estimate of its output; no need to recount
        state.tokens = entry.tokens_after if entry is not None else price.count(state.history)
        if outcome.pages:
            state.pages = outcome.pages


def _overflow(run: LadderRun, state: _State, h: History, price: Pricing) -> ContextOverflowError:
    names = ", ".join(r.name for r in run.rungs) or "no rungs"
    floor = minimal_tokens(h, price, resolve_pins(h, run.pins))
    why = (
        f"the head, the newest real user message and the newest step alone are {floor:,} "
        "tokens with the breadcrumbs that mark the cuts"
        if floor > run.target
        else "the head, the tail, the newest real user message and pinned steps stay"
    )
    schemas = envelope_tokens(h, counter=run.counter)
    if schemas:
        why += f"; {schemas:,} of them are the request's tool schemas, which no rung shortens"
    msg = (
        f"cannot compact the history to {run.target:,} tokens: after {names} it is still "
        f"{state.tokens:,} tokens ({why}); raise the budget or allow more rungs"
    )
    return ContextOverflowError(
        msg, estimate=state.tokens, window=run.budget, overshoot=state.tokens - run.target
    )


def _pages_sent(h: History, pages: tuple[Any, ...]) -> tuple[Any, ...]:
    """The pages still in ``h``: a later rung (trim) may drop the snapshot that drew
    them, and the result must not report pages the model is not sent (issue 20)."""
    sent = {i.data for m in h.messages for i in m.images if i.data}
    return tuple(p for p in pages if base64.b64encode(p.png).decode("ascii") in sent)


def run_ladder(
    h: History,
    restore: Callable[[History], Any],
    run: LadderRun,
    *,
    estimate: int | None = None,
) -> CompactionResult:
    """Run ``run.rungs`` over the parsed history ``h``; ``restore`` gives the caller's kind."""
    price = counters(run.profile, run.counter, run.image_policy)
    pinned = resolve_pins(h, run.pins)
    before = price.count(h) if estimate is None else estimate
    state = _State(history=h, tokens=before, events=list(run.extra_events))
    if not run.dry_run:
        for ev in run.extra_events:
            publish(ev, run.bus)
    tail = (
        tail_messages(h, price, target=run.target, tail_tokens=run.tail_tokens) if h.messages else 1
    )
    # the frozen prefix: no rung changes it (the snapshot rung merges its blocks only
    # when it must, SPEC §5.10); messages are immutable, so their ids name them in every
    # history a rung makes
    n_frozen = frozen_prefix(h) if run.freeze_blocks else 0
    frozen = frozenset(id(m) for m in h.messages[:n_frozen])
    for rung in run.rungs:
        if state.tokens <= run.target:
            break
        _step(run, state, rung, _context(run, state, price, pinned, tail, frozen), price)
    if state.pages:
        state.pages = _pages_sent(state.history, state.pages)
    if state.pages:  # one prompt-cache breakpoint on the snapshot (priced in a dry run too)
        state.history, state.tokens = place_cache_breakpoint(
            state.history, state.tokens, run.target, price.count
        )
    if run.raise_if_over and not run.dry_run and state.tokens > run.target:
        raise _overflow(run, state, h, price)
    final = h if run.dry_run else state.history  # a dry run changes nothing
    return CompactionResult(
        messages=restore(final),
        ledger=tuple(state.ledger),
        events=tuple(state.events),
        tokens_before=before,
        tokens_after=state.tokens,
        pages=state.pages,
        budget=run.budget,
        target=run.target,
        dry_run=run.dry_run,
        history=final,
    )
