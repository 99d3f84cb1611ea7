"""The options of the adapters built on :class:`glyphfold.Compactor` (smolagents, LlamaIndex).

One conversation, one compactor: it compacts once past ``budget`` (to ``low * budget``)
and then appends, so the pages a provider cached stay put (SPEC §5.10). The options are
a closed ``TypedDict``: a type checker rejects a misspelt one, and :func:`make_compactor`
rejects it at construction, naming the closest valid option.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from glyphfold.compaction.ladder.compactor import Compactor, Fitted
from glyphfold.errors import InputError
from glyphfold.integrations.model_profile import profile_for_model
from glyphfold.integrations.policy import FALLBACK_PROFILE, describe

if TYPE_CHECKING:
    from glyphfold.compaction.history.counters import RequestCounter
    from glyphfold.compaction.history.events import EventBus
    from glyphfold.compaction.ladder.loop import Pin
    from glyphfold.compaction.ladder.registry import LadderConfig
    from glyphfold.compaction.ladder.result import CompactionResult
    from glyphfold.compaction.ladder.rungs.base import Rung
    from glyphfold.compaction.ladder.summarizers import Summarizer
    from glyphfold.render.profiles import Profile

__all__ = ["LoopOptions", "make_compactor"]


class LoopOptions(TypedDict, total=False):
    """Every keyword of a Compactor-based adapter besides ``budget`` (docs/integrations.md)."""

    window: int  # the model's context window: the hard limit
    ratio: float  # with window alone: the budget as effective_context_budget resolves it
    low: float  # a compaction brings the history to low * budget (default 0.4)
    reserve: int  # tokens of the window kept for the reply
    profile: str | Profile  # default: the model's
    counter: RequestCounter
    on_compact: Callable[[CompactionResult[Any]], object]
    rungs: Sequence[str | Rung] | str
    summarizer: Summarizer
    focus: str  # what matters: in the snapshots' reading guide and the summary prompt
    pins: Iterable[Pin]
    config: LadderConfig
    image_policy: str
    bus: EventBus


_NAMES = frozenset(LoopOptions.__optional_keys__)


def make_compactor(
    budget: int | None, model: Any, options: LoopOptions, where: str
) -> tuple[Compactor, Callable[[Fitted[Any]], None]]:
    """The conversation's Compactor (profile from ``model``) and what to call with each Fitted."""
    for name in options:
        if name not in _NAMES:
            close = difflib.get_close_matches(name, sorted(_NAMES | {"budget"}), n=1)
            hint = f"; did you mean {close[0]}=?" if close else ""
            msg = (
                f"unknown option {name}= for {where}{hint} "
                f"(valid: budget, {', '.join(sorted(_NAMES))})"
            )
            raise InputError(msg)
    opts: dict[str, Any] = dict(options)
    on_compact = opts.pop("on_compact", None)
    if on_compact is not None and not callable(on_compact):
        msg = f"on_compact must be callable (given each CompactionResult), got {on_compact!r}"
        raise InputError(msg)
    if opts.get("profile") is None:
        opts["profile"] = profile_of(model)
    compactor = Compactor(budget, **opts)

    def done(fitted: Fitted[Any]) -> None:
        if on_compact is not None and fitted.result is not None:
            on_compact(fitted.result)

    return compactor, done


def profile_of(model: Any) -> str:
    """The model's profile, or the fallback with a warning."""
    import warnings

    found = profile_for_model(model) if model is not None else None
    if found is not None:
        return found
    warnings.warn(
        f"glyphfold: cannot tell the provider of {describe(model)}; pricing and shaping "
        f"pages as {FALLBACK_PROFILE!r} (pass profile= to choose)",
        stacklevel=4,
    )
    return FALLBACK_PROFILE
