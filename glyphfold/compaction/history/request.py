"""One call before each provider request: proactive trim, then the capacity check.

SPEC §3.5: proactive trimming runs before the first provider call of a turn
when the history exceeds the budget, and between tool-loop iterations; SPEC
§3.3: the request is sent only if it fits the resolved window, checked also
when proactive trimming is disabled (budget 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from glyphfold.compaction.history.budget import BudgetConfig, check_fits
from glyphfold.compaction.history.events import EventBus
from glyphfold.compaction.history.tokens import DEFAULT_IMAGE_POLICY, DEFAULT_PROFILE, TokenCounter
from glyphfold.compaction.history.trim import trim_history
from glyphfold.errors import InputError
from glyphfold.render.profiles import ProfileArg

__all__ = ["prepare_request"]


def prepare_request(
    history: Any,
    *,
    budget: int | BudgetConfig,
    window: int | None = None,
    tools: Sequence[Any] | None = None,
    reserve_output: int = 0,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    bus: EventBus | None = None,
) -> Any:
    """Trim to the proactive budget, then raise ContextOverflowError if it cannot fit.

    ``budget`` is a token count (0: no proactive trimming) or a BudgetConfig
    (its resolved budget, and its capacity as the window unless ``window`` is
    given). Returns the history in the kind it was given (the input itself when
    nothing was trimmed).
    """
    if isinstance(budget, BudgetConfig):
        tokens = budget.resolve()
        if window is None:
            window = budget.hard_window
    elif isinstance(budget, int) and not isinstance(budget, bool):
        tokens = budget
    else:
        msg = f"budget must be an int or a BudgetConfig, got {budget!r}"
        raise InputError(msg)
    out = history
    if tokens:
        out = trim_history(
            history,
            budget=tokens,
            profile=profile,
            counter=counter,
            image_policy=image_policy,
            bus=bus,
        ).history
    check_fits(
        out,
        window=window,
        tools=tools,
        reserve_output=reserve_output,
        profile=profile,
        counter=counter,
        image_policy=image_policy,
    )
    return out
