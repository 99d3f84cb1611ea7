"""The adapters' shared policy on the conversation's Compactor (issue 19, SPEC §5.10)."""

from __future__ import annotations

import pytest

import glyphfold
from glyphfold.integrations.policy import CompactionPolicy


def _loop(steps: int, size: int) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "Fix the failing test."}]
    for k in range(steps):
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {"name": "read", "arguments": f'{{"k": {k}}}'},
                    }
                ],
            }
        )
        body = " ".join(f"line {k}.{i}: value={i * k} ok" for i in range(size))
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": body})
    return msgs


def test_budget_and_window_together():
    policy = CompactionPolicy(budget=4000, window=20_000, profile="openai")
    assert (policy.budget, policy.window) == (4000, 20_000)
    assert policy.compactor_for("openai").hard_limit == 20_000
    with pytest.raises(glyphfold.InputError, match="give budget"):
        CompactionPolicy(profile="openai")
    with pytest.raises(glyphfold.InputError, match="low= applies without trigger"):
        CompactionPolicy(budget=4000, trigger=6000, low=0.5)


def test_compacts_once_then_appends():
    """Past the trigger it compacts, then sends that output byte for byte plus the new
    messages (the old policy compacted afresh at every call over the trigger)."""
    policy = CompactionPolicy(budget=3000, trigger=4000, profile="openai")
    msgs = _loop(40, 40)
    actions = []
    sent = []
    for n in range(3, len(msgs) + 1, 2):
        fitted = policy.fit(msgs[:n])
        actions.append(fitted.action)
        sent.append(fitted.messages)
    assert "compact" in actions
    first = actions.index("compact")
    assert actions[first + 1] == "append"
    prev, nxt = sent[first], sent[first + 1]
    assert nxt[: len(prev)] == prev  # the compacted prefix again, unchanged
    assert actions.count("append") > actions.count("compact")


def test_a_result_over_the_budget_inside_the_window_goes_through():
    msgs = _loop(1, 1500)  # one tool result well over the budget
    with pytest.raises(glyphfold.ContextOverflowError):
        CompactionPolicy(budget=2000, profile="openai", rungs=["elide"]).fit(msgs)
    fitted = CompactionPolicy(budget=2000, window=60_000, profile="openai", rungs=["elide"]).fit(
        msgs
    )
    assert 2000 < fitted.tokens <= 60_000  # sent over the budget, inside the window
