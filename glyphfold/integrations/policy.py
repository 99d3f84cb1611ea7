"""When and how far an adapter compacts: the options every framework adapter shares.

An adapter hands the history it is about to send to the conversation's
:class:`~glyphfold.Compactor` (SPEC §5.10, issue 19): it prices the request (a
:class:`~glyphfold.compaction.history.counters.RequestCounter`: the estimate by
default, a provider's count-tokens endpoint on demand), tool schemas included, and,
past the trigger, compacts it to a lower target (hysteresis); between compactions it
sends the previous compacted history byte for byte plus the new messages, so the
provider's prompt cache keeps hitting. ``budget`` is a target; ``window`` (the model's
context window) the hard limit: a single result over the budget but inside the window
goes through, compacted as far as the floor allows. Async hooks run the ladder in a
worker thread, so the event loop never blocks.

The options are one closed ``TypedDict`` (:class:`AdapterOptions`): a type checker
rejects a misspelt option at the call, and :class:`CompactionPolicy` rejects it at
construction, naming the closest valid option, never 20 steps later inside the run.
"""

from __future__ import annotations

import difflib
import json
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import glyphfold
from glyphfold.checks import check_int
from glyphfold.compaction.history.counters import EstimateRequestCounter, RequestCounter
from glyphfold.compaction.history.model import History
from glyphfold.compaction.ladder.compactor import DEFAULT_LOW_WATERMARK, Compactor, Fitted
from glyphfold.compaction.ladder.registry import focus_problem
from glyphfold.errors import InputError
from glyphfold.integrations.model_profile import profile_for_model

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.compaction.history.events import EventBus
    from glyphfold.compaction.ladder.loop import Pin
    from glyphfold.compaction.ladder.registry import LadderConfig
    from glyphfold.compaction.ladder.result import CompactionResult
    from glyphfold.compaction.ladder.rungs.base import Rung
    from glyphfold.compaction.ladder.summarizers import Summarizer
    from glyphfold.render.profiles import Profile

__all__ = ["FALLBACK_PROFILE", "AdapterOptions", "CompactionPolicy"]

FALLBACK_PROFILE = "anthropic"


class AdapterOptions(TypedDict, total=False):
    """Every keyword an adapter takes besides ``budget`` (docs/integrations.md)."""

    window: int  # the model's context window: the hard limit (alone: sets the budget)
    ratio: float  # with window alone
    trigger: int  # compaction starts past this size (default: the budget)
    low: float  # no trigger: a compaction brings the history to low * budget (default 0.4)
    profile: str | Profile  # default: taken from the model the framework calls
    counter: RequestCounter  # prices the request (default: the estimate)
    on_compact: Callable[[CompactionResult[Any]], object]
    # glyphfold.compact's own options
    rungs: Sequence[str | Rung] | str
    summarizer: Summarizer
    focus: str  # what matters: in the snapshots' reading guide and the summary prompt
    pins: Iterable[Pin]
    config: LadderConfig
    reserve: int
    image_policy: str
    bus: EventBus


OPTION_NAMES = frozenset(AdapterOptions.__optional_keys__)
_COMPACT_OPTIONS = (
    "rungs",
    "summarizer",
    "focus",
    "pins",
    "config",
    "reserve",
    "image_policy",
    "bus",
)
_NOT_HERE = {
    "dry_run": "an adapter always compacts; call glyphfold.compact(dry_run=True) to plan",
    "format": "the adapter knows its framework's format",
}


def check_option_names(options: Iterable[str], where: str = "adapter") -> None:
    """Raise InputError naming an unknown option and the closest valid one."""
    for name in options:
        if name in OPTION_NAMES:
            continue
        if name in _NOT_HERE:
            msg = f"{name}= cannot be passed to a glyphfold {where}: {_NOT_HERE[name]}"
            raise InputError(msg)
        close = difflib.get_close_matches(name, sorted(OPTION_NAMES | {"budget"}), n=1)
        hint = f"; did you mean {close[0]}=?" if close else ""
        msg = (
            f"unknown option {name}= for a glyphfold {where}{hint} "
            f"(valid: budget, {', '.join(sorted(OPTION_NAMES))})"
        )
        raise InputError(msg)


