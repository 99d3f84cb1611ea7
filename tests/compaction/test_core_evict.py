"""FIFO eviction (SPEC §4) and the tool-loop guard (SPEC §4.6)."""

from __future__ import annotations

import asyncio

import pytest
from core_histories import render, simple_plan, snapshot, wire_histories, wire_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.events import EventBus, MessagesEvicted
from glyphfold.compaction.history.evict import DEFAULT_MAX_SAFE_TOKENS, EvictingHistory
from glyphfold.compaction.history.loop_guard import LoopGuard
from glyphfold.compaction.history.turns import pair_tool_calls
from glyphfold.compaction.history.validate import validate_history
from glyphfold.errors import HistoryFormatError, InputError

FAST = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def _fifo_messages(wire):
    """The FIFO part of a wire history: no system messages (SPEC §4.2)."""
    return [m for m in wire_messages(wire) if m.get("role") not in ("system", "developer")]


def test_seed_algorithm_pure_fifo():
    """SPEC §4.1/4.3: evict oldest until total + overhead <= max_safe_tokens (default 8,000)."""
    h = EvictingHistory(pure_fifo=True, bus=EventBus())
    assert h.max_safe_tokens == DEFAULT_MAX_SAFE_TOKENS == 8_000
    for i, tok in enumerate([3_000, 2_000, 2_000, 2_000]):
        h.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}, tokens=tok)
    assert h.total_tokens == 9_000
    assert h.evict_old_messages(prompt_overhead=0) == [{"role": "user", "content": "m0"}]
    assert h.total_tokens == 6_000
    assert h.evict_old_messages(prompt_overhead=2_000) == []  # 8,000 fits exactly
    evicted = h.evict_old_messages(prompt_overhead=4_500)
    assert [m["content"] for m in evicted] == ["m1", "m2"]
    assert h.tokens == (2_000,)


def test_pure_fifo_is_unsafe_and_safe_mode_is_not():
    """The seed's pure FIFO can orphan a tool result; the default never does."""
    wire = render(simple_plan(3), "openai")
    msgs = _fifo_messages(wire)
    # tokens make the pure FIFO stop right after the assistant's tool call
    toks = [10, 10, 10, 10] * 3
    toks[1] = 1_000
    pure = EvictingHistory(pure_fifo=True, bus=EventBus())
    safe = EvictingHistory(bus=EventBus())
    for m, t in zip(msgs, toks, strict=True):
        pure.append(m, tokens=t)
        safe.append(m, tokens=t)
    limit = sum(toks) - 1_010
    pure.evict_old_messages(limit)
    assert pure.messages[0]["role"] == "tool"  # the orphan the seed's algorithm leaves
    assert not pair_tool_calls(pure.messages).ok
    safe.evict_old_messages(limit)
    assert pair_tool_calls(safe.messages).ok
    validate_history(safe.messages, format="openai")
    assert safe.total_tokens <= limit


def test_on_evict_receives_state_and_messages_and_is_transactional():
    """SPEC §4.4: on_evict(state, evicted); a failing callback evicts nothing."""
    bus = EventBus()
    events = []
    bus.subscribe(events.append, types=MessagesEvicted)
    archived = []
    h = EvictingHistory(
        max_safe_tokens=100, bus=bus, on_evict=lambda s, ev: archived.append((s, ev))
    )
    wire = render(simple_plan(5), "openai")
    for m in _fifo_messages(wire):
        h.append(m, tokens=20)
    state = {"session_id": "s-1"}
    evicted = h.evict_old_messages(state=state)
    assert archived == [(state, evicted)]
    assert len(evicted) + len(h) == 20
    assert events[0].evicted_messages == len(evicted)
    assert h.total_tokens <= 100

    @h.on_evict
    def broken(state, evicted):
        raise OSError("db down")

    before = h.messages
    with pytest.raises(OSError, match="db down"):
        h.evict_old_messages(40)
    assert h.messages == before  # nothing lost


def test_async_on_evict():
    """SPEC §4.4: async callbacks are awaited by the async variant; sync ones still run."""
    seen = []

    async def archive(state, evicted):
        await asyncio.sleep(0)
        seen.append(("async", state, len(evicted)))

    h = EvictingHistory(
        format="anthropic",  # so the cut must land on a user message
        max_safe_tokens=50,
        on_evict=[archive, lambda s, e: seen.append(("sync", s, len(e)))],
        bus=EventBus(),
    )
    h.append({"role": "user", "content": "a"}, tokens=40)
    h.append({"role": "assistant", "content": "b"}, tokens=10)
    h.append({"role": "user", "content": "c"}, tokens=10)
    evicted = asyncio.run(h.aevict_old_messages(state="st"))
    assert [m["content"] for m in evicted] == ["a", "b"]
    assert seen == [("async", "st", 2), ("sync", "st", 2)]
    h2 = EvictingHistory(max_safe_tokens=5, on_evict=archive, bus=EventBus())
    h2.append({"role": "user", "content": "a"}, tokens=10)
    h2.append({"role": "user", "content": "b"}, tokens=10)
    with pytest.raises(InputError, match="aevict_old_messages"):
        h2.evict_old_messages()
    assert len(h2) == 2


