"""Effective context budget (SPEC §3.1-3.2) and the capacity check (SPEC §3.3)."""

from __future__ import annotations

import pytest
from core_histories import render, simple_plan, snapshot

from glyphfold.compaction.history.budget import (
    DEFAULT_BUDGET_TOKENS,
    BudgetConfig,
    HistoryPruning,
    check_fits,
    effective_context_budget,
    resolve_capacity,
)
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.errors import ContextOverflowError, InputError

ON_10K = {"enabled": True, "max_tokens": 10_000}

# (rule, kwargs, expected budget)
CASES = [
    # §3.1 neither set: 32,000, capped by a smaller window only
    ("default", {}, 32_000),
    ("default capped by smaller window", {"context_window": 8_000}, 8_000),
    ("default not raised by larger window", {"context_window": 200_000}, 32_000),
    # §3.1 max_context_tokens is absolute; explicit 0 disables and stays 0
    ("absolute", {"max_context_tokens": 50_000, "context_window": 200_000}, 50_000),
    ("zero disables", {"max_context_tokens": 0}, 0),
    (
        "zero stays zero with everything else set",
        {
            "max_context_tokens": 0,
            "context_compact_ratio": 0.5,
            "history_pruning": ON_10K,
            "context_window": 200_000,
        },
        0,
    ),
    # §3.1 ratio of the window, or of 32,000 when unknown
    ("ratio of window", {"context_compact_ratio": 0.5, "context_window": 200_000}, 100_000),
    ("ratio 1.0 included", {"context_compact_ratio": 1.0, "context_window": 100_000}, 100_000),
    ("ratio of fallback", {"context_compact_ratio": 0.5}, 16_000),
    ("ratio 0 is unset", {"context_compact_ratio": 0.0, "context_window": 200_000}, 32_000),
    ("ratio > 1 is unset", {"context_compact_ratio": 1.5}, 32_000),
    ("negative ratio is unset", {"context_compact_ratio": -0.2}, 32_000),
    ("nan ratio is unset", {"context_compact_ratio": float("nan")}, 32_000),
    (
        "ratio out of range leaves max_context_tokens alone",
        {"context_compact_ratio": 2.0, "max_context_tokens": 40_000},
        40_000,
    ),
    # §3.1 both: max_context_tokens caps the ratio-derived budget downward
    (
        "both, cap binds",
        {"context_compact_ratio": 0.5, "context_window": 200_000, "max_context_tokens": 60_000},
        60_000,
    ),
    (
        "both, ratio binds",
        {"context_compact_ratio": 0.5, "context_window": 200_000, "max_context_tokens": 150_000},
        100_000,
    ),
    # §3.1 history_pruning lowers, never raises
    ("pruning lowers default", {"history_pruning": ON_10K}, 10_000),
    ("pruning never raises", {"history_pruning": {"enabled": True, "max_tokens": 90_000}}, 32_000),
    (
        "pruning disabled ignored",
        {"history_pruning": {"enabled": False, "max_tokens": 1_000}},
        32_000,
    ),
    ("pruning zero ignored", {"history_pruning": {"enabled": True, "max_tokens": 0}}, 32_000),
    ("pruning typed object", {"history_pruning": HistoryPruning(True, 5_000)}, 5_000),
    (
        "pruning lowers ratio budget",
        {"context_compact_ratio": 0.5, "context_window": 200_000, "history_pruning": ON_10K},
        10_000,
    ),
    # §3.1 every positive budget capped by capacity
    (
        "absolute capped by window",
        {"max_context_tokens": 500_000, "context_window": 200_000},
        200_000,
    ),
    # §3.1 no declared window: positive max_context_tokens honoured and is the ratio operand
    ("unknown window honours absolute", {"max_context_tokens": 100_000}, 100_000),
    (
        "unknown window: ratio applies to absolute",
        {"max_context_tokens": 100_000, "context_compact_ratio": 0.5},
        50_000,
    ),
    # §3.2 selected model != configured model: capacity unknown
    (
        "other model: window not borrowed",
        {"context_window": 8_000, "configured_model": "a", "selected_model": "b"},
        32_000,
    ),
    (
        "other model: ratio uses fallback",
        {
            "context_window": 8_000,
            "configured_model": "a",
            "selected_model": "b",
            "context_compact_ratio": 0.5,
        },
        16_000,
    ),
    (
        "other model: absolute not capped by the other window",
        {
            "context_window": 8_000,
            "configured_model": "a",
            "selected_model": "b",
            "max_context_tokens": 20_000,
        },
        20_000,
    ),
    (
        "same model: window applies",
        {"context_window": 8_000, "configured_model": "a", "selected_model": "a"},
        8_000,
    ),
]


