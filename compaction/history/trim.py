"""Turn-atomic trimming with a visible breadcrumb and a HistoryTrimmed event (SPEC §2, §3.6).

Only whole turns go, oldest first; the leading messages (system prompts) and
the newest turn always stay (SPEC §2.1-2.5). Whenever turns are dropped:

- a breadcrumb tells the model that earlier context was omitted (SPEC §2.6a).
  It must be valid in both wire formats without breaking alternation or
  pairing: OpenAI gets a system message at the end of the leading system
  block (so chat templates that want system messages first still accept it);
  Anthropic has no system role inside ``messages``, so the breadcrumb becomes
  the first text block of the first kept user message (a real user message,
  which never carries tool results). Repeated trims replace the breadcrumb and
  add up its counts instead of stacking breadcrumbs;
- a :class:`HistoryTrimmed` event goes to every subscriber (SPEC §2.6b).

When nothing needs trimming the input object itself is returned (SPEC §2.5).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.budget import recovery_target
from glyphfold.compaction.history.events import EventBus, HistoryTrimmed, publish
from glyphfold.compaction.history.messages import OPENAI, History, Message, Text, coerce
from glyphfold.compaction.history.overflow import is_context_overflow_error
from glyphfold.compaction.history.tokens import (
    DEFAULT_PROFILE,
    TokenCounter,
    estimate_message_tokens,
    token_costs,
)
from glyphfold.compaction.history.turns import (
    BREADCRUMB_PREFIX,
    Segmentation,
    is_breadcrumb_text,
    segment_turns,
)

from glyphfold.errors import ContextOverflowError, InputError

__all__ = [
    "DEFAULT_MAX_TURNS",
    "TrimResult",
    "breadcrumb_text",
    "recover_from_overflow",
    "trim_conversation_to_recent_turns",
    "trim_history",
    "trim_to_recent_turn_count",
    "trim_to_recent_turns",
]

DEFAULT_MAX_TURNS = 50
_COUNTS = re.compile(r"omitted: ([\d,]+) messages? in ([\d,]+) turns?")


def breadcrumb_text(messages: int, turns: int) -> str:
    """The breadcrumb telling the model that earlier context was omitted."""
    return (
        f"{BREADCRUMB_PREFIX} {messages:,} message{'s' if messages != 1 else ''} in "
        f"{turns:,} turn{'s' if turns != 1 else ''} were removed to fit the context "
        "window. Ask the user if you need something from them.]"
    )


def _parse_counts(text: str) -> tuple[int, int]:
    m = _COUNTS.search(text)
    if m is None:
        return 0, 0
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


@dataclass(frozen=True, slots=True)
class TrimResult:
    """A trim's output: the history (same kind as the input) and the event (None: no change)."""

    history: Any
    event: HistoryTrimmed | None
    tokens_before: int
    tokens_after: int

    @property
    def trimmed(self) -> bool:
        """True when turns were dropped."""
        return self.event is not None


def _check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {value!r}"
        raise InputError(msg)
    if value < minimum:
        msg = f"{name} must be >= {minimum}, got {value}"
        raise InputError(msg)
    return value


def _bc_message_blocks(m: Message) -> tuple[int, int, bool]:
    """Counts carried by breadcrumb blocks of ``m`` and whether it has any."""
    msgs = turns = 0
    found = False
    for b in m.blocks:
        if isinstance(b, Text) and is_breadcrumb_text(b.text):
            a, t = _parse_counts(b.text)
            msgs += a
            turns += t
            found = True
    return msgs, turns, found


