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
- still over budget after every rung (the head, the newest real user message, the
  tail or pinned steps alone are too big) -> ``ContextOverflowError`` with the
  estimate, the budget and the overshoot; a dry run reports ``fits=False`` instead.

The rungs and the budget rules they apply are described in ``docs/ladder.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.budget import effective_context_budget, recovery_target
from glyphfold.compaction.history.events import EventBus, OverflowRecovery
from glyphfold.compaction.history.messages import FormatArg, HistoryT, coerce, plain_format
from glyphfold.compaction.history.model import OPENAI
from glyphfold.compaction.history.tokens import DEFAULT_IMAGE_POLICY, ImagePolicy, TokenCounter
from glyphfold.compaction.ladder.gc_pause import gc_paused, model_free
from glyphfold.compaction.ladder.loop import (
    LadderRun,
    Pin,
    counters,
    minimal_tokens,
    resolve_pins,
    run_ladder,
)
from glyphfold.compaction.ladder.observe import observed
from glyphfold.compaction.ladder.registry import (
    DEFAULT_RUNGS,
    MODEL_FREE_RUNGS,
    RUNGS,
    LadderConfig,
    build_rungs,
    rung_names,
)
from glyphfold.compaction.ladder.result import CompactionResult
from glyphfold.compaction.ladder.rungs.base import Rung
from glyphfold.compaction.ladder.rungs.common import tool_names
from glyphfold.compaction.ladder.rungs.elide import ElideConfig
from glyphfold.compaction.ladder.rungs.snapshot import Renderer, Snapshot
from glyphfold.compaction.ladder.rungs.summary import Summary
from glyphfold.compaction.ladder.rungs.transcribe import serialise
from glyphfold.compaction.ladder.summarizers import Summarizer, check_focus
from glyphfold.compaction.ladder.transcript import TranscriptConfig
from glyphfold.errors import ContextOverflowError, InputError
from glyphfold.render.profiles import Profile, get_profile

__all__ = ["compact", "floor_tokens", "recover", "shake", "transcript_of"]


def _ladder_run(
    cfg: LadderConfig,
    built: Sequence[Rung],
    *,
    target: int,
    budget: int,
    profile: Profile,
    pins: Iterable[Pin],
    dry_run: bool,
    counter: TokenCounter | None,
    bus: EventBus | None,
    image_policy: ImagePolicy = DEFAULT_IMAGE_POLICY,
    extra_events: tuple[object, ...] = (),
    reactive: bool = False,
    raise_if_over: bool = True,
    min_saving_tokens: int | None = None,
) -> LadderRun:
    """The one place compact, recover and shake make their run: the call's numbers and
    the configuration's shared ones (the tail allowance, the minimum saving, frozen blocks)."""
    return LadderRun(
        rungs=tuple(built),
        target=target,
        budget=budget,
        profile=profile,
        pins=pins,
        dry_run=dry_run,
        counter=counter,
        raise_if_over=raise_if_over,
        extra_events=extra_events,
        reactive=reactive,
        bus=bus,
        image_policy=image_policy,
        tail_tokens=cfg.tail_tokens,
        min_saving_tokens=cfg.min_saving_tokens if min_saving_tokens is None else min_saving_tokens,
        freeze_blocks=cfg.freeze_blocks,
    )


