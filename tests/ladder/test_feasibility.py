"""Feasibility is monotone: every budget at or above ``floor_tokens(h)`` fits (issue 21, item 14).

For every rung subset that includes trim: trim drops the middle, then the older tail
steps (the floor keeps only the newest step), so neither a wide tail nor a snapshot
that overshoots by a few tokens can leave a history above a budget the floor allows.
Checked on generated histories, on a constructed case, and with a budget sweep over
real sessions (../shared/realdata, skipped when absent; bounded).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
import shapes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.api import compact, floor_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compaction"))
from core_histories import format_name, wire_histories

REALDATA = Path("/work/shared/realdata")
RUNGS = [None, "snapshot,trim", "trim", "elide,trim"]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    case=wire_histories(min_turns=2, max_turns=6),
    extra=st.integers(0, 3_000),
    rungs=st.sampled_from(RUNGS),
)
def test_every_budget_at_or_above_the_floor_fits(case, extra, rungs):
    fmt, history = case
    fmt = format_name(fmt)
    floor = floor_tokens(history, format=fmt)
    for budget in (floor, floor + extra):
        result = compact(copy.deepcopy(history), budget=budget, rungs=rungs, format=fmt)
        assert result.tokens_after <= budget
        assert find_violations(result.messages, format=fmt) == []


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_wide_tail_is_trimmed_down_to_the_floor(fmt):
    """The run's tail held two steps; the floor keeps one: trim drops the older one too."""
    b = shapes.Builder(fmt).user("task")
    for k in range(6):
        b.step(f"step {k}", [("run", {"cmd": f"c{k}"}, "x" * 400, False)])
    b.assistant("ok").user("m")
    b.step("{", [("run", {"cmd": "last"}, "none", False)])
    b.assistant("}")
    wire = b.wire()
    floor = floor_tokens(wire)
    result = compact(wire, budget=floor, rungs="trim")
    assert result.tokens_after <= floor
    texts = [m.text for m in to_canonical(result.messages).messages]
    assert "m" in texts  # the request stays, as text
    assert find_violations(result.messages) == []


SESSIONS = [
    "swe-agent_marshmallow-1867_e69bc0.openai.json",
    "adp_swe-gym_openhands_sampled_trajectories_1.anthropic.json",
    "adp_code_feedback_4.openai.json",
    "swe-agent_BabyEncryption_aef699__plain.anthropic.json",
]


@pytest.mark.slow
@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata absent")
@pytest.mark.parametrize("name", SESSIONS)
def test_budget_sweep_over_real_sessions(name):
    """From the floor to the estimate in eight steps: every budget fits, for every subset."""
    history = json.loads((REALDATA / name).read_text())
    floor = floor_tokens(history)
    est = estimate_history_tokens(history, image_policy="all")
    for rungs in ("snapshot,trim", None, "trim"):
        for k in range(8):
            budget = floor + (est - floor) * k // 8
            result = compact(history, budget=budget, rungs=rungs)
            assert result.tokens_after <= budget, (rungs, budget)
