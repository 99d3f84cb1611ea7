"""Effective context budget (SPEC §3.1-3.2) and the capacity check (SPEC §3.3).

The budget is a *proactive target* for trimming; the capacity check is the hard
limit applied right before sending, also when proactive trimming is disabled.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.tokens import (
    DEFAULT_IMAGE_POLICY,
    DEFAULT_PROFILE,
    TokenCounter,
    token_costs,
)
from glyphfold.errors import ContextOverflowError, InputError
from glyphfold.render.profiles import ProfileArg

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "RECOVERY_FRACTION",
    "BudgetConfig",
    "HistoryPruning",
    "check_fits",
    "effective_context_budget",
    "recovery_target",
    "resolve_capacity",
]

# SPEC §3.6: after an overflow, reduce to two thirds of the history's own estimate
RECOVERY_FRACTION = 2 / 3


def recovery_target(estimate: int) -> int:
    """The reactive-recovery target for a history of ``estimate`` tokens (docs/spec.md §3.6)."""
    return math.floor(estimate * RECOVERY_FRACTION)


# The compatibility stub of SPEC §3.1: not any model's reality, just the budget
# legacy profiles had and the window operand when nothing better is known.
DEFAULT_BUDGET_TOKENS = 32_000


def _opt_int(name: str, value: Any, *, minimum: int) -> int | None:
    if value is None:
        return None
    return check_int(name, value, minimum=minimum, unit="tokens, or None for unset")


@dataclass(frozen=True, slots=True)
class HistoryPruning:
    """Operator setting that can only lower the budget (SPEC §3.1)."""

    enabled: bool = False
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            msg = f"history_pruning.enabled must be a bool, got {self.enabled!r}"
            raise InputError(msg)
        if self.max_tokens is not None:
            check_int("history_pruning.max_tokens", self.max_tokens, unit="tokens, or None")


def _pruning(value: Any) -> HistoryPruning | None:
    if value is None or isinstance(value, HistoryPruning):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - {"enabled", "max_tokens"}
        if unknown:
            msg = f"history_pruning has unknown keys {sorted(unknown)}; valid: enabled, max_tokens"
            raise InputError(msg)
        return HistoryPruning(bool(value.get("enabled", False)), value.get("max_tokens"))
    if hasattr(value, "enabled"):
        return HistoryPruning(bool(value.enabled), getattr(value, "max_tokens", None))
    msg = (
        "history_pruning must be None, a mapping or an object with 'enabled' and "
        f"'max_tokens', got {type(value).__name__}"
    )
    raise InputError(msg)


def resolve_capacity(
    context_window: int | None,
    *,
    configured_model: str | None = None,
    selected_model: str | None = None,
) -> int | None:
    """The selected model's known capacity, or None when unknown (SPEC §3.2).

    ``context_window`` is declared for ``configured_model``; if another model is
    selected, its capacity is unknown (never borrow another model's window).
    """
    window = _opt_int("context_window", context_window, minimum=1)
    if (
        configured_model is not None
        and selected_model is not None
        and selected_model != configured_model
    ):
        return None
    return window


def effective_context_budget(
    *,
    max_context_tokens: int | None = None,
    context_compact_ratio: float | None = None,
    history_pruning: Any = None,
    context_window: int | None = None,
    configured_model: str | None = None,
    selected_model: str | None = None,
) -> int:
    """Resolve the proactive trimming budget in tokens (docs/budget.md); 0 = disabled.

    - neither ``max_context_tokens`` nor ``context_compact_ratio``: 32,000, capped by
      the selected model's window when that is smaller;
    - ``max_context_tokens`` is absolute; an explicit 0 disables proactive trimming;
    - ``context_compact_ratio`` in (0, 1] gives window x ratio (window: the model's,
      else a positive ``max_context_tokens``, else 32,000); other values count as unset;
    - both: ``max_context_tokens`` caps the ratio-derived budget;
    - ``history_pruning`` (enabled, positive max_tokens) lowers it, never raises it;
    - every positive budget is capped by the selected model's capacity.
    """
    mct = _opt_int("max_context_tokens", max_context_tokens, minimum=0)
    capacity = resolve_capacity(
        context_window, configured_model=configured_model, selected_model=selected_model
    )
    pruning = _pruning(history_pruning)
    ratio = _ratio(context_compact_ratio)
    if mct == 0:
        return 0  # explicit sentinel: stays 0 whatever else is set
    if ratio is None and mct is None:
        budget = DEFAULT_BUDGET_TOKENS
    else:
        if capacity is not None:
            window = capacity
        elif mct is not None:
            window = mct  # honoured, and the ratio applies to it (not to 32,000)
        else:
            window = DEFAULT_BUDGET_TOKENS
        if ratio is None:
            assert mct is not None  # ratio and mct are not both None here
            budget = mct
        else:
            budget = max(1, math.floor(window * ratio))
            if mct is not None:
                budget = min(budget, mct)
    if pruning is not None and pruning.enabled and (pruning.max_tokens or 0) > 0:
        assert pruning.max_tokens is not None
        budget = min(budget, pruning.max_tokens)
    if budget > 0 and capacity is not None:
        budget = min(budget, capacity)
    return budget


def _ratio(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"context_compact_ratio must be a number or None, got {value!r}"
        raise InputError(msg)
    # SPEC §3.1: values outside (0.0, 1.0] are treated as unset (NaN included)
    if not (0.0 < value <= 1.0):
        return None
    return float(value)


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """Typed wrapper of :func:`effective_context_budget`'s inputs, validated up front."""

    max_context_tokens: int | None = None
    context_compact_ratio: float | None = None
    history_pruning: HistoryPruning | None = None
    context_window: int | None = None
    configured_model: str | None = None
    selected_model: str | None = None

    def __post_init__(self) -> None:
        self.resolve()  # validates every field with a message naming it

    def resolve(self) -> int:
        """The effective proactive budget (0 = proactive trimming disabled)."""
        return effective_context_budget(
            max_context_tokens=self.max_context_tokens,
            context_compact_ratio=self.context_compact_ratio,
            history_pruning=self.history_pruning,
            context_window=self.context_window,
            configured_model=self.configured_model,
            selected_model=self.selected_model,
        )

    @property
    def capacity(self) -> int | None:
        """The selected model's known window, or None (docs/budget.md)."""
        return resolve_capacity(
            self.context_window,
            configured_model=self.configured_model,
            selected_model=self.selected_model,
        )

    @property
    def hard_window(self) -> int:
        """The window the capacity check uses: the capacity, or the 32,000 safety value."""
        cap = self.capacity
        return cap if cap is not None else DEFAULT_BUDGET_TOKENS


def _tools_tokens(tools: Sequence[Any] | None, counter: TokenCounter | None) -> int:
    if not tools:
        return 0
    text = json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"), default=str)
    if counter is not None:
        return counter.count(text)
    return -(-len(text) // 4)


def check_fits(
    history: Any,
    *,
    window: int | None,
    tools: Sequence[Any] | None = None,
    reserve_output: int = 0,
    extra_tokens: int = 0,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
) -> int:
    """Raise ContextOverflowError before sending if the request cannot fit (docs/budget.md).

    Counts the messages (images included), the tool schemas, ``extra_tokens``
    (hooks, dynamic context) and ``reserve_output``; ``window`` None means
    unknown capacity, checked against the 32,000 safety value. Returns the
    estimate when it fits. Applies whether or not proactive trimming is enabled.
    """
    win = _opt_int("window", window, minimum=1)
    if win is None:
        win = DEFAULT_BUDGET_TOKENS
    reserve = _opt_int("reserve_output", reserve_output, minimum=0) or 0
    extra = _opt_int("extra_tokens", extra_tokens, minimum=0) or 0
    costs = token_costs(history, profile=profile, counter=counter, image_policy=image_policy)
    msg_tokens = costs.total
    tool_tokens = _tools_tokens(tools, counter)
    estimate = msg_tokens + tool_tokens + extra + reserve
    if estimate > win:
        over = estimate - win
        parts = [f"messages {msg_tokens:,}"]
        if tool_tokens:
            parts.append(f"tool schemas {tool_tokens:,}")
        if extra:
            parts.append(f"extra {extra:,}")
        if reserve:
            parts.append(f"reserved output {reserve:,}")
        msg = (
            f"request needs ~{estimate:,} tokens ({' + '.join(parts)}) but the context "
            f"window is {win:,}: {over:,} over; trim or compact the history before sending "
            "(raising the proactive budget cannot make it fit)"
        )
        raise ContextOverflowError(msg, estimate=estimate, window=win, overshoot=over)
    return estimate
