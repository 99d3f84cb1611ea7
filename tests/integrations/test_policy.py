"""The adapters' shared policy: the conversation's Compactor, budget a target (issue 19)."""

from __future__ import annotations

import pytest

import glyphfold
from glyphfold.integrations.policy import CompactionPolicy
from tests.serve.histories import openai_history


def _with_big_result(chars: int) -> list:
    h = openai_history(6, chars=2000)
    call = {"id": "big", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    h.append({"role": "assistant", "content": "", "tool_calls": [call]})
    h.append({"role": "tool", "tool_call_id": "big", "content": "word " * chars})
    return h


def test_budget_is_a_target_and_the_window_the_hard_limit():
    h = _with_big_result(12_000)
    with pytest.raises(glyphfold.ContextOverflowError):
        CompactionPolicy(8_000, profile="openai").fit(h)
    fitted = CompactionPolicy(8_000, window=40_000, profile="openai").fit(h)
    assert fitted.over_budget and 8_000 < fitted.tokens <= 40_000


def test_the_trigger_counts_tools_and_compaction_appends_after():
    full = openai_history(40, chars=6000)
    seen: list = []
    policy = CompactionPolicy(30_000, profile="openai", on_compact=seen.append)
    tools = [{"type": "function", "function": {"name": "x", "parameters": {"d": "y" * 4000}}}]
    actions = [policy.fit(full[:n], tools).action for n in range(4, len(full) + 1, 2)]
    assert "compact" in actions and "append" in actions
    assert len(seen) == actions.count("compact")
    assert policy.over(full, tools) == policy.compactor.needs_compaction(full, tools=tools)


def test_trigger_and_budget_keep_their_meaning():
    p = CompactionPolicy(4_000, trigger=8_000)
    assert (p.compactor.budget, p.compactor.target) == (8_000, 4_000)
    with pytest.raises(glyphfold.InputError, match="trigger"):
        CompactionPolicy(4_000, trigger=3_000)