class CompactionPolicy:
    """Budget, trigger, pricing and the ladder's options, validated once.

    ``budget`` is the target in tokens; ``window`` the model's context window, the hard
    limit (give either or both; ``window`` alone sets the budget as
    :func:`glyphfold.effective_context_budget` does, with ``ratio``). ``trigger`` is the
    size at which compaction starts (default: the budget, which is then compacted to
    ``low`` times itself, :data:`~glyphfold.compaction.ladder.compactor.DEFAULT_LOW_WATERMARK`;
    with a trigger, to the budget). :meth:`compactor_for` gives the conversation's
    :class:`~glyphfold.Compactor` for a profile; :meth:`fit` / :meth:`afit` use it.
    ``counter`` prices the request (default: the estimate under the profile).
    ``profile`` is the provider profile; None takes it from the model the framework
    is about to call
    (:func:`~glyphfold.integrations.model_profile.profile_for_model`), falling back to
    ``default_profile`` with a warning. ``on_compact`` receives every
    :class:`~glyphfold.CompactionResult`. The other options go to
    :func:`glyphfold.compact`. An unknown option raises :class:`InputError` here.
    """

    def __init__(
        self,
        budget: int | None = None,
        *,
        default_profile: str | None = None,
        **options: Unpack[AdapterOptions],
    ) -> None:
        check_option_names(options)
        window = options.get("window")
        ratio = options.get("ratio")
        trigger = options.get("trigger")
        counter = options.get("counter")
        profile = options.get("profile")
        if budget is None and window is None:
            msg = "give budget= (tokens) or window= (the model's context window), or both"
            raise InputError(msg)
        if ratio is not None and budget is not None:
            msg = "ratio= applies to window= alone, not with budget=; drop one of them"
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
        if profile is not None:
            glyphfold.get_profile(profile)  # an unknown profile fails here, not mid-run
        problem = focus_problem(
            options.get("focus"), options.get("rungs"), options.get("summarizer")
        )
        if problem is not None:
            raise InputError(problem)
        on_compact = options.get("on_compact")
        if on_compact is not None and not callable(on_compact):
            msg = f"on_compact must be callable (given each CompactionResult), got {on_compact!r}"
            raise InputError(msg)
        low = options.get("low")
        if low is not None and trigger is not None:
            msg = "low= applies without trigger= (a trigger compacts to the budget); drop one"
            raise InputError(msg)
        self.budget = budget
        self.trigger = budget if trigger is None else trigger
        self.window = window
        self.low = (
            (budget / trigger if trigger is not None else DEFAULT_LOW_WATERMARK)
            if low is None
            else low
        )
        self._compactors: dict[Any, Compactor] = {}
        self.profile: Any = profile
        self.default_profile = default_profile
        self._counter = counter
        self._counters: dict[Any, RequestCounter] = {}
        self._warned: set[str] = set()
        self.on_compact = on_compact
        self.options: dict[str, Any] = {k: options[k] for k in _COMPACT_OPTIONS if k in options}  # type: ignore[literal-required]

    # ------------------------------------------------------------------ the profile

    def resolve_profile(self, model: Any = None) -> Any:
        """The profile for a call to ``model``: the explicit one, the model's, or the fallback."""
        if self.profile is not None:
            return self.profile
        found = profile_for_model(model) if model is not None else None
        if found is not None:
            return found
        if self.default_profile is not None:  # the adapter's documented default
            return self.default_profile
        fallback = FALLBACK_PROFILE
        if model is not None:
            key = f"{type(model).__module__}.{type(model).__qualname__}"
            if key not in self._warned:
                self._warned.add(key)
                warnings.warn(
                    f"glyphfold: cannot tell the provider of {describe(model)}; pricing and "
                    f"shaping pages as {fallback!r} (pass profile= to choose)",
                    stacklevel=3,
                )
        return fallback

    def counter_for(self, profile: Any) -> RequestCounter:
        if self._counter is not None:
            return self._counter
        key = profile if isinstance(profile, str) else id(profile)
        c = self._counters.get(key)
        if c is None:
            c = self._counters[key] = EstimateRequestCounter(profile=profile)
        return c

    # ------------------------------------------------------------------ deciding, compacting

    def over(
        self, history: Any, tools: Sequence[Any] | None = None, *, profile: Any = None
    ) -> bool:
        """True when the request (history + tool schemas) passes the trigger."""
        prof = self.resolve_profile() if profile is None else profile
        return self.counter_for(prof).count_request(history, tools=tools or None) > self.trigger

    def compactor_for(self, profile: Any) -> Compactor:
        """The conversation's compactor under ``profile`` (one per profile, kept)."""
        key = profile if isinstance(profile, str) else id(profile)
        c = self._compactors.get(key)
        if c is None:
            c = self._compactors[key] = self.new_compactor(profile)
        return c

    def new_compactor(self, profile: Any) -> Compactor:
        """A fresh :class:`~glyphfold.Compactor` with these options (fires at the trigger)."""
        window = self.window if self.window is not None and self.window > self.trigger else None
        return Compactor(
            self.trigger,
            window=window,
            low=self.low,
            profile=profile,
            counter=self.counter_for(profile),
            **self.options,
        )

    def _fitted(self, fitted: Fitted[Any]) -> Fitted[Any]:
        if self.on_compact is not None and fitted.result is not None:
            self.on_compact(fitted.result)
        return fitted

    def fit(
        self,
        history: Any,
        *,
        profile: Any = None,
        tools: Sequence[Any] | None = None,
        compactor: Compactor | None = None,
    ) -> Fitted[Any]:
        """What to send for ``history``: the compactor's answer (none/hit/append/compact)."""
        prof = self.resolve_profile() if profile is None else profile
        c = self.compactor_for(prof) if compactor is None else compactor
        return self._fitted(c(history, tools=tools or None))

    async def afit(
        self,
        history: Any,
        *,
        profile: Any = None,
        tools: Sequence[Any] | None = None,
        compactor: Compactor | None = None,
    ) -> Fitted[Any]:
        """:meth:`fit` in a worker thread."""
        prof = self.resolve_profile() if profile is None else profile
        c = self.compactor_for(prof) if compactor is None else compactor
        return self._fitted(await c.afit(history, tools=tools or None))

    def _done(self, result: Any) -> Any:
        if self.on_compact is not None:
            self.on_compact(result)
        return result

    def _compact_args(self, profile: Any, tools: Sequence[Any] | None) -> dict[str, Any]:
        """compact()'s arguments: the tool schemas' tokens are kept free, like ``reserve``."""
        args = dict(self.options)
        args["profile"] = self.resolve_profile() if profile is None else profile
        if tools:
            reserve = args.get("reserve", 0) + tool_tokens(tools)
            if reserve >= self.budget:
                msg = (
                    f"the tool schemas alone take {tool_tokens(tools):,} tokens of the "
                    f"{self.budget:,}-token budget; raise the budget or send fewer tools"
                )
                raise InputError(msg)
            args["reserve"] = reserve
        return args

    def compact(
        self, history: History | Any, *, profile: Any = None, tools: Sequence[Any] | None = None
    ) -> Any:
        """Compact to the budget (less the tool schemas' tokens); the CompactionResult."""
        args = self._compact_args(profile, tools)
        return self._done(glyphfold.compact(history, budget=self.budget, **args))

    async def acompact(
        self, history: History | Any, *, profile: Any = None, tools: Sequence[Any] | None = None
    ) -> Any:
        """:meth:`compact` in a worker thread."""
        args = self._compact_args(profile, tools)
        return self._done(await glyphfold.acompact(history, budget=self.budget, **args))


def tool_tokens(tools: Sequence[Any]) -> int:
    """The estimate of tool schemas (their JSON at ~4 characters a token, docs/budget.md)."""
    text = json.dumps(list(tools), ensure_ascii=False, sort_keys=True, default=str)
    return -(-len(text) // 4)


def describe(model: Any) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    kind = type(model).__name__
    return f"{kind} {name!r}" if isinstance(name, str) else kind
