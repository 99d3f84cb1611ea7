"""LangChain v1 create_agent and a LangGraph graph, offline (GenericFakeChatModel), compacted."""

from __future__ import annotations

import asyncio
import json

import pytest
from adapter_plan import (
    BUDGET,
    PLAN,
    RUNGS,
    TRIGGER,
    kept_or_merged,
    rerendered,
    snapshots,
    tool_output,
)

pytest.importorskip("langchain")
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import ScriptedChat

import glyphfold
from glyphfold.integrations.langchain import (
    GlyphfoldMiddleware,
    from_history,
    glyphfold_pre_model_hook,
    to_history,
    tool_schemas,
)


@tool
def read_file(k: int) -> str:
    """Read part k of the project."""
    return tool_output(k)


def _script():
    out = []
    k = 0
    for t, n in enumerate(PLAN):
        for _ in range(n):
            out.append(
                AIMessage(
                    content="", tool_calls=[{"id": f"c{k}", "name": "read_file", "args": {"k": k}}]
                )
            )
            k += 1
        out.append(AIMessage(content=f"Turn {t} done."))
    return out


def _conversation(agent, *, run_async: bool):
    config = {"configurable": {"thread_id": "t1"}, "recursion_limit": 100}
    state = None
    for t in range(len(PLAN)):
        update = {"messages": [HumanMessage(content=f"Task step {t}: read the next parts.")]}
        if run_async:
            state = asyncio.run(agent.ainvoke(update, config))
        else:
            state = agent.invoke(update, config)
    return state


@pytest.fixture(
    scope="module",
    params=[("sync", "state"), ("async", "state"), ("sync", "request"), ("async", "request")],
    ids=lambda p: "-".join(p),
)
def run(request):
    how, mode = request.param
    model = ScriptedChat(messages=iter(_script()))
    results = []
    middleware = GlyphfoldMiddleware(
        budget=BUDGET,
        trigger=TRIGGER,
        rungs=RUNGS,
        profile="openai",
        on_compact=results.append,
        mode=mode,
    )
    agent = create_agent(model, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
    state = _conversation(agent, run_async=how == "async")
    state["mode"] = mode
    return model, results, state


def _pages(messages) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m.content, list)
        for p in m.content
        if isinstance(p, dict) and p.get("type") == "image_url"
    )


def test_the_agent_loop_runs_to_the_end(run):
    model, _, state = run
    assert state["messages"][-1].content == f"Turn {len(PLAN) - 1} done."
    assert len(model.received) == sum(PLAN) + len(PLAN)


def test_the_model_receives_pages(run):
    model, results, _ = run
    assert snapshots(results) >= 1
    assert _pages(model.received[-1]) >= 1
    sizes = [
        glyphfold.estimate_history_tokens(to_history(r), profile="openai", image_policy="all")
        for r in model.received
    ]
    assert max(sizes[-3:]) <= TRIGGER


def test_a_second_compaction_rerenders_from_source(run):
    _, results, state = run
    if state["mode"] == "request":
        # the compactor meets the pages it sent: kept frozen, or merged from source
        assert len(results) >= 2 and kept_or_merged(results)
        return
    assert len(results) >= 2 and rerendered(results)
    snaps = [
        m
        for m in state["messages"]
        if (m.response_metadata or {}).get("x_glyphfold", {}).get("kind") == "snapshot"
    ]
    assert snaps  # the source text lives in the state, where the next pass finds it
    assert snaps[0].response_metadata["x_glyphfold"]["source"]


def test_request_mode_leaves_the_state_whole(run):
    """mode='request' (the default, issue 19): only what is sent is compacted."""
    model, results, state = run
    if state["mode"] != "request":
        pytest.skip("state mode rewrites the state")
    assert len(results) >= 2  # it compacted, more than once
    assert len(state["messages"]) == sum(PLAN) * 2 + len(PLAN) * 2  # every message kept
    assert not any("x_glyphfold" in (m.response_metadata or {}) for m in state["messages"])
    assert _pages(model.received[-1]) >= 1  # while the model received pages
    assert _pages(state["messages"]) == 0


def test_same_compactions_and_requests_as_a_plain_loop(run):
    """The middleware sends what a plain Compactor loop over the same histories sends,
    with the same number of compactions (issue 19)."""
    model, results, state = run
    if state["mode"] != "request":
        pytest.skip("state mode compacts the rewritten state, not the thread")
    msgs = state["messages"]
    inputs = [msgs[:i] for i, m in enumerate(msgs) if isinstance(m, AIMessage)]
    assert len(inputs) == len(model.received)
    plain = glyphfold.Compactor(TRIGGER, low=BUDGET / TRIGGER, rungs=RUNGS, profile="openai")
    tools = tool_schemas([read_file])
    fits = [plain(to_history(x), tools=tools) for x in inputs]
    assert sum(f.compactions for f in fits) == len(results) >= 2
    assert [f.action for f in fits].count("append") > len(results)  # mostly appended
    for got, f in zip(model.received, fits, strict=True):
        assert [m.content for m in got] == [m.content for m in from_history(f.compacted)]


def test_mode_is_checked():
    with pytest.raises(glyphfold.InputError, match="mode must be 'request'"):
        GlyphfoldMiddleware(budget=BUDGET, mode="thread")
    with pytest.raises(glyphfold.InputError, match="mode must be 'request'"):
        glyphfold_pre_model_hook(budget=BUDGET, mode="both")


def test_unchanged_messages_are_the_same_objects():
    msgs = [HumanMessage(content="hi", id="h1"), AIMessage(content="yo", id="a1")]
    assert all(a is b for a, b in zip(from_history(to_history(msgs)), msgs, strict=True))


def _react_graph(model, hook):
    from langgraph.prebuilt import create_react_agent

    with pytest.warns(Warning):  # create_react_agent is deprecated in favour of create_agent
        return create_react_agent(
            model, [read_file], pre_model_hook=hook, checkpointer=InMemorySaver()
        )


def test_langgraph_pre_model_hook():
    from langgraph.prebuilt import create_react_agent

    model = ScriptedChat(messages=iter(_script()))
    hook = glyphfold_pre_model_hook(budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, profile="openai")
    with pytest.warns(Warning):  # create_react_agent is deprecated in favour of create_agent
        agent = create_react_agent(
            model, [read_file], pre_model_hook=hook, checkpointer=InMemorySaver()
        )
    state = _conversation(agent, run_async=False)
    assert state["messages"][-1].content == f"Turn {len(PLAN) - 1} done."
    assert _pages(model.received[-1]) >= 1
    assert "x_glyphfold" not in json.dumps([m.content for m in model.received[-1]], default=str)
    # mode="request" (the default): llm_input_messages, the state keeps every message
    assert len(state["messages"]) == 2 * sum(PLAN) + 2 * len(PLAN)
    assert _pages(state["messages"]) == 0


def test_langgraph_pre_model_hook_state_mode():
    model = ScriptedChat(messages=iter(_script()))
    hook = glyphfold_pre_model_hook(
        budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, profile="openai", mode="state"
    )
    graph = _react_graph(model, hook)
    state = _conversation(graph, run_async=False)
    assert state["messages"][-1].content == f"Turn {len(PLAN) - 1} done."
    assert len(state["messages"]) < 2 * sum(PLAN) + 2 * len(PLAN)  # the state was rewritten
    assert _pages(state["messages"]) >= 1