def test_push_assistant_runs_the_check_and_overhead_counts():
    """SPEC §4.2/4.5: eviction after each assistant message; overhead recomputed by the caller."""
    h = EvictingHistory(format="anthropic", max_safe_tokens=30, bus=EventBus())
    overhead = h.prompt_overhead("s" * 40, "d" * 8, "t" * 4)
    assert overhead == 10 + 2 + 1
    h.append({"role": "user", "content": "u" * 40})
    assert h.tokens == (14,)
    evicted = h.push_assistant({"role": "assistant", "content": "a" * 40}, prompt_overhead=overhead)
    assert evicted == []  # the only cut would drop the newest unit
    h.append({"role": "user", "content": "next"})
    evicted = h.push_assistant({"role": "assistant", "content": "ok"}, prompt_overhead=overhead)
    assert [m["content"] for m in evicted] == ["u" * 40, "a" * 40]
    out = asyncio.run(h.apush_assistant({"role": "assistant", "content": "x"}, prompt_overhead=0))
    assert out == []


def test_bad_input():
    h = EvictingHistory(bus=EventBus())
    with pytest.raises(HistoryFormatError, match="prompt_overhead"):
        h.append({"role": "system", "content": "s"})
    with pytest.raises(InputError, match="max_safe_tokens"):
        EvictingHistory(max_safe_tokens=-1)
    with pytest.raises(InputError, match="format"):
        EvictingHistory(format="cohere")
    h.append(
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
        }
    )
    with pytest.raises(HistoryFormatError, match="message 1"):
        h.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]})
    with pytest.raises(InputError, match="tokens"):
        h.append({"role": "user", "content": "a"}, tokens=-3)


@FAST
@given(wire_histories(min_turns=1), st.integers(0, 3_000), st.integers(0, 2_000))
def test_eviction_properties(case, max_safe, overhead):
    """SPEC §4.1: the evicted messages are the oldest; the rest is a valid, paired suffix."""
    name, wire = case
    before = snapshot(wire)
    msgs = _fifo_messages(wire)
    fmt = "openai" if name == "openai" else "anthropic"
    bus = EventBus()
    events = []
    bus.subscribe(events.append)
    h = EvictingHistory(msgs, format=fmt, max_safe_tokens=max_safe, bus=bus)
    total = h.total_tokens
    evicted = h.evict_old_messages(prompt_overhead=overhead)
    assert evicted + h.messages == msgs
    assert all(a is b for a, b in zip(evicted + h.messages, msgs, strict=True))
    assert h.total_tokens == sum(h.tokens)
    assert len(h) >= 1
    if evicted:
        (ev,) = events
        assert ev.evicted_messages == len(evicted)
        assert ev.tokens_evicted == total - h.total_tokens
    assert pair_tool_calls(h.messages if fmt == "openai" else {"messages": h.messages}).ok
    if fmt == "openai":
        validate_history(h.messages, format=fmt)
    elif evicted:
        validate_history({"messages": h.messages}, format=fmt)
    assert wire == before


def test_loop_guard_caps_iterations_and_rolls_back():
    """SPEC §4.6: at most max_iterations (default 10), then roll back to the pre-request state."""
    history = [{"role": "user", "content": "do it"}]
    guard = LoopGuard(history)
    assert guard.max_iterations == 10
    calls = 0
    while guard.next_iteration():
        calls += 1
        history.append({"role": "assistant", "content": f"step {calls}"})
    assert calls == 10 and guard.exhausted
    assert guard.rollback() == [{"role": "user", "content": "do it"}]
    eh = EvictingHistory([{"role": "user", "content": "q"}], bus=EventBus())
    g2 = LoopGuard(eh, max_iterations=2)
    eh.append({"role": "assistant", "content": "a"})
    assert g2.rollback() is eh
    assert eh.messages == [{"role": "user", "content": "q"}]
    with pytest.raises(InputError, match="max_iterations"):
        LoopGuard([], max_iterations=0)
    with pytest.raises(InputError, match="collection"):
        LoopGuard([], non_idempotent="send_email")


def test_non_idempotent_tools_are_never_retried():
    """SPEC §4.6: a non-idempotent call runs once, even after a rollback; others always run."""
    guard = LoopGuard([], non_idempotent={"send_email"})
    assert guard.claim("send_email", '{"to": "a", "body": "hi"}')
    assert not guard.claim("send_email", {"body": "hi", "to": "a"})  # same call, other key order
    assert guard.claim("send_email", {"to": "b", "body": "hi"})
    assert guard.claim("read_file", {"path": "x"}) and guard.claim("read_file", {"path": "x"})
    guard.rollback()
    assert not guard.claim("send_email", {"to": "a", "body": "hi"})
    assert "not retried" in LoopGuard.not_retried_text("send_email")
