"""A second lossy pass cuts the OLDEST imaged steps first, through each adapter (issue 23).

SPEC §5.9 (words cut only at the last, oldest first), §5.10 (across a loop), §5.3
(pages are re-rendered from their source, never made from pages). Each framework's
own loop runs offline, its state kept by the adapter (and, where the framework keeps
the compacted messages, by the framework: the snapshot's source rides in its message
type's metadata). A one-page cap forces both compactions to cut words; the second
must merge the first's block from its source and cut the oldest steps first.
"""

from __future__ import annotations

import asyncio

import pytest
from adapter_plan import LOSSY_CASES, LOSSY_CHARS, LossyRecorder, check_oldest_first, tool_output

STEPS = 28


@pytest.fixture(params=list(LOSSY_CASES))
def case(request):
    """(a recorder with its page cap, the budget) of one scenario."""
    pages, budget = LOSSY_CASES[request.param]
    return LossyRecorder(pages), budget


def _read(k: int) -> str:
    return tool_output(k, LOSSY_CHARS)


def test_smolagents(case):
    pytest.importorskip("smolagents")
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )

    from glyphfold.integrations.smolagents import GlyphfoldModel

    class Scripted(Model):
        def __init__(self) -> None:
            super().__init__(model_id="gpt-5")
            self.n = 0

        def generate(self, messages, stop_sequences=None, response_format=None, **kw):
            self.n += 1
            k = self.n
            name, args = (
                ("read_file", {"k": k}) if k <= STEPS else ("final_answer", {"answer": "done"})
            )
            call = ChatMessageToolCall(
                function=ChatMessageToolCallFunction(name=name, arguments=args),
                id=f"c{k}",
                type="function",
            )
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    @tool
    def read_file(k: int) -> str:
        """Read part k of the project.

        Args:
            k: which part
        """
        return _read(k)

    rec, budget = case
    model = GlyphfoldModel(Scripted(), budget=budget, rungs=rec.rungs(), on_compact=rec.on_compact)
    agent = ToolCallingAgent(tools=[read_file], model=model, max_steps=STEPS + 5, verbosity_level=0)
    assert agent.run("Read parts 1-28, then answer done.") == "done"
    check_oldest_first(rec, list(range(1, STEPS + 1)))


def test_llamaindex(case):
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.tools import FunctionTool

    from glyphfold.integrations.llamaindex import GlyphfoldLLM

    n = [0]

    def script(messages, **kwargs):
        n[0] += 1
        k = n[0]
        if k <= STEPS:
            call = ToolCallBlock(tool_call_id=f"c{k}", tool_name="read_file", tool_kwargs={"k": k})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="done")

    def read_file(k: int) -> str:
        """Read part k of the project."""
        return _read(k)

    rec, budget = case
    llm = GlyphfoldLLM(
        MockFunctionCallingLLM(response_generator=script),
        budget=budget,
        rungs=rec.rungs(),
        profile="openai",
        on_compact=rec.on_compact,
    )
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(fn=read_file)], llm=llm, system_prompt="Be careful."
    )

    async def main():
        return await agent.run("Read parts 1-28, then answer done.", max_iterations=80)

    assert str(asyncio.run(main()).response.content) == "done"
    check_oldest_first(rec, list(range(1, STEPS + 1)))


def test_openai_agents(case):
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from glyphfold.integrations.openai_agents import GlyphfoldInputFilter

    @function_tool
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return _read(k)

    script = [[function_call("read_file", {"k": k}, call_id=f"c{k}")] for k in range(1, STEPS + 1)]
    model = ScriptedModel([*script, [assistant_message("done", item_id="m1")]])
    agent = Agent(name="coder", instructions="Be careful.", model=model, tools=[read_file])
    rec, budget = case
    filt = GlyphfoldInputFilter(budget=budget, rungs=rec.rungs(), on_compact=rec.on_compact)
    config = RunConfig(call_model_input_filter=filt, tracing_disabled=True)
    result = asyncio.run(
        Runner.run(agent, "Read parts 1-28, then answer done.", run_config=config, max_turns=40)
    )
    assert result.final_output == "done"
    check_oldest_first(rec, list(range(1, STEPS + 1)))


