"""The rung loop: cheapest rung first, stop as soon as the history fits (SPEC §5).

:func:`run_ladder` is what ``compact``, ``recover`` and ``shake`` share: parse once,
price once, run the rungs in order with one :class:`RungContext` each, collect the
ledger and the events, announce them, and raise when the target is out of reach.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.events import EventBus, HistoryTrimmed, publish
from glyphfold.compaction.history.messages import History, Message, ToolCall, ToolResult
from glyphfold.compaction.history.tokens import (
    DEFAULT_PROFILE,
    ImagePolicy,
    TokenCounter,
    estimate_history_tokens,
    estimate_message_tokens,
)
from glyphfold.compaction.ladder.cache import place_cache_breakpoint
from glyphfold.compaction.ladder.ledger import LedgerEntry
from glyphfold.compaction.ladder.result import CompactionResult
from glyphfold.compaction.ladder.rungs.base import Rung, RungContext, glyphfold_meta
from glyphfold.render.profiles import Profile, get_profile

from glyphfold.errors import ContextOverflowError, InputError

__all__ = ["LadderRun", "counters", "resolve_pins", "run_ladder"]


@dataclass(frozen=True, kw_only=True)
class LadderRun:
    """One run of the ladder: the rungs, the numbers, and the options every rung sees."""

    rungs: tuple[Rung, ...]
    target: int  # the history must end at or under this
    budget: int  # what the caller asked for (target + reserve)
    profile: Profile
    pins: Iterable[Any] = ()
    dry_run: bool = False
    counter: TokenCounter | None = None
    raise_if_over: bool = True
    extra_events: tuple[object, ...] = ()  # announced before the rungs run
    options: Mapping[str, Any] = field(default_factory=dict)
    bus: EventBus | None = None
    image_policy: ImagePolicy = "all"


def counters(
    profile: Profile, counter: TokenCounter | None, image_policy: ImagePolicy = "all"
) -> tuple[Callable[[History], int], Callable[[Message], int]]:
    """(price of a history, price of one message) under ``profile`` and ``image_policy``."""
    if not profile.vision:
        # a text-only profile prices no image (core's pricing raises); the strip rung
        # removes them all for such a profile, so price them as on the default profile
        profile = get_profile(DEFAULT_PROFILE)

    def count(h: History) -> int:
        return estimate_history_tokens(
            h, profile=profile, counter=counter, image_policy=image_policy
        )

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

    return count, count_message


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


def resolve_pins(h: History, pins: Iterable[Any]) -> frozenset[int]:
    """Pins -> id() of the pinned canonical messages.

    A pin is a message index (int), a ``range`` or ``(start, stop)`` span of
    indices, or a string id (a tool call id, or a message's ``id``). Messages
    whose wire dict carries ``"x_glyphfold": {"pin": true}`` are pinned too.
    """
    msgs = h.messages
    ids = _message_ids(msgs)
    out: set[int] = {id(m) for m in msgs if glyphfold_meta(m).get("pin")}
    for p in pins:
        for i in _pin_indices(p, ids):
            if not -len(msgs) <= i < len(msgs):
                msg = f"pin index {i} is outside the history (0..{len(msgs) - 1})"
                raise InputError(msg)
            out.add(id(msgs[i]))
    return frozenset(out)


@dataclass
class _State:
    """What the loop carries from rung to rung."""

    history: History
    tokens: int
    aligned: bool = True  # message i of history is message i of the input (1:1 rungs so far)
    ledger: list[LedgerEntry] = field(default_factory=list)
    events: list[object] = field(default_factory=list)
    pages: tuple[Any, ...] = ()


def _context(
    run: LadderRun,
    state: _State,
    h: History,
    count: Any,
    count_message: Any,
    pinned: frozenset[int],
) -> RungContext:
    return RungContext(
        target_tokens=run.target,
        count=count,
        count_message=count_message,
        profile=run.profile,
        pinned=pinned,
        original=h if state.aligned else None,
        dry_run=run.dry_run,
        options=MappingProxyType(
            {
                **run.options,
                "counter": run.counter,
                "bus": run.bus,
                "image_policy": run.image_policy,
            }
        ),
        tokens=state.tokens,
        history_id=id(state.history),
    )


def _step(run: LadderRun, state: _State, rung: Rung, ctx: RungContext, count: Any) -> None:
    outcome = rung.apply(state.history, ctx)
    state.events.extend(outcome.events)
    if not run.dry_run:
        # core's trim announces its own HistoryTrimmed; announce the ladder's, in order
        for ev in outcome.events:
            if not isinstance(ev, HistoryTrimmed):
                publish(ev, run.bus)
    if outcome.entry is not None:
        state.ledger.append(outcome.entry)
    if outcome.history is not state.history:
        if len(outcome.history.messages) != len(state.history.messages):
            state.aligned = False
        state.history = outcome.history
        entry = outcome.entry
        # every rung's entry carries the estimate of its output; no need to recount
        state.tokens = entry.tokens_after if entry is not None else count(state.history)
        if outcome.pages:
            state.pages = outcome.pages


def run_ladder(
    h: History,
    restore: Callable[[History], Any],
    run: LadderRun,
    *,
    estimate: int | None = None,
) -> CompactionResult:
    """Run ``run.rungs`` over the parsed history ``h``; ``restore`` gives the caller's kind."""
    count, count_message = counters(run.profile, run.counter, run.image_policy)
    pinned = resolve_pins(h, run.pins)
    before = count(h) if estimate is None else estimate
    state = _State(history=h, tokens=before, events=list(run.extra_events))
    if not run.dry_run:
        for ev in run.extra_events:
            publish(ev, run.bus)
    for rung in run.rungs:
        if state.tokens <= run.target:
            break
        _step(run, state, rung, _context(run, state, h, count, count_message, pinned), count)
    if state.pages and not run.dry_run:  # one prompt-cache breakpoint on the snapshot
        state.history, state.tokens = place_cache_breakpoint(
            state.history, state.tokens, run.target, count
        )
    if run.raise_if_over and not run.dry_run and state.tokens > run.target:
        names = ", ".join(r.name for r in run.rungs) or "no rungs"
        msg = (
            f"cannot compact the history to {run.target:,} tokens: after {names} it is "
            f"still {state.tokens:,} tokens (the newest turn and pinned messages are never "
            f"removed); raise the budget or allow more rungs"
        )
        raise ContextOverflowError(
            msg, estimate=state.tokens, window=run.budget, overshoot=state.tokens - run.target
        )
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
