"""The Agents SDK's own Runner loop, offline (agents.testing.ScriptedModel), with the filter."""

from __future__ import annotations

import asyncio
import json

import pytest
from adapter_plan import BUDGET, PLAN, RUNGS, TRIGGER, rerendered, snapshots, tool_output

agents = pytest.importorskip("agents")
from agents import Agent, RunConfig, Runner, function_tool, handoff  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from glyphfold.integrations.openai_agents import (  # noqa: E402
    GlyphfoldInputFilter,
    glyphfold_handoff_filter,
)


@function_tool
def read_file(k: int) -> str:
    """Read part k of the project."""
    return tool_output(k)


def _script() -> list:
    steps = []
    k = 0
    for t, n in enumerate(PLAN):
        for _ in range(n):
            steps.append([function_call("read_file", {"k": k}, call_id=f"call_{k}")])
            k += 1
        steps.append([assistant_message(f"Turn {t} done.", item_id=f"msg_{t}")])
    return steps


@pytest.fixture(scope="module")
def run():
    model = ScriptedModel(_script())
    agent = Agent(
        name="coder", instructions="You are a careful agent.", model=model, tools=[read_file]
    )
    results = []
    # snapshots first (every word kept, as pixels): elision alone would reach this budget
    filt = GlyphfoldInputFilter(
        budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, on_compact=results.append
    )
    config = RunConfig(call_model_input_filter=filt, tracing_disabled=True)

    async def conversation():
        items: list = []
        for t, n in enumerate(PLAN):
            items = [*items, {"role": "user", "content": f"Task step {t}: read the next parts."}]
            result = await Runner.run(agent, items, run_config=config, max_turns=n + 2)
            items = result.to_input_list()
        return items, result

    items, last = asyncio.run(conversation())
    return model, results, items, last


def test_the_loop_runs_to_the_end(run):
    model, _, items, last = run
    assert model.remaining_steps == 0
    assert last.final_output == f"Turn {len(PLAN) - 1} done."
    # the SDK's own history is complete and untouched by the filter
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    assert len(outputs) == sum(PLAN) >= 20


def test_the_model_receives_pages_and_no_glyphfold_keys(run):
    model, results, _, _ = run
    assert snapshots(results) >= 1
    late = model.calls[-1].input
    text = json.dumps(late, default=str)
    assert "x_glyphfold" not in text
    images = [
        p
        for i in late
        if isinstance(i, dict)
        for p in (i.get("content") or [])
        if isinstance(p, dict) and p.get("type") == "input_image"
    ]
    assert images and images[0]["image_url"].startswith("data:image/png;base64,")
    sizes = [glyphfold_estimate(c.input) for c in model.calls]
    assert max(sizes[-PLAN[-1] :]) <= TRIGGER  # once compacted, requests stay under the trigger


def glyphfold_estimate(items) -> int:
    import glyphfold

    return glyphfold.estimate_history_tokens(list(items), profile="openai", image_policy="all")


def test_a_second_compaction_rerenders_from_source(run):
    _, results, _, _ = run
    assert len(results) >= 2
    assert rerendered(results)


def test_handoff_filter_compacts_what_the_next_agent_receives():
    model = ScriptedModel(
        [
            *[[function_call("read_file", {"k": k}, call_id=f"c{k}")] for k in range(8)],
            [function_call("transfer_to_reviewer", {}, call_id="h1")],
            [assistant_message("Reviewed.")],
        ]
    )
    reviewer = Agent(name="reviewer", instructions="Review.", model=model)
    coder = Agent(
        name="coder",
        instructions="Code.",
        model=model,
        tools=[read_file],
        handoffs=[handoff(reviewer, input_filter=glyphfold_handoff_filter(budget=3_000))],
    )
    history = []
    for t in range(3):  # earlier turns give the handoff a middle to compact
        history += [
            {"role": "user", "content": f"Earlier request {t}"},
            {"type": "function_call", "call_id": f"old{t}", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"old{t}", "output": tool_output(100 + t)},
            {"role": "assistant", "content": f"Earlier answer {t}"},
        ]
    history.append({"role": "user", "content": "Read everything, then hand off."})
    result = asyncio.run(
        Runner.run(coder, history, run_config=RunConfig(tracing_disabled=True), max_turns=12)
    )
    assert result.final_output == "Reviewed."
    reviewer_input = model.calls[-1].input
    text = json.dumps(reviewer_input, default=str)
    assert "[elided:" in text or "input_image" in text
    assert "x_glyphfold" not in text
    assert glyphfold_estimate(reviewer_input) < glyphfold_estimate(model.calls[-2].input)


def test_a_second_handoff_rerenders_the_first_ones_pages_from_source():
    """Issue 23: two handoffs in one run, each compacting what the next agent receives.
    The first handoff's snapshot goes to the SDK provider-ready (no x_glyphfold: the model
    must not see it); the second must still find its source and render the pages again
    from text (SPEC §5.3), never treat the pages as a user's images."""
    model = ScriptedModel(
        [
            *[[function_call("read_file", {"k": k}, call_id=f"a{k}")] for k in range(8)],
            [function_call("transfer_to_reviewer", {}, call_id="h1")],
            *[[function_call("read_file", {"k": k}, call_id=f"b{k}")] for k in range(8, 16)],
            [function_call("transfer_to_fixer", {}, call_id="h2")],
            [assistant_message("Fixed.")],
        ]
    )
    results: list = []
    filt = glyphfold_handoff_filter(budget=3_000, rungs=RUNGS, on_compact=results.append)
    fixer = Agent(name="fixer", instructions="Fix.", model=model)
    reviewer = Agent(
        name="reviewer",
        instructions="Review.",
        model=model,
        tools=[read_file],
        handoffs=[handoff(fixer, input_filter=filt)],
    )
    coder = Agent(
        name="coder",
        instructions="Code.",
        model=model,
        tools=[read_file],
        handoffs=[handoff(reviewer, input_filter=filt)],
    )
    result = asyncio.run(
        Runner.run(
            coder, "Read, review, fix.", run_config=RunConfig(tracing_disabled=True), max_turns=30
        )
    )
    assert result.final_output == "Fixed."
    assert len(results) == 2 and snapshots(results) == 2
    assert rerendered(results[1:])  # the second pass met the first one's pages, with source
    for call in model.calls:  # the model never sees glyphfold's keys
        assert "x_glyphfold" not in json.dumps(call.input, default=str)
