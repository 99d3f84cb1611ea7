"""pydantic-ai's own agent loop, offline (FunctionModel), with the history processor."""

from __future__ import annotations

import inspect

import pytest
from adapter_plan import BUDGET, PLAN, RUNGS, TRIGGER, rerendered, snapshots, tool_output

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

import glyphfold
from glyphfold.integrations.pydantic_ai import (
    GlyphfoldHistory,
    from_history,
    to_history,
)


class Script:
    """The model's side: PLAN[t] tool calls per turn, then a reply; records its inputs."""

    __name__ = "script"  # FunctionModel names itself after its function

    def __init__(self) -> None:
        self.received: list[list] = []
        self.turn = 0
        self.step = 0
        self.k = 0

    def __call__(self, messages: list, info: AgentInfo) -> pm.ModelResponse:
        self.received.append(list(messages))
        if self.step < PLAN[self.turn]:
            self.step += 1
            self.k += 1
            call = pm.ToolCallPart("read_file", {"k": self.k}, tool_call_id=f"c{self.k}")
            # a thinking part rides along, as reasoning models send it
            return pm.ModelResponse(parts=[pm.ThinkingPart(content=f"read {self.k}"), call])
        done = pm.TextPart(f"Turn {self.turn} done.")
        self.turn += 1
        self.step = 0
        return pm.ModelResponse(parts=[done])


def _agent(script, processor, *, as_capability: bool):
    kwargs = (
        {"capabilities": [processor.capability()]}
        if as_capability
        else {"history_processors": [processor]}
    )
    agent = Agent(FunctionModel(script), instructions="You are a careful agent.", **kwargs)

    @agent.tool_plain
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return tool_output(k)

    return agent


# pydantic-ai 2 takes history processors as a capability; 1.x as history_processors=
_MODES = ["capability"] + (
    ["history_processor"]
    if "history_processors" in inspect.signature(Agent.__init__).parameters
    else []
)


@pytest.fixture(scope="module", params=_MODES)
def run(request):
    script = Script()
    results = []
    processor = GlyphfoldHistory(
        budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, on_compact=results.append
    )
    agent = _agent(script, processor, as_capability=request.param == "capability")
    history = None
    for t in range(len(PLAN)):
        result = agent.run_sync(f"Task step {t}: read the next parts.", message_history=history)
        history = result.all_messages()
    return script, results, result, history


def _pages(messages) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if isinstance(p, pm.UserPromptPart) and not isinstance(p.content, str)
        for x in p.content
        if isinstance(x, pm.BinaryContent) and x.is_image
    )


def test_the_agent_loop_runs_to_the_end(run):
    script, _, result, _ = run
    assert result.output == f"Turn {len(PLAN) - 1} done."
    assert script.k == sum(PLAN) >= 20


def test_the_model_receives_pages(run):
    script, results, _, _ = run
    assert snapshots(results) >= 1
    assert _pages(script.received[-1]) >= 1
    size = glyphfold.estimate_history_tokens(to_history(script.received[-1]), image_policy="all")
    assert size <= TRIGGER


def test_a_second_compaction_rerenders_from_source(run):
    _, results, _, history = run
    assert len(results) >= 2 and rerendered(results)
    snaps = [
        m for m in history if (m.metadata or {}).get("x_glyphfold", {}).get("kind") == "snapshot"
    ]
    assert snaps and snaps[0].metadata["x_glyphfold"]["source"]


def test_thinking_and_compaction_parts_are_carried_through():
    history = [
        pm.ModelRequest(parts=[pm.UserPromptPart("hi")]),
        pm.ModelResponse(
            parts=[
                pm.ThinkingPart(content="hmm", signature="sig"),
                pm.CompactionPart(content="enc", provider_name="openai"),
                pm.TextPart("yo"),
            ]
        ),
    ]
    h = to_history(history)
    assert [type(b).__name__ for b in h.messages[1].blocks] == ["Unknown", "Unknown", "Text"]
    back = from_history(h)
    assert all(a is b for a, b in zip(back, history, strict=True))
