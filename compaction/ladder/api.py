"""The recovery ladder: cheapest rung first, stop once the history fits (SPEC §5).

``compact`` is the proactive entry point (a budget or a window), ``recover``
the reactive one (after a provider rejected a request as too large: reduce to
two thirds of the current estimate with model-free rungs only, SPEC §3.6 and
§5.1). Both accept a wire history (OpenAI list, Anthropic list or
``{"system", "messages"}`` dict) or core's canonical ``History`` and return the
same kind in ``CompactionResult.messages``. Nothing is mutated; the same input
and options give byte-identical output, PNG pages included.

Documented fallbacks (the input is never touched in any of them):

- malformed history -> ``HistoryFormatError`` naming the message index;
  unknown profile -> ``UnknownProfileError``; bad options -> ``InputError``;
- a profile without vision (``text-only``) -> the snapshot rung steps aside and
  every image is stripped; a page that cannot be encoded within the provider's
  byte limit, or pages that would cost more than the text -> the snapshot rung
  steps aside (ledger note);
- a summarizer that raises, times out or returns no text -> the summary rung
  steps aside (ledger note + ``SummaryFailed`` event) and trimming follows;
- still over budget after every rung (the newest turn or pinned messages alone
  are too big) -> ``ContextOverflowError`` with the estimate, the budget and the
  overshoot; a dry run reports ``fits=False`` instead of raising.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.events import HistoryTrimmed, publish
from glyphfold.compaction.history.messages import (
    History,
    Message,
    ToolCall,
    ToolResult,
    coerce,
    to_wire,
)
from glyphfold.compaction.ladder.ledger import LedgerEntry, ledger_to_json
from glyphfold.compaction.ladder.rungs.base import X_KEY, Rung, RungContext, glyphfold_meta
from glyphfold.compaction.ladder.rungs.elide import Elide
from glyphfold.compaction.ladder.rungs.notable import ElideConfig
from glyphfold.compaction.ladder.rungs.snapshot import Snapshot, SnapshotConfig
from glyphfold.compaction.ladder.rungs.strip_images import StripConfig, StripImages
from glyphfold.compaction.ladder.rungs.summary import Summary, SummaryConfig
from glyphfold.compaction.ladder.rungs.trim import Trim

from glyphfold.errors import ContextOverflowError, InputError

__all__ = [
    "DEFAULT_RUNGS",
    "MODEL_FREE_RUNGS",
    "RUNGS",
    "CompactionResult",
    "LadderConfig",
    "compact",
    "provider_messages",
    "recover",
    "shake",
]

# name -> rung class; the ladder runs them in the order given (cheapest first)
RUNGS: dict[str, type] = {
    "elide": Elide,
    "strip": StripImages,
    "snapshot": Snapshot,
    "summary": Summary,
    "trim": Trim,
}
DEFAULT_RUNGS: tuple[str, ...] = ("elide", "strip", "snapshot", "summary", "trim")
MODEL_FREE_RUNGS: tuple[str, ...] = ("elide", "strip", "snapshot", "trim")
RECOVER_RATIO = 2 / 3  # SPEC §3.6


@dataclass(frozen=True)
class LadderConfig:
    """Per-rung configuration (each validated by its own dataclass)."""

    elide: ElideConfig = field(default_factory=ElideConfig)
    strip: StripConfig = field(default_factory=StripConfig)
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    summary: SummaryConfig = field(default_factory=SummaryConfig)


@dataclass(frozen=True)
class CompactionResult:
    """What the ladder did: the new history and the record of everything that left."""

    messages: Any  # same kind as the input (wire list/dict or canonical History)
    ledger: tuple[LedgerEntry, ...]
    events: tuple[Any, ...]
    tokens_before: int
    tokens_after: int
    pages: tuple[Any, ...]  # glyphfold.render Page objects of the final snapshot
    budget: int
    target: int  # budget minus reserve: what the history had to fit
    dry_run: bool = False
    history: History | None = field(default=None, repr=False)  # canonical result

    @property
    def fits(self) -> bool:
        return self.tokens_after <= self.target

    def for_provider(self) -> Any:
        """``messages`` as a provider accepts them (``x_glyphfold`` keys stripped).

        Keep ``messages`` as the conversation's stored history (the snapshot source
        in it lets the next pass re-render from text, SPEC §5.3); send this.
        """
        return provider_messages(self.messages)

    @property
    def plan(self) -> tuple[LedgerEntry, ...]:
        """For a dry run: per rung, what it would remove and the tokens it would save."""
        return self.ledger

    def report(self) -> dict[str, Any]:
        """A JSON-ready report (tokens, ledger; no page bytes)."""
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget,
            "target": self.target,
            "fits": self.fits,
            "dry_run": self.dry_run,
            "pages": [
                {
                    "width": p.width,
                    "height": p.height,
                    "image_tokens": p.image_tokens,
                    "png_bytes": len(p.png),
                    "source_span": list(p.source_span),
                }
                for p in self.pages
            ],
            "ledger": ledger_to_json(self.ledger),
        }

    def summary_lines(self) -> list[str]:
        """Short human summary: tokens before -> after and one line per rung."""
        head = (
            f"{'plan' if self.dry_run else 'compacted'}: {self.tokens_before:,} -> "
            f"{self.tokens_after:,} tokens (target {self.target:,})"
        )
        return [head, *(e.summary_line() for e in self.ledger)]


def _get_profile(profile: Any) -> Any:
    from glyphfold.render.profiles import get_profile

    if isinstance(profile, str):
        return get_profile(profile)
    if hasattr(profile, "max_images_per_request") and hasattr(profile, "cost"):
        return profile
    msg = f"profile must be a profile name or a Profile, got {type(profile).__name__}"
    raise InputError(msg)


def _counters(
    profile: Any, counter: Any, image_policy: str = "all"
) -> tuple[Callable[[History], int], Callable[[Message], int]]:
    from glyphfold.compaction.history.tokens import estimate_history_tokens, estimate_message_tokens

    if not getattr(profile, "vision", True):
        # a text-only profile prices no image (core's pricing raises); the strip rung
        # removes them all for such a profile, so price them as on the default profile
        profile = _get_profile("anthropic")

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


def _resolve_pins(h: History, pins: Iterable[Any]) -> frozenset[int]:
    """Pins -> id() of the pinned canonical messages.

    A pin is a message index (int), a ``range`` or ``(start, stop)`` span of
    indices, or a string id (a tool call id, or a message's ``id``). Messages
    whose wire dict carries ``"x_glyphfold": {"pin": true}`` are pinned too.
    """
    msgs = h.messages
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
    out: set[int] = {id(m) for m in msgs if glyphfold_meta(m).get("pin")}
    for p in pins:
        if isinstance(p, bool):
            msg = f"a pin must be an index, a span or an id, got {p!r}"
            raise InputError(msg)
        if isinstance(p, int):
            idx = [p]
        elif isinstance(p, range):
            idx = list(p)
        elif isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, int) for x in p):
            idx = list(range(p[0], p[1]))
        elif isinstance(p, str):
            if p not in ids:
                msg = f"pin {p!r} names no tool call, tool result or message id in the history"
                raise InputError(msg)
            idx = ids[p]
        else:
            msg = f"a pin must be an index, a (start, stop) span, a range or an id, got {p!r}"
            raise InputError(msg)
        for i in idx:
            if not -len(msgs) <= i < len(msgs):
                msg = f"pin index {i} is outside the history (0..{len(msgs) - 1})"
                raise InputError(msg)
            out.add(id(msgs[i]))
    return frozenset(out)


def _build_rungs(
    rungs: Sequence[Any] | None,
    *,
    summarizer: Any,
    config: LadderConfig,
    renderer: Any,
    allowed: tuple[str, ...],
) -> list[Rung]:
    names_or_objs = list(rungs) if rungs is not None else list(allowed)
    if isinstance(rungs, str):
        names_or_objs = [r.strip() for r in rungs.split(",") if r.strip()]
    out: list[Rung] = []
    for r in names_or_objs:
        if not isinstance(r, str):
            if not (hasattr(r, "apply") and hasattr(r, "name")):
                msg = f"a rung must be a name in {list(RUNGS)} or an object with .apply, got {r!r}"
                raise InputError(msg)
            out.append(r)
            continue
        if r not in RUNGS:
            msg = f"unknown rung {r!r}; valid rungs: {', '.join(RUNGS)}"
            raise InputError(msg)
        if r not in allowed:
            continue
        match r:
            case "elide":
                out.append(Elide(config.elide))
            case "strip":
                out.append(StripImages(config.strip))
            case "snapshot":
                out.append(Snapshot(config.snapshot, renderer=renderer))
            case "summary":
                if summarizer is None:
                    if rungs is not None:
                        msg = "the summary rung needs summarizer=...; pass one or drop 'summary'"
                        raise InputError(msg)
                    continue
                out.append(Summary(summarizer, config.summary))
            case "trim":
                out.append(Trim())
            case _:  # pragma: no cover - RUNGS and this match are kept in step
                msg = f"rung {r!r} is registered but not constructible"
                raise InputError(msg)
    return out


def _run(
    history: Any,
    *,
    profile: Any,
    target: int,
    budget: int,
    rungs: list[Rung],
    pins: Iterable[Any],
    dry_run: bool,
    counter: Any,
    raise_if_over: bool,
    extra_events: tuple[Any, ...] = (),
    format: str = "auto",
    options: Mapping[str, Any] | None = None,
    parsed: tuple[History, Callable[[History], Any]] | None = None,
    estimate: int | None = None,
    bus: Any = None,
    image_policy: str = "all",
) -> CompactionResult:
    h, restore = parsed if parsed is not None else coerce(history, format=format)
    prof = _get_profile(profile)
    count, count_message = _counters(prof, counter, image_policy)
    pinned = _resolve_pins(h, pins)
    before = count(h) if estimate is None else estimate
    ledger: list[LedgerEntry] = []
    events: list[Any] = list(extra_events)
    if not dry_run:
        for ev in extra_events:
            publish(ev, bus)
    pages: tuple[Any, ...] = ()
    cur = h
    aligned = True  # message i of cur is message i of h (only 1:1 rungs ran so far)
    tokens = before
    for rung in rungs:
        if tokens <= target:
            break
        ctx = RungContext(
            target_tokens=target,
            count=count,
            count_message=count_message,
            profile=prof,
            pinned=pinned,
            original=h if aligned else None,
            dry_run=dry_run,
            options=MappingProxyType(
                {**(options or {}), "counter": counter, "bus": bus, "image_policy": image_policy}
            ),
            tokens=tokens,
            history_id=id(cur),
        )
        outcome = rung.apply(cur, ctx)
        events.extend(outcome.events)
        if not dry_run:
            # core's trim announces its own HistoryTrimmed; announce the ladder's, in order
            for ev in outcome.events:
                if not isinstance(ev, HistoryTrimmed):
                    publish(ev, bus)
        if outcome.entry is not None:
            ledger.append(outcome.entry)
        if outcome.history is not cur:
            if len(outcome.history.messages) != len(cur.messages):
                aligned = False
            cur = outcome.history
            entry = outcome.entry
            # every rung's entry carries the estimate of its output; no need to recount
            tokens = entry.tokens_after if entry is not None else count(cur)
            if outcome.pages:
                pages = outcome.pages
    if dry_run:
        return CompactionResult(
            history, tuple(ledger), tuple(events), before, tokens, pages, budget, target, True, h
        )
    if raise_if_over and tokens > target:
        msg = (
            f"cannot compact the history to {target:,} tokens: after "
            f"{', '.join(r.name for r in rungs) or 'no rungs'} it is still {tokens:,} tokens "
            f"(the newest turn and pinned messages are never removed); raise the budget "
            f"or allow more rungs"
        )
        raise ContextOverflowError(msg, estimate=tokens, window=budget, overshoot=tokens - target)
    out = cur if cur is not h else h
    return CompactionResult(
        restore(out),
        tuple(ledger),
        tuple(events),
        before,
        tokens,
        pages,
        budget,
        target,
        False,
        out,
    )


def compact(
    history: Any,
    *,
    profile: Any = "anthropic",
    budget: int | None = None,
    window: int | None = None,
    ratio: float | None = None,
    reserve: int = 0,
    rungs: Sequence[Any] | str | None = None,
    summarizer: Any = None,
    pins: Iterable[Any] = (),
    dry_run: bool = False,
    config: LadderConfig | None = None,
    renderer: Any = None,
    counter: Any = None,
    format: str = "auto",
    bus: Any = None,
    image_policy: str = "all",
) -> CompactionResult:
    """Compact ``history`` under a token budget, cheapest rung first (SPEC §5).

    Give ``budget`` (tokens) or ``window`` (the model's context window, with an
    optional ``ratio``, resolved by SPEC §3.1); ``reserve`` tokens are kept free
    for the reply. ``rungs`` picks and orders rungs (names from ``RUNGS``, or
    objects with ``.apply``); the default is every rung, the summary rung only
    when a ``summarizer`` is given. ``pins`` are messages that every rung keeps.
    Raises :class:`ContextOverflowError` when even the newest turn and the pins do
    not fit (the input is untouched); ``dry_run=True`` returns the plan instead.
    Events (``HistoryTrimmed``, ``SummaryFailed``) go to ``bus`` (default: the
    process-wide bus of :mod:`glyphfold.compaction.history.events`) and into ``.events``;
    a dry run announces nothing.

    ``image_policy="all"`` (the default) prices every image left in the history,
    because the compacted wire history is sent as it is and the provider bills
    every image in it; ``"spec"`` prices images as SPEC §3.4's estimate does (only
    user turns and the newest turn's tool results), for a harness that, like the
    seed's runtime, re-attaches only current tool images.
    """
    if (budget is None) == (window is None):
        msg = "give exactly one of budget= (tokens) or window= (the model's context window)"
        raise InputError(msg)
    if ratio is not None and budget is not None:
        msg = "ratio= applies to window=, not to budget=; drop one of them"
        raise InputError(msg)
    if budget is None:
        from glyphfold.compaction.history.budget import effective_context_budget

        assert window is not None
        if window <= 0:
            msg = f"window must be a positive number of tokens, got {window}"
            raise InputError(msg)
        budget = effective_context_budget(context_window=window, context_compact_ratio=ratio)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
        msg = f"budget must be a positive number of tokens, got {budget!r}"
        raise InputError(msg)
    if not isinstance(reserve, int) or reserve < 0 or reserve >= budget:
        msg = f"reserve must be an int in [0, budget={budget}), got {reserve!r}"
        raise InputError(msg)
    cfg = config or LadderConfig()
    built = _build_rungs(
        rungs, summarizer=summarizer, config=cfg, renderer=renderer, allowed=DEFAULT_RUNGS
    )
    return _run(
        history,
        profile=profile,
        target=budget - reserve,
        budget=budget,
        rungs=built,
        pins=pins,
        dry_run=dry_run,
        counter=counter,
        raise_if_over=True,
        format=format,
        bus=bus,
        image_policy=image_policy,
    )


def recover(
    history: Any,
    *,
    error: Any = None,
    profile: Any = "anthropic",
    allow_summary: bool = False,
    summarizer: Any = None,
    rungs: Sequence[Any] | str | None = None,
    pins: Iterable[Any] = (),
    config: LadderConfig | None = None,
    renderer: Any = None,
    counter: Any = None,
    dry_run: bool = False,
    format: str = "auto",
    bus: Any = None,
    image_policy: str = "all",
) -> CompactionResult:
    """Reactive recovery after a context overflow (SPEC §3.6, §5.1).

    Reduces the history to at most two thirds of its current estimate with the
    model-free rungs (elide, strip, snapshot, trim); the summary rung runs only
    with ``allow_summary=True`` and a ``summarizer``. ``error`` is the provider's
    error (kept in ``events`` for the record). Raises :class:`ContextOverflowError`
    explaining why when the target cannot be reached. ``image_policy`` as for
    :func:`compact`.
    """
    h, restore = coerce(history, format=format)
    prof = _get_profile(profile)
    count, _ = _counters(prof, counter, image_policy)
    estimate = count(h)
    target = math.floor(estimate * RECOVER_RATIO)
    if target <= 0:
        msg = f"history of {estimate} tokens cannot be reduced to two thirds of itself"
        raise ContextOverflowError(msg, estimate=estimate, window=None, overshoot=None)
    allowed = DEFAULT_RUNGS if allow_summary else MODEL_FREE_RUNGS
    if rungs is not None and not allow_summary:
        names = rungs.split(",") if isinstance(rungs, str) else rungs
        if any(n == "summary" or getattr(n, "model_free", True) is False for n in names):
            msg = "recover() uses model-free rungs only; pass allow_summary=True for a summary"
            raise InputError(msg)
    built = _build_rungs(
        rungs,
        summarizer=summarizer if allow_summary else None,
        config=config or LadderConfig(),
        renderer=renderer,
        allowed=allowed,
    )
    events = (OverflowRecovery(error=_error_text(error), estimate=estimate, target=target),)
    return _run(
        history,
        profile=prof,
        target=target,
        budget=target,
        rungs=built,
        pins=pins,
        dry_run=dry_run,
        counter=counter,
        raise_if_over=True,
        extra_events=events,
        format=format,
        bus=bus,
        options={"reactive": True},
        parsed=(h, restore),
        estimate=estimate,
        image_policy=image_policy,
    )


def shake(
    history: Any,
    *,
    profile: Any = "anthropic",
    pins: Iterable[Any] = (),
    config: LadderConfig | None = None,
    counter: Any = None,
    dry_run: bool = False,
    format: str = "auto",
    bus: Any = None,
) -> CompactionResult:
    """Only the free text rungs (elision, image stripping), whatever the budget (``/shake``)."""
    built = _build_rungs(
        ("elide", "strip"),
        summarizer=None,
        config=config or LadderConfig(),
        renderer=None,
        allowed=("elide", "strip"),
    )
    # target 0: every free rung runs; nothing is dropped, so there is nothing to raise
    return _run(
        history,
        profile=profile,
        target=0,
        budget=0,
        rungs=built,
        pins=pins,
        dry_run=dry_run,
        counter=counter,
        raise_if_over=False,
        format=format,
        bus=bus,
    )


@dataclass(frozen=True, slots=True)
class OverflowRecovery:
    """Event: a reactive recovery started (the provider's error, the numbers)."""

    error: str | None
    estimate: int
    target: int


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, Mapping):
        return str(dict(error))[:2000]
    return str(error)[:2000]


def provider_messages(history: Any) -> Any:
    """The history as a provider accepts it: ``x_glyphfold`` keys removed, same kind.

    Compaction output keeps snapshot sources under ``x_glyphfold`` so the next pass
    can re-render from text (SPEC §5.3); providers reject unknown keys, so strip
    them right before sending.
    """
    if isinstance(history, History):
        return history.replace_messages([_strip_message(m) for m in history.messages])
    wire = history
    if isinstance(wire, Mapping):
        out = {k: v for k, v in wire.items() if k != X_KEY}
        out["messages"] = [_strip_dict(m) for m in wire["messages"]]
        return out
    if isinstance(wire, list):
        return [_strip_dict(m) for m in wire]
    msg = f"history must be a list, a dict or a History, got {type(history).__name__}"
    raise InputError(msg)


def _strip_dict(m: Any) -> Any:
    if isinstance(m, Mapping) and X_KEY in m:
        return {k: v for k, v in m.items() if k != X_KEY}
    return m


def _strip_message(m: Message) -> Message:
    if m.raw is None or X_KEY not in m.raw:
        return m
    raw = {k: v for k, v in m.raw.items() if k != X_KEY}
    return Message(m.role, m.blocks, raw=MappingProxyType(raw), meta=m.meta)


def to_json_history(history: History) -> Any:
    """Wire form of a canonical history (keeps ``x_glyphfold`` for the next pass)."""
    return copy.deepcopy(to_wire(history))