def _apply(
    h: History,
    seg: Segmentation,
    k: int,
    *,
    reason: str,
    tokens_before: int,
    costs: tuple[int, ...],
    system_tokens: int,
    profile: Any,
    counter: TokenCounter | None,
) -> tuple[History, HistoryTrimmed]:
    """Drop turns[:k] (k >= 1) and insert the breadcrumb."""
    turns = seg.turns
    msgs = h.messages
    first_kept = turns[k].start
    drop_start = turns[0].start
    dropped = first_kept - drop_start
    # earlier breadcrumbs: carried counts (they are replaced, not stacked)
    prev_msgs = prev_turns = 0
    leading: list[Message] = []
    leading_tokens = 0
    for i in range(seg.leading_end):
        m = msgs[i]
        a, t, found = _bc_message_blocks(m)
        if found and m.role == "system":
            prev_msgs += a
            prev_turns += t
            continue
        leading.append(m)
        leading_tokens += costs[i]
    # Anthropic breadcrumbs sit in the first message of a turn
    for t in turns[:k]:
        a, tt, _ = _bc_message_blocks(msgs[t.start])
        prev_msgs += a
        prev_turns += tt
    text = breadcrumb_text(prev_msgs + dropped, prev_turns + k)
    kept = list(msgs[first_kept:])
    kept_tokens = sum(costs[first_kept:])
    if h.format == OPENAI:
        role_raw = None
        if leading and leading[0].raw is not None and leading[0].raw.get("role") == "developer":
            role_raw = MappingProxyType({"role": "developer"})
        crumb = Message("system", (Text(text),), role_raw)
        crumb_tokens = estimate_message_tokens(
            crumb, images_sent=False, tool_results_by_bytes=False, profile=profile, counter=counter
        )
        out = [*leading, crumb, *kept]
    else:
        head = kept[0]
        blocks = tuple(
            b for b in head.blocks if not (isinstance(b, Text) and is_breadcrumb_text(b.text))
        )
        new_head = dataclasses.replace(head, blocks=(Text(text), *blocks))
        kept[0] = new_head
        # the newest turn is unchanged, so the head's images stay priced as before
        old = costs[first_kept]
        new = estimate_message_tokens(
            new_head,
            images_sent=new_head.role == "user",
            tool_results_by_bytes=False,
            profile=profile,
            counter=counter,
        )
        crumb_tokens = new - old
        out = [*leading, *kept]
    tokens_after = system_tokens + leading_tokens + kept_tokens + crumb_tokens
    event = HistoryTrimmed(
        reason=reason,
        dropped_messages=dropped,
        dropped_turns=k,
        kept_turns=len(turns) - k,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        dropped_range=(drop_start, first_kept),
        breadcrumb=text,
    )
    return h.replace_messages(out), event


def _turns_to_drop_for_budget(
    h: History,
    seg: Segmentation,
    costs: tuple[int, ...],
    total: int,
    budget: int,
    profile: Any,
    counter: TokenCounter | None,
) -> int:
    turns = seg.turns
    if budget <= 0 or total <= budget or len(turns) <= 1:
        return 0
    # a breadcrumb costs about this much; count it so the result really fits
    crumb = estimate_message_tokens(
        Message("system", (Text(breadcrumb_text(10**6, 10**5)),)),
        images_sent=False,
        tool_results_by_bytes=False,
        profile=profile,
        counter=counter,
    )
    old_crumbs = sum(
        costs[i]
        for i in range(seg.leading_end)
        if h.messages[i].role == "system" and _bc_message_blocks(h.messages[i])[2]
    )
    cur = total - old_crumbs + crumb
    k = 0
    while k < len(turns) - 1 and cur > budget:
        t = turns[k]
        cur -= sum(costs[t.start : t.end])
        k += 1
    return k


