"""The one trimming algorithm: drop whole units, put one breadcrumb before the kept part.

Units are whole turns (SPEC §2: :func:`trim_history` and its wrappers, reactive
:func:`recover_from_overflow`) or whole steps of the middle (SPEC §5.7: the
ladder's last fallback). Either way :func:`drop_spans` does the cutting:

- only whole units go, so a tool call is never separated from its result (SPEC §2.1);
- a breadcrumb tells the model that earlier context was omitted (SPEC §2.6a). It is
  a message of its own placed *before* the kept part, never text written into a
  kept message. OpenAI: a system message closing the leading system block (chat
  templates that want system messages first still accept it); elsewhere, and
  always for Anthropic (no system role inside ``messages``), a user-side marker
  with an assistant bridge / acknowledgement where alternation needs one
  (:mod:`~glyphfold.compaction.history.splice`);
- repeated trims replace the breadcrumb and add up its counts instead of stacking
  breadcrumbs: earlier breadcrumbs next to a dropped span are folded into the new one.

:func:`trim_history` also announces a :class:`HistoryTrimmed` event (SPEC §2.6b);
when nothing needs trimming the input object itself is returned (SPEC §2.5).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.budget import recovery_target
from glyphfold.compaction.history.events import EventBus, HistoryTrimmed, publish
from glyphfold.compaction.history.markers import (
    BREADCRUMB,
    BREADCRUMB_ACK_TEXT,
    BRIDGE,
    breadcrumb_counts,
    breadcrumb_text,
    is_breadcrumb_text,
    marked_message,
    marker_kind,
)
from glyphfold.compaction.history.messages import FormatArg, coerce, plain_format
from glyphfold.compaction.history.model import History, Message, Text
from glyphfold.compaction.history.overflow import is_context_overflow_error
from glyphfold.compaction.history.splice import append_user_side
from glyphfold.compaction.history.tokens import (
    DEFAULT_IMAGE_POLICY,
    DEFAULT_PROFILE,
    TokenCounter,
    estimate_message_tokens,
    token_costs,
)
from glyphfold.compaction.history.turns import Segmentation, segment_turns
from glyphfold.compaction.history.wire import wire_format
from glyphfold.errors import ContextOverflowError, InputError
from glyphfold.render.profiles import ProfileArg

__all__ = [
    "DEFAULT_MAX_TURNS",
    "Dropped",
    "Span",
    "TrimResult",
    "drop_spans",
    "recover_from_overflow",
    "trim_conversation_to_recent_turns",
    "trim_history",
    "trim_to_recent_turn_count",
    "trim_to_recent_turns",
]

DEFAULT_MAX_TURNS = 50


@dataclass(frozen=True, slots=True)
class Span:
    """``messages[start:end]`` go: ``turns`` whole turns or ``steps`` whole steps."""

    start: int
    end: int
    turns: int = 0
    steps: int = 0


@dataclass(frozen=True, slots=True)
class Dropped:
    """What :func:`drop_spans` did: the new history, what left, the breadcrumbs it wrote."""

    history: History
    indices: tuple[int, ...]  # input indices of the dropped messages
    breadcrumbs: tuple[str, ...]
    start: int  # first input index that went (earlier breadcrumbs included)
    end: int  # one past the last
    folded: tuple[int, ...] = ()  # input indices of earlier breadcrumbs (and bridges) folded in


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


def _foldable(m: Message) -> bool:
    """An earlier breadcrumb (or its bridge/acknowledgement): replaced, never stacked."""
    if marker_kind(m) in (BREADCRUMB, BRIDGE):
        return True
    return m.role == "system" and is_breadcrumb_text(m.text)  # a breadcrumb of older versions


def _widen(msgs: Sequence[Message], spans: Sequence[Span]) -> list[Span]:
    """Spans grown over the earlier breadcrumbs right next to them."""
    out: list[Span] = []
    for sp in sorted(spans, key=lambda s: s.start):
        a, b = sp.start, sp.end
        lo = out[-1].end if out else 0
        while a > lo and _foldable(msgs[a - 1]):
            a -= 1
        while b < len(msgs) and _foldable(msgs[b]):
            b += 1
        out.append(dataclasses.replace(sp, start=a, end=b))
    return out


def _carried(m: Message) -> tuple[int, int, int]:
    """Counts an earlier breadcrumb in ``m`` reports (a marker, or a block of older versions)."""
    msgs = turns = steps = 0
    for b in m.blocks:
        if isinstance(b, Text) and is_breadcrumb_text(b.text):
            a, t, s = breadcrumb_counts(b.text)
            msgs, turns, steps = msgs + a, turns + t, steps + s
    return msgs, turns, steps


def _crumb(h: History, out: list[Message], text: str) -> Message:
    """The breadcrumb message: a system message in the leading block where the format keeps
    its system prompt in the list (OpenAI), else user side."""
    if wire_format(h.format).system_in_messages and all(m.role == "system" for m in out):
        crumb = marked_message("system", text, BREADCRUMB)
        if out and out[0].raw is not None and out[0].raw.get("role") == "developer":
            # the leading block speaks as "developer": so does its breadcrumb
            raw = {**(crumb.raw or {}), "role": "developer"}
            crumb = dataclasses.replace(crumb, raw=MappingProxyType(raw))
        return crumb
    return marked_message("user", text, BREADCRUMB)


def drop_spans(h: History, spans: Sequence[Span]) -> Dropped:
    """Drop ``spans`` of ``h`` (whole units), one breadcrumb before each kept part.

    Earlier breadcrumbs next to a span are folded into its breadcrumb (their counts
    carried). Raises InputError for overlapping or empty spans.
    """
    msgs = h.messages
    wide = _widen(msgs, spans)
    for x, y in itertools.pairwise(wide):
        if y.start < x.end:
            msg = f"trim spans overlap: {x} and {y}"
            raise InputError(msg)
    out: list[Message] = []
    gone: list[int] = []
    folded: list[int] = []
    crumbs: list[str] = []
    pos = 0
    for sp in wide:
        if sp.end <= sp.start:
            msg = f"empty trim span {sp}"
            raise InputError(msg)
        out.extend(msgs[pos : sp.start])
        n_msgs, turns, steps = 0, sp.turns, sp.steps
        for i in range(sp.start, sp.end):
            a, t, s = _carried(msgs[i])
            turns, steps = turns + t, steps + s
            if _foldable(msgs[i]):
                folded.append(i)
            else:
                gone.append(i)
                n_msgs += 1
            n_msgs += a
        text = breadcrumb_text(n_msgs, turns, steps)
        crumbs.append(text)
        nxt = msgs[sp.end] if sp.end < len(msgs) else None
        crumb = _crumb(h, out, text)
        if crumb.role == "system":
            out.append(crumb)
        else:
            append_user_side(out, crumb, nxt, ack_text=BREADCRUMB_ACK_TEXT, ack_kind=BREADCRUMB)
        pos = sp.end
    out.extend(msgs[pos:])
    return Dropped(
        h.replace_messages(out),
        tuple(gone),
        tuple(crumbs),
        wide[0].start,
        wide[-1].end,
        tuple(folded),
    )


def _crumb_tokens(fmt: str, profile: ProfileArg, counter: TokenCounter | None) -> int:
    """What one breadcrumb (with its acknowledgement when it is user side) costs, at most."""
    text = breadcrumb_text(10**6, 10**5, 10**5)
    role = "system" if wire_format(fmt).system_in_messages else "user"
    ms = [marked_message(role, text, BREADCRUMB)]
    if role == "user":
        ms.append(marked_message("assistant", BREADCRUMB_ACK_TEXT, BREADCRUMB))
    return sum(
        estimate_message_tokens(
            m, images_sent=False, tool_results_by_bytes=False, profile=profile, counter=counter
        )
        for m in ms
    )


def _turns_to_drop_for_budget(
    h: History,
    seg: Segmentation,
    costs: tuple[int, ...],
    total: int,
    budget: int,
    crumb: int,
) -> int:
    turns = seg.turns
    if budget <= 0 or total <= budget or len(turns) <= 1:
        return 0
    old_crumbs = sum(costs[i] for i in range(seg.leading_end) if _foldable(h.messages[i]))
    cur = total - old_crumbs + crumb
    k = 0
    while k < len(turns) - 1 and cur > budget:
        t = turns[k]
        cur -= sum(costs[t.start : t.end])
        k += 1
    return k


def _trim_turns(
    h: History, seg: Segmentation, k: int, *, reason: str, tokens_before: int, **pricing: Any
) -> tuple[History, HistoryTrimmed]:
    """Drop ``seg.turns[:k]`` (k >= 1) with one breadcrumb; the event that reports it."""
    turns = seg.turns
    done = drop_spans(h, [Span(turns[0].start, turns[k].start, turns=k)])
    tokens_after = token_costs(done.history, **pricing).total
    event = HistoryTrimmed(
        reason=reason,
        dropped_messages=len(done.indices),
        dropped_turns=k,
        kept_turns=len(turns) - k,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        dropped_range=(turns[0].start, turns[k].start),
        breadcrumb=done.breadcrumbs[0],
    )
    return done.history, event


def trim_history(
    history: Any,
    *,
    budget: int | None = None,
    max_turns: int | None = None,
    reason: str | None = None,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    bus: EventBus | None = None,
    format: FormatArg = "auto",
) -> TrimResult:
    """Drop the oldest whole turns to meet ``budget`` tokens and/or ``max_turns`` turns.

    Returns a :class:`TrimResult` (history of the same kind as the input). With
    both limits the stricter one wins. ``budget`` 0 disables the token limit
    (docs/budget.md); ``max_turns`` 0 still keeps the newest turn (docs/history.md). The
    event is published on ``bus`` (default: the process-wide bus). ``format`` names the
    wire format (docs/wire-formats.md; default: detected).
    """
    if budget is None and max_turns is None:
        msg = "trim_history needs budget= and/or max_turns="
        raise InputError(msg)
    if budget is not None:
        check_int("budget", budget, minimum=0)
    if max_turns is not None:
        check_int("max_turns", max_turns, minimum=0)
    h, restore = coerce(history, format=format, plain=plain_format(profile))
    seg = segment_turns(h)
    pricing: dict[str, Any] = {"profile": profile, "counter": counter, "image_policy": image_policy}
    tc = token_costs(h, segmentation=seg, **pricing)
    total = tc.total
    k_budget = 0
    if budget is not None:
        crumb = _crumb_tokens(h.format, profile, counter)
        k_budget = _turns_to_drop_for_budget(h, seg, tc.messages, total, budget, crumb)
    k_turns = max(0, len(seg.turns) - max(1, max_turns)) if max_turns is not None else 0
    k = max(k_budget, k_turns)
    if k == 0:
        return TrimResult(restore(h), None, total, total)
    why = reason or ("token_budget" if k_budget >= k_turns else "turn_limit")
    out, event = _trim_turns(h, seg, k, reason=why, tokens_before=total, **pricing)
    publish(event, bus)
    return TrimResult(restore(out), event, total, event.tokens_after)


def trim_to_recent_turns(
    history: Any,
    budget: int,
    *,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    bus: EventBus | None = None,
) -> Any:
    """Drop the oldest whole turns until the estimate fits ``budget`` tokens (docs/history.md).

    The newest turn is kept even above budget (docs/history.md); ``budget`` 0
    disables proactive trimming (docs/budget.md). Returns the kind it was given.
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
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    bus: EventBus | None = None,
) -> Any:
    """Keep the newest ``max_turns`` whole turns (default 50; 0 keeps one) (docs/history.md)."""
    return trim_history(
        history, max_turns=max_turns, profile=profile, counter=counter, bus=bus
    ).history


def trim_conversation_to_recent_turns(
    conversation: Any,
    max_turns: int = DEFAULT_MAX_TURNS,
    *,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    bus: EventBus | None = None,
) -> Any:
    """The turn limit on the structured conversation (a canonical History) (docs/history.md).

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
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    bus: EventBus | None = None,
) -> Any:
    """Reactive recovery (docs/budget.md): trim to two thirds of the current estimate, whole turns.

    The target comes from the history's own estimate, not from the model's
    capacity. ``error`` (optional) must be a context-overflow error. Raises
    ContextOverflowError when not even one turn can be dropped (retrying the
    same request would fail again: compact it instead).
    """
    if error is not None and not is_context_overflow_error(error):
        msg = f"not a context-overflow error, trimming would not help: {error!s:.200}"
        raise InputError(msg)
    h, restore = coerce(history, plain=plain_format(profile))
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