@pytest.mark.parametrize("as_capability", [True, False], ids=["capability", "processor"])
def test_pydantic_ai(as_capability, case):
    pytest.importorskip("pydantic_ai")
    import inspect

    from pydantic_ai import Agent
    from pydantic_ai import messages as pm
    from pydantic_ai.models.function import FunctionModel

    from glyphfold.integrations.pydantic_ai import GlyphfoldHistory

    if not as_capability and "history_processors" not in inspect.signature(Agent).parameters:
        pytest.skip("this pydantic-ai takes processors as capabilities only")
    n = [0]

    def script(messages, info):
        n[0] += 1
        k = n[0]
        if k <= STEPS:
            return pm.ModelResponse(
                parts=[pm.ToolCallPart("read_file", {"k": k}, tool_call_id=f"c{k}")]
            )
        return pm.ModelResponse(parts=[pm.TextPart("done")])

    script.__name__ = "script"
    rec, budget = case
    processor = GlyphfoldHistory(
        budget=budget, rungs=rec.rungs(), profile="openai", on_compact=rec.on_compact
    )
    kwargs = (
        {"capabilities": [processor.capability()]}
        if as_capability
        else {"history_processors": [processor]}
    )
    agent = Agent(FunctionModel(script), instructions="Be careful.", **kwargs)

    @agent.tool_plain
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return _read(k)

    assert agent.run_sync("Read parts 1-28, then answer done.").output == "done"
    check_oldest_first(rec, list(range(1, STEPS + 1)))


def _lc_script():
    from langchain_core.messages import AIMessage

    calls = [
        AIMessage(content="", tool_calls=[{"id": f"c{k}", "name": "read_file", "args": {"k": k}}])
        for k in range(1, STEPS + 1)
    ]
    return [*calls, AIMessage(content="done")]


@pytest.mark.parametrize("mode", ["request", "state"])
def test_langchain_create_agent(mode, case):
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from lc_fakes import ScriptedChat

    from glyphfold.integrations.langchain import GlyphfoldMiddleware

    @tool
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return _read(k)

    rec, budget = case
    middleware = GlyphfoldMiddleware(
        budget=budget, rungs=rec.rungs(), profile="openai", on_compact=rec.on_compact, mode=mode
    )
    model = ScriptedChat(messages=iter(_lc_script()))
    agent = create_agent(model, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}, "recursion_limit": 200}
    state = agent.invoke({"messages": [HumanMessage("Read parts 1-28, then answer done.")]}, config)
    assert state["messages"][-1].content == "done"
    check_oldest_first(rec, list(range(1, STEPS + 1)))


@pytest.mark.parametrize("mode", ["request", "state"])
def test_langgraph_pre_model_hook(mode, case):
    pytest.importorskip("langgraph")
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent
    from lc_fakes import ScriptedChat

    from glyphfold.integrations.langchain import glyphfold_pre_model_hook

    @tool
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return _read(k)

    rec, budget = case
    hook = glyphfold_pre_model_hook(
        budget=budget, rungs=rec.rungs(), profile="openai", on_compact=rec.on_compact, mode=mode
    )
    model = ScriptedChat(messages=iter(_lc_script()))
    with pytest.warns(Warning):  # create_react_agent is deprecated in favour of create_agent
        graph = create_react_agent(
            model, [read_file], pre_model_hook=hook, checkpointer=InMemorySaver()
        )
    config = {"configurable": {"thread_id": "t1"}, "recursion_limit": 200}
    state = graph.invoke({"messages": [HumanMessage("Read parts 1-28, then answer done.")]}, config)
    assert state["messages"][-1].content == "done"
    check_oldest_first(rec, list(range(1, STEPS + 1)))