def trim_history(
    history: Any,
    *,
    budget: int | None = None,
    max_turns: int | None = None,
    reason: str | None = None,
    profile: Any = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = "spec",
    bus: EventBus | None = None,
) -> TrimResult:
    """Drop the oldest whole turns to meet ``budget`` tokens and/or ``max_turns`` turns.

    Returns a :class:`TrimResult` (history of the same kind as the input). With
    both limits the stricter one wins. ``budget`` 0 disables the token limit
    (SPEC §3.1); ``max_turns`` 0 still keeps the newest turn (SPEC §2.4). The
    event is published on ``bus`` (default: the process-wide bus).
    """
    if budget is None and max_turns is None:
        msg = "trim_history needs budget= and/or max_turns="
        raise InputError(msg)
    if budget is not None:
        _check_int("budget", budget, minimum=0)
    if max_turns is not None:
        _check_int("max_turns", max_turns, minimum=0)
    h, restore = coerce(history)
    seg = segment_turns(h)
    tc = token_costs(
        h, profile=profile, counter=counter, image_policy=image_policy, segmentation=seg
    )
    total = tc.total
    k_budget = (
        _turns_to_drop_for_budget(h, seg, tc.messages, total, budget, profile, counter)
        if budget is not None
        else 0
    )
    k_turns = max(0, len(seg.turns) - max(1, max_turns)) if max_turns is not None else 0
    k = max(k_budget, k_turns)
    if k == 0:
        return TrimResult(restore(h), None, total, total)
    why = reason or ("token_budget" if k_budget >= k_turns else "turn_limit")
    out, event = _apply(
        h,
        seg,
        k,
        reason=why,
        tokens_before=total,
        costs=tc.messages,
        system_tokens=tc.system,
        profile=profile,
        counter=counter,
    )
    publish(event, bus)
    return TrimResult(restore(out), event, total, event.tokens_after)


def trim_to_recent_turns(
    history: Any,
    budget: int,
    *,
    profile: Any = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = "spec",
    bus: EventBus | None = None,
) -> Any:
    """Drop the oldest whole turns until the estimate fits ``budget`` tokens (SPEC §2.2).

    The newest turn is kept even above budget (SPEC §2.4, §3.3); ``budget`` 0
    disables proactive trimming (SPEC §3.1). Returns the kind it was given.
    """
    return trim_history(
        history,
        budget=budget,
        profile=profile,
        counter=counter,
        image_policy=image_policy,
        bus=bus,
    ).history


def trim_to_recent_turn_count(
    history: Any,
    max_turns: int = DEFAULT_MAX_TURNS,
    *,
    profile: Any = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    bus: EventBus | None = None,
) -> Any:
    """Keep the newest ``max_turns`` whole turns (default 50; 0 keeps one) (SPEC §2.3-2.4)."""
    return trim_history(
        history, max_turns=max_turns, profile=profile, counter=counter, bus=bus
    ).history


def trim_conversation_to_recent_turns(
    conversation: Any,
    max_turns: int = DEFAULT_MAX_TURNS,
    *,
    profile: Any = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    bus: EventBus | None = None,
) -> Any:
    """The turn limit on the structured conversation (a canonical History) (SPEC §2.3).

    Same rule as :func:`trim_to_recent_turn_count`; accepts wire input too and
    returns the kind it was given.
    """
    return trim_history(
        conversation, max_turns=max_turns, profile=profile, counter=counter, bus=bus
    ).history


def recover_from_overflow(
    history: Any,
    error: Any = None,
    *,
    profile: Any = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = "spec",
    bus: EventBus | None = None,
) -> Any:
    """Reactive recovery (SPEC §3.6): trim to two thirds of the current estimate, whole turns.

    The target comes from the history's own estimate, not from the model's
    capacity. ``error`` (optional) must be a context-overflow error. Raises
    ContextOverflowError when not even one turn can be dropped (retrying the
    same request would fail again: compact it instead).
    """
    if error is not None and not is_context_overflow_error(error):
        msg = f"not a context-overflow error, trimming would not help: {error!s:.200}"
        raise InputError(msg)
    h, restore = coerce(history)
    total = token_costs(h, profile=profile, counter=counter, image_policy=image_policy).total
    target = max(1, recovery_target(total))
    res = trim_history(
        h,
        budget=target,
        reason="overflow_recovery",
        profile=profile,
        counter=counter,
        image_policy=image_policy,
        bus=bus,
    )
    if res.event is None:
        msg = (
            f"cannot recover by trimming: the history (~{total:,} tokens) has no older turn "
            "to drop; compact the newest turn instead (glyphfold.recover)"
        )
        raise ContextOverflowError(msg, estimate=total, window=target, overshoot=total - target)
    return restore(res.history)
