"""History core benchmarks (group ``history``): parse + segment + trim 10,000 messages.

Run: ``python -m pytest benchmarks/bench_history.py --benchmark-enable -p no:xdist``
(the figures go in benchmarks/README.md, section "History core").
"""

from __future__ import annotations

from typing import Any

import pytest

from glyphfold.compaction.history.events import EventBus
from glyphfold.compaction.history.evict import EvictingHistory
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.trim import trim_history
from glyphfold.compaction.history.turns import segment_turns

N_MESSAGES = 10_000


def build_history(n_messages: int, fmt: str) -> Any:
    """A deterministic agent session: each turn = user, 4 tool steps, reply (10 messages)."""
    msgs: list[dict[str, Any]] = []
    t = 0
    while len(msgs) < n_messages:
        msgs.append({"role": "user", "content": f"task {t}: fix the failing test in module_{t}.py"})
        for s in range(4):
            cid = f"call_{t}_{s}"
            out = f"line {s}: " + "x" * (200 + 37 * ((t * 7 + s) % 11))
            if fmt == "openai":
                msgs.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": "bash", "arguments": '{"cmd": "pytest -x"}'},
                            }
                        ],
                    }
                )
                msgs.append({"role": "tool", "tool_call_id": cid, "content": out})
            else:
                msgs.append(
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": "ls"}}
                        ],
                    }
                )
                msgs.append(
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": cid, "content": out}],
                    }
                )
        msgs.append({"role": "assistant", "content": f"fixed module_{t}.py"})
        t += 1
    msgs = msgs[:n_messages]
    # end on a complete turn boundary so the newest turn is whole
    while msgs[-1]["role"] != "assistant" or "tool_calls" in msgs[-1]:
        msgs.pop()
    if fmt == "openai":
        return [{"role": "system", "content": "You are a coding agent."}, *msgs]
    return {"system": "You are a coding agent.", "model": "m", "messages": msgs}


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def history(request: pytest.FixtureRequest) -> tuple[str, Any]:
    return request.param, build_history(N_MESSAGES, request.param)


def _info(benchmark: Any, fmt: str, wire: Any) -> None:
    msgs = wire if isinstance(wire, list) else wire["messages"]
    benchmark.extra_info.update(
        format=fmt,
        messages=len(msgs),
        turns=len(segment_turns(wire).turns),
        tokens=estimate_history_tokens(wire),
    )


@pytest.mark.benchmark(group="history")
def test_segment_and_trim_10k(benchmark: Any, history: tuple[str, Any]) -> None:
    """The issue's figure: wire in -> canonical -> segment -> token-budget trim -> wire out."""
    fmt, wire = history
    bus = EventBus()
    budget = estimate_history_tokens(wire) // 2
    trim_history(wire, budget=budget, bus=bus)  # warm caches (regex, imports)
    res = benchmark(trim_history, wire, budget=budget, bus=bus)
    assert res.event is not None and res.tokens_after <= budget
    _info(benchmark, fmt, wire)


@pytest.mark.benchmark(group="history")
def test_segment_only_10k(benchmark: Any, history: tuple[str, Any]) -> None:
    """Parsing + turn segmentation alone."""
    fmt, wire = history
    segment_turns(wire)
    seg = benchmark(lambda: segment_turns(to_canonical(wire)))
    assert len(seg.turns) > 900
    _info(benchmark, fmt, wire)


@pytest.mark.benchmark(group="history")
def test_turn_limit_trim_10k(benchmark: Any, history: tuple[str, Any]) -> None:
    """trim to the default 50 turns."""
    fmt, wire = history
    bus = EventBus()
    trim_history(wire, max_turns=50, bus=bus)
    res = benchmark(trim_history, wire, max_turns=50, bus=bus)
    assert res.event.kept_turns == 50
    _info(benchmark, fmt, wire)


@pytest.mark.benchmark(group="history")
def test_fifo_append_and_evict_10k(benchmark: Any, history: tuple[str, Any]) -> None:
    """Build an EvictingHistory of 10k messages and evict to 8,000 tokens."""
    fmt, wire = history
    msgs = wire if isinstance(wire, list) else wire["messages"]
    fifo = [m for m in msgs if m["role"] != "system"]

    def run() -> int:
        h = EvictingHistory(fifo, format=fmt, bus=EventBus())
        return len(h.evict_old_messages(prompt_overhead=500))

    run()
    assert benchmark(run) > 0
    _info(benchmark, fmt, wire)


@pytest.mark.benchmark(group="history")
def test_yardstick_json_roundtrip_10k(benchmark: Any, history: tuple[str, Any]) -> None:
    """Not glyphfold: json.loads(json.dumps(history)), to read the figures above as ratios."""
    import json

    fmt, wire = history
    out = benchmark(lambda: json.loads(json.dumps(wire)))
    assert out == wire
    _info(benchmark, fmt, wire)
