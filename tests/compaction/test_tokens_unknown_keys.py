"""Every byte that is sent is priced: keys the model does not know still cost (SPEC §3.3, §3.4).

A wire message can carry any key (``name``, provider extensions, a client's own
data); all of them go to the provider. Only glyphfold's own ``x_glyphfold`` key
is stripped before sending, so only it is free.
"""

from __future__ import annotations

import copy
import random

import pytest
from core_histories import format_name, wire_histories, wire_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import ToolResult
from glyphfold.compaction.history.tokens import (
    estimate_history_tokens,
    estimate_message_tokens,
    token_costs,
)
from glyphfold.compaction.history.trim import trim_history
from glyphfold.compaction.history.turns import segment_turns

MEGABYTE = "x" * 1_000_000


def _user(**extra):
    return {"role": "user", "content": "hi", **extra}


def test_a_megabyte_in_an_unknown_key_does_not_fit_100_tokens():
    """It was priced as 5 tokens: the key is sent, so its 1 MB costs ~250k tokens."""
    heavy = estimate_history_tokens([_user(blob=MEGABYTE)])
    assert heavy == 4 + -(-(len("hi") + len('"blob":"') + len(MEGABYTE) + 1) // 4)
    # a 100-token budget drops the turn that carries it (it "fitted" before)
    history = [_user(blob=MEGABYTE), {"role": "assistant", "content": "ok"},
               _user(), {"role": "assistant", "content": "done"}]  # fmt: skip
    res = trim_history(history, budget=100)
    assert res.trimmed and res.tokens_before > 250_000 and res.tokens_after <= 100
    assert all("blob" not in m for m in res.history)


def test_glyphfolds_own_key_is_free():
    """x_glyphfold (snapshot sources) is stripped before sending: never priced."""
    own = {"x_glyphfold": {"source": MEGABYTE}}
    assert estimate_history_tokens([_user(**own)]) == estimate_history_tokens([_user()])


@pytest.mark.parametrize(
    "where",
    ["openai-part", "openai-call", "openai-function", "anthropic-block", "anthropic-use",
     "anthropic-result", "anthropic-nested"],
)  # fmt: skip
def test_unknown_keys_of_blocks_and_calls_are_priced(where):
    """Extra keys inside content parts, tool calls and results are sent too."""
    blob = "y" * 4000
    openai = [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        {"role": "assistant", "content": "done"},
    ]
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "a b"}]}]},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    history = copy.deepcopy(openai if where.startswith("openai") else anthropic)
    target = {
        "openai-part": lambda h: h[0]["content"][0],
        "openai-call": lambda h: h[1]["tool_calls"][0],
        "openai-function": lambda h: h[1]["tool_calls"][0]["function"],
        "anthropic-block": lambda h: h[0]["content"][0],
        "anthropic-use": lambda h: h[1]["content"][0],
        "anthropic-result": lambda h: h[2]["content"][0],
        "anthropic-nested": lambda h: h[2]["content"][0]["content"][0],
    }[where](history)
    before = estimate_history_tokens(history)
    target["x_vendor"] = blob
    after = estimate_history_tokens(history)
    assert after - before >= len(blob) // 4
    to_canonical(history)  # still a valid history


def _with_extra_keys(wire, rng: random.Random):
    """A copy of ``wire`` with unknown keys added to random messages, parts and calls."""
    out = copy.deepcopy(wire)
    for m in wire_messages(out):
        if rng.random() < 0.3:
            m[rng.choice(["name", "x_vendor", "metadata"])] = "v" * rng.randrange(1, 300)
        if rng.random() < 0.2:
            m["x_glyphfold"] = {"source": "s" * rng.randrange(1, 300)}
        content = m.get("content")
        parts = content if isinstance(content, list) else []
        for p in parts:
            if isinstance(p, dict) and rng.random() < 0.3:
                p["cache_control"] = {"type": "ephemeral", "pad": "p" * rng.randrange(0, 50)}
        for c in m.get("tool_calls") or []:
            if rng.random() < 0.3:
                c["x_trace"] = rng.randrange(10**6)
            if rng.random() < 0.3:
                c["function"]["strict"] = True
    return out


@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(wire_histories(), st.integers(0, 2**32 - 1), st.sampled_from(["spec", "all"]))
def test_fast_costing_still_matches_the_reference_with_unknown_keys(case, seed, policy):
    """The per-history fast path and estimate_message_tokens agree, extra keys or not, and
    extra keys never lower an estimate."""
    fmt, plain = case
    wire = _with_extra_keys(plain, random.Random(seed))
    before = copy.deepcopy(wire)
    h = to_canonical(wire, format=format_name(fmt))
    seg = segment_turns(h)
    current = seg.turns[-1].start if seg.turns else 0
    expected = []
    for i, m in enumerate(h.messages):
        is_result = (
            m.role == "tool"
            or any(isinstance(b, ToolResult) for b in m.blocks)
            or (m.role == "user" and m.text.startswith("[Tool results]"))
        )
        old = is_result and i < current
        sent = True if policy == "all" else (not old if is_result else m.role == "user")
        expected.append(estimate_message_tokens(m, images_sent=sent, tool_results_by_bytes=old))
    costs = token_costs(wire, image_policy=policy)
    assert costs.messages == tuple(expected)
    assert all(
        a >= b
        for a, b in zip(costs.messages, token_costs(plain, image_policy=policy).messages,
                        strict=True)
    )  # fmt: skip
    assert wire == before


def test_an_exact_counter_counts_unknown_keys_too():
    class Chars:
        def count(self, text: str) -> int:
            return len(text)

    plain = estimate_history_tokens([_user()], counter=Chars())
    extra = estimate_history_tokens([_user(blob="z" * 1000)], counter=Chars())
    assert extra - plain == len('"blob":"' + "z" * 1000 + '"')
