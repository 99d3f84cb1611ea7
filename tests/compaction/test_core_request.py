"""prepare_request: proactive trim then the capacity check (SPEC §3.3, §3.5)."""

from __future__ import annotations

import pytest
from core_histories import render, simple_plan, snapshot

from glyphfold.compaction.history.budget import BudgetConfig
from glyphfold.compaction.history.events import EventBus, HistoryTrimmed
from glyphfold.compaction.history.request import prepare_request
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import validate_history
from glyphfold.errors import ContextOverflowError, InputError


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_trims_to_budget_then_checks_the_window(fmt):
    wire = render(simple_plan(40), fmt)
    before = snapshot(wire)
    total = estimate_history_tokens(wire)
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append, types=HistoryTrimmed)
    cfg = BudgetConfig(max_context_tokens=total // 4, context_window=total)
    out = prepare_request(wire, budget=cfg, bus=bus)
    validate_history(out)
    assert estimate_history_tokens(out) <= total // 4
    assert seen[0].reason == "token_budget"
    assert prepare_request(wire, budget=total + 1, window=total + 1, bus=bus) is wire
    assert wire == before


def test_disabled_trimming_still_checks_capacity():
    """SPEC §3.3: budget 0 disables trimming, not the check before sending."""
    wire = render(simple_plan(40), "openai")
    cfg = BudgetConfig(max_context_tokens=0, context_window=500)
    with pytest.raises(ContextOverflowError) as exc:
        prepare_request(wire, budget=cfg, bus=EventBus())
    assert exc.value.window == 500
    with pytest.raises(ContextOverflowError):  # newest turn alone above the window
        prepare_request(
            render(simple_plan(1, user_chars=9_000), "openai"), budget=100, window=1_000
        )
    with pytest.raises(InputError, match="BudgetConfig"):
        prepare_request(wire, budget=1.5)
