"""What every rung of the registry must do, as one function the tests run over the registry.

:func:`contract_rungs` reads the rung registry (never a hand-written list), so a rung added
as one module + one row is checked the moment it is registered; :func:`rung_problems`
runs a rung alone on agent loops in both main formats and says what broke.
"""

from __future__ import annotations

import copy
from typing import Any

import glyphfold
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.registry import LadderConfig, registered_rungs
from tests.ladder.shapes import long_turn, parallel_calls

# a summarizer for rungs that call a model: deterministic, offline
SUMMARY_TEXT = "Summary: the agent ran the tests, read files and kept fixing module imports."


def fake_summarizer(transcript: str, **_: Any) -> str:
    return SUMMARY_TEXT


def contract_rungs() -> list[str]:
    """Every registered rung, in ladder order."""
    return list(registered_rungs())


def _histories() -> list[Any]:
    return [long_turn("openai", steps=10), parallel_calls("anthropic", steps=6)]


def rung_problems(name: str) -> list[str]:
    """What rung ``name`` breaks when it runs alone on agent loops (empty: nothing)."""
    out: list[str] = []
    cfg = LadderConfig(tail_tokens=500, min_saving_tokens=0)
    for history in _histories():
        before = copy.deepcopy(history)
        fmt = glyphfold.detect_format(history)
        start = estimate_history_tokens(history)
        try:
            res = glyphfold.compact(
                history,
                budget=max(start // 2, 2_000),
                rungs=[name],
                config=cfg,
                summarizer=fake_summarizer,
            )
        except glyphfold.ContextOverflowError:
            res = None  # a rung may be unable to reach the budget alone; it still must not
        if history != before:
            out.append(f"{fmt}: the input was mutated")
        if res is None:
            continue
        h = to_canonical(res.messages)
        if h.format != fmt:
            out.append(f"{fmt}: the output is {h.format}")
        bad = [(v.index, v.rule) for v in find_violations(h)]
        if bad:
            out.append(f"{fmt}: the provider would refuse the output: {bad[:3]}")
        first_user = next(m for m in to_canonical(history).messages if m.role == "user")
        if first_user.text not in [m.text for m in h.messages]:
            out.append(f"{fmt}: the head's request is not kept verbatim")
        if res.tokens_after > start:
            out.append(f"{fmt}: the rung grew the history ({start} -> {res.tokens_after})")
    return out
