"""When and how far an adapter compacts: the options every framework adapter shares.

An adapter hands the history it is about to send to the conversation's
:class:`~glyphfold.Compactor` (SPEC §5.10): it prices the request (a
:class:`~glyphfold.compaction.history.counters.RequestCounter`: the estimate by
default, a provider's count-tokens endpoint on demand, tool schemas included) and,
when it passes ``trigger`` tokens, compacts it to ``budget``; between compactions it
sends the previous compacted history byte for byte plus the new messages, so the
provider's prompt cache keeps hitting. ``budget`` is a target; ``window`` (the model's
context window) the hard limit: a single result over the budget but inside the window
goes through, compacted as far as the floor allows. Async hooks run the ladder in a
worker thread, so the event loop never blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import glyphfold
from glyphfold.checks import check_int
from glyphfold.compaction.history.counters import EstimateRequestCounter, RequestCounter
from glyphfold.compaction.history.model import History
from glyphfold.compaction.ladder.compactor import DEFAULT_LOW_WATERMARK, Compactor, Fitted
from glyphfold.errors import InputError

__all__ = ["CompactionPolicy"]


class CompactionPolicy:
    """Budget, trigger, pricing and the ladder's options, validated once; one compactor.

    ``budget`` is the target in tokens; ``window`` the model's context window, the hard
    limit (give either or both; ``window`` alone sets the budget as
    :func:`glyphfold.effective_context_budget` does, with ``ratio``). ``trigger`` is the
    size at which compaction starts (default: the budget, which is then compacted to
    ``low`` times itself, :data:`glyphfold.compaction.ladder.compactor.DEFAULT_LOW_WATERMARK`;
    with a trigger, to the budget). ``counter`` prices the request (default: the
    estimate under ``profile``). ``on_compact`` receives every
    :class:`~glyphfold.CompactionResult`. Other keyword options go to
    :func:`glyphfold.compact` (``rungs``, ``summarizer``, ``config``, ``pins``...).
    """

    def __init__(
        self,
        budget: int | None = None,
        *,
        window: int | None = None,
        ratio: float | None = None,
        trigger: int | None = None,
        profile: Any = "anthropic",
        counter: RequestCounter | None = None,
        on_compact: Callable[[Any], None] | None = None,
        **compact_options: Any,
    ) -> None:
        if budget is None and window is None:
            msg = "give budget= (tokens) or window= (the model's context window), or both"
            raise InputError(msg)
        if ratio is not None and budget is not None:
            msg = "ratio= applies to window=, not to budget=; drop one of them"
            raise InputError(msg)
        if budget is None:
            budget = glyphfold.effective_context_budget(
                context_window=check_int("window", window, minimum=1, unit="tokens"),
                context_compact_ratio=ratio,
            )
        budget = check_int("budget", budget, minimum=1, unit="tokens")
        if trigger is not None and (not isinstance(trigger, int) or trigger < budget):
            msg = f"trigger must be an int >= budget ({budget}), got {trigger!r}"
            raise InputError(msg)
        if counter is not None and not isinstance(counter, RequestCounter):
            msg = f"counter must have count_request(history, tools=...), got {counter!r}"
            raise InputError(msg)
        glyphfold.get_profile(profile)  # an unknown profile fails here, not mid-run
        for bad in ("budget", "window", "ratio", "dry_run", "format"):
            if bad in compact_options:
                msg = f"{bad}= cannot be passed through to compact() here"
                raise InputError(msg)
        low = compact_options.pop("low", None)
        self.budget = budget
        self.trigger = budget if trigger is None else trigger
        self.window = window
        self.profile = profile
        self.counter = counter or EstimateRequestCounter(profile=profile)
        self.on_compact = on_compact
        self.options = compact_options
        if low is None:
            low = budget / trigger if trigger is not None else DEFAULT_LOW_WATERMARK
        self.compactor = Compactor(
            self.trigger,
            window=window if window is not None and window > self.trigger else None,
            low=low,
            profile=profile,
            counter=self.counter,
            **compact_options,
        )

    def over(self, history: Any, tools: Sequence[Any] | None = None) -> bool:
        """True when the request (history + tools), as the compactor would send it, passes
        the trigger (the public trigger: :meth:`glyphfold.Compactor.needs_compaction`)."""
        return self.compactor.needs_compaction(history, tools=tools)

    def _done(self, fitted: Fitted[Any]) -> Fitted[Any]:
        if self.on_compact is not None and fitted.result is not None:
            self.on_compact(fitted.result)
        return fitted

    def fit(self, history: History | Any, tools: Sequence[Any] | None = None) -> Fitted[Any]:
        """What to send for ``history``: the compactor's answer (none/hit/append/compact)."""
        return self._done(self.compactor(history, tools=tools))

    async def afit(self, history: History | Any, tools: Sequence[Any] | None = None) -> Any:
        """:meth:`fit` in a worker thread."""
        return self._done(await self.compactor.afit(history, tools=tools))

    def compact(self, history: History | Any) -> Any:
        """Compact to the budget now, whatever the trigger says; the CompactionResult."""
        result = glyphfold.compact(
            history, budget=self.budget, profile=self.profile, **self.options
        )
        if self.on_compact is not None:
            self.on_compact(result)
        return result