def compact(
    history: HistoryT,
    *,
    profile: str | Profile = "anthropic",
    budget: int | None = None,
    window: int | None = None,
    ratio: float | None = None,
    reserve: int = 0,
    rungs: Sequence[str | Rung] | str | None = None,
    summarizer: Summarizer | None = None,
    pins: Iterable[Pin] = (),
    dry_run: bool = False,
    config: LadderConfig | None = None,
    renderer: Renderer | None = None,
    counter: TokenCounter | None = None,
    format: FormatArg = "auto",
    bus: EventBus | None = None,
    image_policy: ImagePolicy = DEFAULT_IMAGE_POLICY,
    focus: str | None = None,
) -> CompactionResult[HistoryT]:
    """Compact ``history`` under a token budget, cheapest rung first (docs/ladder.md).

    Give ``budget`` (tokens) or ``window`` (the model's context window, with an
    optional ``ratio``, resolved by docs/budget.md); ``reserve`` tokens are kept free
    for the reply. ``rungs`` picks and orders rungs (names from ``RUNGS``, or
    objects with ``.apply``); the default is every rung, the summary rung only
    when a ``summarizer`` is given: any callable ``text -> str`` (sync or async) is
    one, e.g. ``lambda text: my_model(text)``, or the SDK adapters of
    :mod:`glyphfold.compaction.ladder.summarizers`. ``focus`` is the user's
    instruction of what matters ("the failing test and its fix"): it is written in
    each snapshot's reading guide (the pages keep every word; the guide tells the
    model what to look for in them), heads every summarizer request and is written in
    the summary's preamble. It needs the snapshot or the summary rung: elision and
    trim keep every word or drop whole steps, so a ladder of only those would ignore
    it, and an ignored instruction would mislead (an :class:`InputError`).
    ``pins`` are messages that every rung keeps.
    Raises :class:`ContextOverflowError` when even the newest turn and the pins do
    not fit (the input is untouched); ``dry_run=True`` returns the plan instead.
    Events (``HistoryTrimmed``, ``SummaryFailed``) go to ``bus`` (default: the
    process-wide bus of :mod:`glyphfold.compaction.history.events`) and into ``.events``;
    a dry run announces nothing.

    ``image_policy="all"`` (the default) prices every image left in the history,
    because the compacted wire history is sent as it is and the provider bills
    every image in it; ``"spec"`` prices images as the estimate of docs/budget.md does (only
    user turns and the newest turn's tool results), for a harness that, like the
    seed's runtime, re-attaches only current tool images.
    """
    if (budget is None) == (window is None):
        msg = "give exactly one of budget= (tokens) or window= (the model's context window)"
        raise InputError(msg)
    if ratio is not None and budget is not None:
        msg = "ratio= applies to window=, not to budget=; drop one of them"
        raise InputError(msg)
    if window is not None:
        check_int("window", window, minimum=1, unit="tokens")
        budget = effective_context_budget(context_window=window, context_compact_ratio=ratio)
    budget = check_int("budget", budget, minimum=1, unit="tokens")
    check_int("reserve", reserve, minimum=0, maximum=budget - 1, unit="tokens")
    cfg = config or LadderConfig()
    focus = check_focus(focus)
    built = build_rungs(
        rungs,
        config=cfg,
        allowed=DEFAULT_RUNGS,
        summarizer=summarizer,
        renderer=renderer,
        focus=focus,
    )
    if focus is not None and not any(isinstance(r, (Summary, Snapshot)) for r in built):
        msg = (
            "focus= is written in the snapshots' reading guide and tells the summary rung "
            "what to keep, and this ladder has neither: keep 'snapshot' in rungs=, or pass "
            "summarizer=... (any callable text -> str) with 'summary' in rungs=, or drop focus="
        )
        raise InputError(msg)
    prof = get_profile(profile)
    run = _ladder_run(
        cfg,
        built,
        target=budget - reserve,
        budget=budget,
        profile=prof,
        pins=pins,
        dry_run=dry_run,
        counter=counter,
        bus=bus,
        image_policy=image_policy,
    )
    with gc_paused(model_free(built)):  # the parse and the rungs: 10^5s of new objects
        return _parse_and_run("compact", history, run, format=format, plain=plain_format(prof))


def recover(
    history: HistoryT,
    *,
    error: Any = None,
    profile: str | Profile = "anthropic",
    allow_summary: bool = False,
    summarizer: Summarizer | None = None,
    rungs: Sequence[str | Rung] | str | None = None,
    pins: Iterable[Pin] = (),
    config: LadderConfig | None = None,
    renderer: Renderer | None = None,
    counter: TokenCounter | None = None,
    dry_run: bool = False,
    format: FormatArg = "auto",
    bus: EventBus | None = None,
    image_policy: ImagePolicy = DEFAULT_IMAGE_POLICY,
) -> CompactionResult[HistoryT]:
    """Reactive recovery after a context overflow (docs/budget.md).

    Reduces the history to at most two thirds of its current estimate with the
    model-free rungs (elide, strip, snapshot, trim); the summary rung runs only
    with ``allow_summary=True`` and a ``summarizer``. ``error`` is the provider's
    error (kept in ``events`` for the record). Raises :class:`ContextOverflowError`
    explaining why when the target cannot be reached. ``image_policy`` as for
    :func:`compact`.
    """
    prof = get_profile(profile)
    allowed = DEFAULT_RUNGS if allow_summary else MODEL_FREE_RUNGS
    if rungs is not None and not allow_summary:
        for r in rung_names(rungs):
            spec = RUNGS.get(r) if isinstance(r, str) else None
            if (spec is not None and not spec.model_free) or getattr(
                r, "model_free", True
            ) is False:
                msg = "recover() uses model-free rungs only; pass allow_summary=True for a summary"
                raise InputError(msg)
    cfg = config or LadderConfig()
    built = build_rungs(
        rungs,
        config=cfg,
        allowed=allowed,
        summarizer=summarizer if allow_summary else None,
        renderer=renderer,
    )

    def parsed_run() -> CompactionResult[HistoryT]:
        # a function of its own: the parsed history dies with its frame, before the
        # collector resumes (it would walk the 10^5s of objects once more)
        h, restore = coerce(history, format=format, plain=plain_format(prof))
        estimate = counters(prof, counter, image_policy).count(h)
        target = recovery_target(estimate)
        if target <= 0:
            msg = f"history of {estimate} tokens cannot be reduced to two thirds of itself"
            raise ContextOverflowError(msg, estimate=estimate, window=None, overshoot=None)
        run = _ladder_run(
            cfg,
            built,
            target=target,
            budget=target,
            profile=prof,
            pins=pins,
            dry_run=dry_run,
            counter=counter,
            bus=bus,
            image_policy=image_policy,
            extra_events=(
                OverflowRecovery(error=_error_text(error), estimate=estimate, target=target),
            ),
            reactive=True,
        )
        return observed(
            "recover",
            lambda: run_ladder(h, restore, run, estimate=estimate),
            dry_run=dry_run,
            bus=bus,
        )

    with gc_paused(model_free(built)):  # the parse and the rungs: 10^5s of new objects
        return parsed_run()