@pytest.mark.parametrize(("rule", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_effective_context_budget(rule, kwargs, expected):
    """SPEC §3.1-3.2, one row per rule and combination."""
    before = snapshot(kwargs)
    assert effective_context_budget(**kwargs) == expected, rule
    cfg_kwargs = dict(kwargs)
    if isinstance(cfg_kwargs.get("history_pruning"), dict):
        cfg_kwargs["history_pruning"] = HistoryPruning(**cfg_kwargs["history_pruning"])
    assert BudgetConfig(**cfg_kwargs).resolve() == expected
    assert kwargs == before or rule.startswith("nan")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_context_tokens": -1}, "max_context_tokens must be >= 0"),
        ({"max_context_tokens": "many"}, "max_context_tokens must be an int"),
        ({"max_context_tokens": True}, "max_context_tokens must be an int"),
        ({"context_window": 0}, "context_window must be >= 1"),
        ({"context_compact_ratio": "half"}, "context_compact_ratio must be a number"),
        ({"history_pruning": {"enabled": True, "max": 3}}, "unknown keys"),
        ({"history_pruning": 5}, "history_pruning must be"),
    ],
)
def test_invalid_budget_inputs_name_the_value(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        effective_context_budget(**kwargs)


def test_budget_config_capacity():
    """SPEC §3.2/3.3: capacity unknown for another model; the hard check uses 32,000 then."""
    cfg = BudgetConfig(context_window=8_000, configured_model="a", selected_model="b")
    assert cfg.capacity is None
    assert cfg.hard_window == DEFAULT_BUDGET_TOKENS
    assert BudgetConfig(context_window=8_000).hard_window == 8_000
    assert resolve_capacity(None) is None
    with pytest.raises(InputError, match=r"history_pruning\.enabled"):
        HistoryPruning(enabled="yes")
    with pytest.raises(InputError, match="max_context_tokens"):
        BudgetConfig(max_context_tokens=-5)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_check_fits_raises_with_numbers(fmt):
    """SPEC §3.3: fails before sending with the estimate, the window and the overshoot."""
    wire = render(simple_plan(20), fmt)
    before = snapshot(wire)
    est = estimate_history_tokens(wire)
    assert check_fits(wire, window=est) == est
    tools = [{"name": "read_file", "description": "x" * 400, "parameters": {}}]
    with pytest.raises(ContextOverflowError) as exc:
        check_fits(wire, window=est, tools=tools, reserve_output=1_000)
    e = exc.value
    assert e.window == est
    assert e.estimate > est + 1_000
    assert e.overshoot == e.estimate - est
    assert "tool schemas" in str(e) and "reserved output" in str(e)
    assert wire == before


def test_check_fits_applies_when_proactive_trimming_is_disabled():
    """SPEC §3.3: max_context_tokens = 0 disables trimming, not the capacity check."""
    wire = render(simple_plan(200), "openai")
    assert effective_context_budget(max_context_tokens=0, context_window=1_000) == 0
    with pytest.raises(ContextOverflowError):
        check_fits(wire, window=1_000)
    with pytest.raises(ContextOverflowError) as exc:  # unknown window: the 32,000 safety value
        check_fits(render(simple_plan(1_000), "openai"), window=None)
    assert exc.value.window == 32_000
    with pytest.raises(InputError, match="reserve_output"):
        check_fits(wire, window=10, reserve_output=-1)
