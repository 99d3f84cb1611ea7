"""LlamaIndex's own FunctionAgent loop, offline (its MockFunctionCallingLLM), compacted."""

from __future__ import annotations

import asyncio
import json

import pytest
from adapter_plan import BUDGET, RUNGS, rerendered, snapshots, tool_output

pytest.importorskip("llama_index.core")
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from glyphfold.integrations.llamaindex import GlyphfoldLLM, from_openai, to_openai

STEPS = 20


class Script:
    """The model's side: read_file STEPS times, then a final answer; records its inputs."""

    def __init__(self) -> None:
        self.received: list[list[ChatMessage]] = []

    def __call__(self, messages, **kwargs):
        self.received.append(list(messages))
        k = len(self.received)
        if k <= STEPS:
            call = ToolCallBlock(tool_call_id=f"c{k}", tool_name="read_file", tool_kwargs={"k": k})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="done")


def read_file(k: int) -> str:
    """Read part k of the project."""
    return tool_output(k)


@pytest.fixture(scope="module", params=["plain", "streaming"])
def run(request):
    script = Script()
    llm = MockFunctionCallingLLM(response_generator=script)
    results: list = []
    wrapped = GlyphfoldLLM(
        llm, budget=BUDGET, rungs=RUNGS, profile="openai", on_compact=results.append
    )
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(fn=read_file)],
        llm=wrapped,
        system_prompt="You are a careful agent.",
        streaming=request.param == "streaming",
    )

    async def main():
        return await agent.run(
            "Read parts 1-20 of the project, then answer done.", max_iterations=60
        )

    out = asyncio.run(main())
    return script, wrapped, results, out


def test_the_loop_runs_to_the_end(run):
    script, _, _, out = run
    assert str(out.response.content) == "done"
    assert len(script.received) == STEPS + 1


def test_the_model_receives_pages_within_the_budget(run):
    script, wrapped, results, _ = run
    assert snapshots(results) >= 1
    last = script.received[-1]
    pages = [b for m in last for b in m.blocks if isinstance(b, ImageBlock)]
    assert pages and pages[0].detail == "high"
    assert wrapped.last is not None and wrapped.last.tokens <= BUDGET
    assert "x_glyphfold" not in json.dumps([m.model_dump(mode="json") for m in last], default=str)


def test_compacts_a_few_times_and_rerenders_from_source(run):
    _, wrapped, results, _ = run
    assert 2 <= len(results) <= STEPS // 4
    assert wrapped.compactor.compactions == len(results)
    assert rerendered(results)


def test_untouched_messages_are_the_agents_own_objects():
    msgs = [
        ChatMessage(role=MessageRole.SYSTEM, content="sys"),
        ChatMessage(role=MessageRole.USER, content="task"),
        ChatMessage(
            role=MessageRole.ASSISTANT,
            blocks=[
                ThinkingBlock(content="hmm"),
                ToolCallBlock(tool_call_id="c1", tool_name="read_file", tool_kwargs={"k": 1}),
            ],
        ),
        ChatMessage(
            role=MessageRole.TOOL,
            blocks=[TextBlock(text="out")],
            additional_kwargs={"tool_call_id": "c1"},
        ),
    ]
    wire = to_openai(msgs)
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool"]
    assert wire[2]["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"k": 1}'}
    back = from_openai(wire, msgs)
    assert all(a is b for a, b in zip(back, msgs, strict=True))  # the thinking block kept
    fresh = from_openai(wire)
    assert fresh[3].additional_kwargs == {"tool_call_id": "c1"}
    assert isinstance(fresh[2].blocks[-1], ToolCallBlock)


def test_a_misspelt_option_fails_at_construction():
    from glyphfold.errors import InputError

    with pytest.raises(InputError, match="did you mean budget="):
        GlyphfoldLLM(MockFunctionCallingLLM(), budgett=BUDGET)