def shake(
    history: HistoryT,
    *,
    profile: str | Profile = "anthropic",
    pins: Iterable[Pin] = (),
    config: LadderConfig | None = None,
    counter: TokenCounter | None = None,
    dry_run: bool = False,
    format: FormatArg = "auto",
    bus: EventBus | None = None,
) -> CompactionResult[HistoryT]:
    """Only the free text rungs (elision, image stripping), whatever the budget (``/shake``).

    Everything the rules allow goes, outside the head and the tail
    (``LadderConfig.tail_tokens``): old tool results and long tool-call arguments
    become stubs, earlier turns' thinking is cleared, old images become placeholders.
    ``min_saving_tokens`` does not apply: the user asked for it. For the same reason
    the default elision rule is the wide one (``ElideConfig(policy="unremarkable")``:
    every old result with no notable event), not the budget-driven rule of docs/spec.md §5.8
    that ``compact`` uses; pass ``config`` to choose.
    """
    cfg = config or LadderConfig(elide=ElideConfig(policy="unremarkable"))
    built = build_rungs(("elide", "strip"), config=cfg, allowed=("elide", "strip"))
    # target 0: every free rung runs; nothing is dropped, so there is nothing to raise
    run = _ladder_run(
        cfg,
        built,
        target=0,
        budget=0,
        profile=get_profile(profile),
        pins=pins,
        dry_run=dry_run,
        counter=counter,
        bus=bus,
        raise_if_over=False,
        min_saving_tokens=0,  # the user asked for it: every saving counts
    )
    with gc_paused():  # the parse and the rungs: 10^5s of new objects
        return _parse_and_run("shake", history, run, format=format, plain=plain_format(profile))


def _parse_and_run(
    kind: str, history: Any, run: LadderRun, *, format: FormatArg, plain: str | None
) -> CompactionResult[Any]:
    """Parse ``history`` and run the ladder on it, announced as ``kind``.

    A function of its own: the parsed history dies with its frame, before a paused
    collector resumes (it would walk those 10^5s of objects once more).
    """
    h, restore = coerce(history, format=format, plain=plain)
    return observed(kind, lambda: run_ladder(h, restore, run), dry_run=run.dry_run, bus=run.bus)


def transcript_of(history: Any, *, format: FormatArg = "auto") -> str:
    """The transcript the snapshot rung would image if the whole of ``history`` were the
    middle (role marks, calls, results capped per result, image placeholders)."""
    h, _ = coerce(history, format=format, plain=OPENAI)  # plain text: the same transcript
    text, _spans = serialise(list(enumerate(h.messages)), tool_names(h), TranscriptConfig())
    return text


def floor_tokens(
    history: HistoryT,
    *,
    profile: str | Profile = "anthropic",
    pins: Iterable[Pin] = (),
    counter: TokenCounter | None = None,
    format: FormatArg = "auto",
    image_policy: ImagePolicy = DEFAULT_IMAGE_POLICY,
) -> int:
    """The fewest tokens model-free compaction can bring ``history`` to (docs/spec.md §5.7).

    The head, the newest real user message, the newest step and pinned steps, with
    the breadcrumbs that mark where the rest was dropped. ``recover()`` reaches two
    thirds of the estimate whenever this fits in it; ``compact()`` reaches any budget
    at or above it.
    """
    h, _ = coerce(history, format=format, plain=plain_format(profile))
    price = counters(get_profile(profile), counter, image_policy)
    return minimal_tokens(h, price, resolve_pins(h, pins))


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, Mapping):
        return str(dict(error))[:2000]
    return str(error)[:2000]
