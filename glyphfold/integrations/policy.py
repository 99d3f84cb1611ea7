"""When and how far an adapter compacts: the options every framework adapter shares.

An adapter prices the request it is about to send (a
:class:`~glyphfold.compaction.history.counters.RequestCounter`: the estimate by
default, a provider's count-tokens endpoint on demand) and, when it passes
``trigger`` tokens, compacts the history to ``budget`` with :func:`glyphfold.compact`
(or :func:`glyphfold.acompact` from async hooks, so the event loop never blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import glyphfold
from glyphfold.checks import check_int
from glyphfold.compaction.history.counters import EstimateRequestCounter, RequestCounter
from glyphfold.compaction.history.model import History
from glyphfold.errors import InputError

__all__ = ["CompactionPolicy"]


class CompactionPolicy:
    """Budget, trigger, pricing and the ladder's options, validated once.

    ``budget`` is the target in tokens (or give ``window`` and an optional ``ratio``,
    resolved as :func:`glyphfold.effective_context_budget` does); ``trigger`` is
    the size at which compaction starts (default: the budget). ``counter`` prices
    the request (default: the estimate under ``profile``). ``on_compact`` receives
    every :class:`~glyphfold.CompactionResult`. Other keyword options go to
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
        if (budget is None) == (window is None):
            msg = "give exactly one of budget= (tokens) or window= (the model's context window)"
            raise InputError(msg)
        if window is not None:
            budget = glyphfold.effective_context_budget(
                context_window=window, context_compact_ratio=ratio
            )
        elif ratio is not None:
            msg = "ratio= applies to window=, not to budget=; drop one of them"
            raise InputError(msg)
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
        self.budget = budget
        self.trigger = budget if trigger is None else trigger
        self.profile = profile
        self.counter = counter or EstimateRequestCounter(profile=profile)
        self.on_compact = on_compact
        self.options = compact_options

    def over(self, history: Any, tools: Sequence[Any] | None = None) -> bool:
        """True when the request (history + tools) passes the trigger."""
        return self.counter.count_request(history, tools=tools or None) > self.trigger

    def _done(self, result: Any) -> Any:
        if self.on_compact is not None:
            self.on_compact(result)
        return result

    def compact(self, history: History | Any) -> Any:
        """Compact to the budget; the CompactionResult."""
        result = glyphfold.compact(
            history, budget=self.budget, profile=self.profile, **self.options
        )
        return self._done(result)

    async def acompact(self, history: History | Any) -> Any:
        """:meth:`compact` in a worker thread."""
        result = await glyphfold.acompact(
            history, budget=self.budget, profile=self.profile, **self.options
        )
        return self._done(result)
