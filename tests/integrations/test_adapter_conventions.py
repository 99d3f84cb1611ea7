"""Adapters a framework user can forget about (issue 23): options checked at construction,
each provider's conventions (OpenAI ``detail``, Anthropic ``cache_control``), the profile of
the model the framework calls, tool schemas in the trigger, one memory per conversation.

Every loop here is the framework's own, offline: the official provider SDKs over
``httpx.MockTransport`` (http_fakes.py) or the framework's scripted model.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from adapter_plan import BUDGET, RUNGS, TRIGGER, tool_output
from http_fakes import ScriptedAPI, anthropic_reply, chat_reply, responses_reply, sdk_http

import glyphfold
from glyphfold.errors import InputError
from glyphfold.integrations.model_profile import profile_for_model, profile_for_name
from glyphfold.integrations.policy import CompactionPolicy

# ------------------------------------------------------------------ options


def _constructors():
    out = [("CompactionPolicy", lambda **kw: CompactionPolicy(**kw))]
    try:
        from glyphfold.integrations import langchain as lc

        out += [
            ("GlyphfoldMiddleware", lambda **kw: lc.GlyphfoldMiddleware(**kw)),
            ("glyphfold_pre_model_hook", lambda **kw: lc.glyphfold_pre_model_hook(**kw)),
        ]
    except ImportError:
        pass
    try:
        from glyphfold.integrations import openai_agents as oa

        out += [
            ("GlyphfoldInputFilter", lambda **kw: oa.GlyphfoldInputFilter(**kw)),
            ("glyphfold_handoff_filter", lambda **kw: oa.glyphfold_handoff_filter(**kw)),
        ]
    except ImportError:
        pass
    try:
        from glyphfold.integrations import pydantic_ai as pa

        out += [("GlyphfoldHistory", lambda **kw: pa.GlyphfoldHistory(**kw))]
    except ImportError:
        pass
    return out


@pytest.mark.parametrize(
    "make", [m for _, m in _constructors()], ids=[n for n, _ in _constructors()]
)
def test_a_misspelt_option_fails_at_construction(make):
    with pytest.raises(InputError, match=r"trigerr=.*did you mean trigger=\?"):
        make(budget=6000, trigerr=9000)
    with pytest.raises(InputError, match="dry_run= cannot be passed"):
        make(budget=6000, dry_run=True)
    make(budget=6000, trigger=9000, rungs=("elide", "trim"), reserve=10)  # valid ones pass


# ------------------------------------------------------------------ profile from the model


def test_profile_from_model_names():
    assert profile_for_name("claude-sonnet-4-5") == "anthropic"
    assert profile_for_name("anthropic/claude-opus-4-7") == "anthropic-hires"
    assert profile_for_name("openai:gpt-5") == "openai"
    assert profile_for_name("gpt-4.1-mini") == "openai-tile"
    assert profile_for_name("gemini-2.5-flash") == "gemini-2"
    assert profile_for_name("gemini-3-pro") == "gemini"
    assert profile_for_name("llama-3") is None


def test_profile_from_framework_models():
    lc_anthropic = pytest.importorskip("langchain_anthropic")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    assert profile_for_model(lc_anthropic.ChatAnthropic(model="claude-sonnet-4-5", api_key="x"))
    assert profile_for_model(lc_anthropic.ChatAnthropic(model="x-1", api_key="x")) == "anthropic"
    model = OpenAIChatModel("my-finetune", provider=OpenAIProvider(api_key="x"))
    assert profile_for_model(model) == "openai"


def test_an_unknown_model_falls_back_with_a_warning():
    policy = CompactionPolicy(budget=1000)

    class HomeMadeModel:
        model_name = "mystery-1"

    with pytest.warns(UserWarning, match="HomeMadeModel 'mystery-1'.*'anthropic'"):
        assert policy.resolve_profile(HomeMadeModel()) == "anthropic"
    assert CompactionPolicy(budget=1000, profile="openai").resolve_profile(HomeMadeModel()) == (
        "openai"
    )


# ------------------------------------------------------------------ LangChain + ChatAnthropic


def _lc_tool():
    from langchain_core.tools import tool

    @tool
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return tool_output(k)

    return read_file


def _chat_anthropic(api: ScriptedAPI):
    anthropic = pytest.importorskip("anthropic")
    lc_anthropic = pytest.importorskip("langchain_anthropic")
    model = lc_anthropic.ChatAnthropic(
        model="claude-sonnet-4-5", api_key="x", max_retries=0, max_tokens=1024
    )
    http = sdk_http(anthropic)
    client = anthropic.Anthropic(
        api_key="x", http_client=http.Client(transport=api.transport(anthropic_reply, http))
    )
    model.__dict__["_client"] = client  # the SDK over a mock transport
    return model


def test_langchain_chat_anthropic_gets_a_cache_control_on_the_snapshot():
    pytest.importorskip("langchain")
    from langchain.agents import create_agent

    from glyphfold.integrations.langchain import GlyphfoldMiddleware

    api = ScriptedAPI([("call", "read_file", {"k": k}) for k in range(24)] + [("text", "done")])
    results = []
    middleware = GlyphfoldMiddleware(
        budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, on_compact=results.append
    )  # no profile=: ChatAnthropic says "anthropic"
    agent = create_agent(_chat_anthropic(api), [_lc_tool()], middleware=[middleware])
    state = agent.invoke({"messages": [{"role": "user", "content": "Read parts 0-23."}]})
    assert state["messages"][-1].content == "done"
    assert results and results[-1].pages
    page = results[-1].pages[0]  # priced as Anthropic prices it: the model's profile
    assert page.image_tokens == glyphfold.get_profile("anthropic").cost(page.width, page.height)
    marked = 0
    for body in api.bodies[-5:]:
        images = [
            p
            for m in body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "image"
        ]
        assert images, "the snapshot's pages reach Anthropic"
        marked += sum(1 for p in images if "cache_control" in p)
    assert marked == 5  # one breakpoint on the snapshot in every request after compaction


# ~2k tokens of tool schema; 7 earlier steps are ~3.6k tokens: under the 5k trigger alone,
# over it with the schema; compacted to the 4k budget less the schema's tokens
TOOL_DOC = "Search the project. " + "Very long usage notes. " * 350
SCHEMA_OPTIONS = {"budget": 4_000, "trigger": 5_000, "profile": "openai"}


def _lc_earlier_steps():
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out = [HumanMessage(content="Look through the project.")]
    for k in range(7):
        call = {"id": f"r{k}", "name": "search", "args": {"q": str(k)}}
        out += [
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(tool_output(k), tool_call_id=f"r{k}"),
        ]
    return out


def test_langchain_tool_schemas_count_in_the_trigger():
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent
    from lc_fakes import ScriptedChat

    from glyphfold.integrations.langchain import GlyphfoldMiddleware, glyphfold_pre_model_hook

    @tool(description=TOOL_DOC)
    def search(q: str) -> str:
        return "no hits"

    def run(make_agent):
        calls = [{"id": f"s{k}", "name": "search", "args": {"q": "x"}} for k in range(3)]
        script = [AIMessage(content="", tool_calls=[c]) for c in calls]
        model = ScriptedChat(messages=iter([*script, AIMessage(content="ok")]))
        make_agent(model).invoke({"messages": _lc_earlier_steps()}, {"recursion_limit": 20})
        return model

    results: list = []
    kw = {**SCHEMA_OPTIONS, "on_compact": results.append}
    run(lambda m: create_agent(m, [search], middleware=[GlyphfoldMiddleware(**kw)]))
    assert results, "messages under the trigger + the tool schema over it: compacted"
    assert results[0].target <= 4_000 - 1_900  # the schema's tokens are kept free

    results.clear()
    hook = glyphfold_pre_model_hook(tools=[search], **kw)
    with pytest.warns(Warning):  # create_react_agent is deprecated in favour of create_agent
        run(lambda m: create_react_agent(m, [search], pre_model_hook=hook))
    assert results
    results.clear()
    plain = glyphfold_pre_model_hook(**kw)  # the schema not given: never passes the trigger
    with pytest.warns(Warning):
        run(lambda m: create_react_agent(m, [search], pre_model_hook=plain))
    assert not results


# ------------------------------------------------------------------ pydantic-ai + OpenAI


@pytest.mark.parametrize("api_kind", ["chat", "responses"])
def test_pydantic_ai_sends_pages_to_openai_at_detail_high(api_kind):
    pytest.importorskip("pydantic_ai")
    openai = pytest.importorskip("openai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from glyphfold.integrations.pydantic_ai import GlyphfoldHistory

    api = ScriptedAPI([("call", "read_file", {"k": k}) for k in range(20)] + [("text", "done")])
    build = chat_reply if api_kind == "chat" else responses_reply
    http = sdk_http(openai)
    client = openai.AsyncOpenAI(
        api_key="x", http_client=http.AsyncClient(transport=api.transport(build, http))
    )
    cls = OpenAIChatModel if api_kind == "chat" else OpenAIResponsesModel
    model = cls("gpt-5", provider=OpenAIProvider(openai_client=client))
    results = []
    processor = GlyphfoldHistory(
        budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, on_compact=results.append
    )
    agent = Agent(model, capabilities=[processor.capability()])

    @agent.tool_plain
    def read_file(k: int) -> str:
        """Read part k of the project."""
        return tool_output(k)

    assert agent.run_sync("Read parts 0-19.").output == "done"
    assert results and results[-1].pages
    page = results[-1].pages[0]  # priced as OpenAI prices it: the model's profile
    assert page.image_tokens == glyphfold.get_profile("openai").cost(page.width, page.height)
    assert page.image_tokens != glyphfold.get_profile("anthropic").cost(page.width, page.height)
    text = json.dumps(api.bodies[-1])
    details = [d for d in ("high", "auto", "low") if f'"detail": "{d}"' in text]
    assert details == ["high"], text[:400]


# ------------------------------------------------------------------ Agents SDK


def _agents_conversation(name: str) -> list:
    items: list = [{"role": "user", "content": f"Conversation {name}: read everything."}]
    for k in range(20):
        items += [
            {
                "type": "function_call",
                "call_id": f"{name}{k}",
                "name": "read_file",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": f"{name}{k}", "output": tool_output(k)},
        ]
    return items


def _agents_setup(n_replies: int):
    pytest.importorskip("agents")
    from agents import Agent, RunConfig
    from agents.testing import ScriptedModel, assistant_message

    from glyphfold.integrations.openai_agents import GlyphfoldInputFilter

    model = ScriptedModel([[assistant_message(f"ok {k}")] for k in range(n_replies)])
    agent = Agent(name="coder", instructions="Code.", model=model)
    results: list = []
    filt = GlyphfoldInputFilter(
        budget=BUDGET, trigger=TRIGGER, rungs=RUNGS, on_compact=results.append
    )
    return agent, RunConfig(call_model_input_filter=filt, tracing_disabled=True), results


def test_agents_filter_keeps_one_memory_per_conversation():
    from agents import Runner

    agent, config, results = _agents_setup(6)
    convs = {"A": _agents_conversation("A"), "B": _agents_conversation("B")}

    async def main():
        for step in range(6):  # A, B, A, B, A, B
            name = "AB"[step % 2]
            result = await Runner.run(agent, convs[name], run_config=config)
            convs[name] = [*result.to_input_list(), {"role": "user", "content": f"next {step}"}]

    asyncio.run(main())
    assert len(results) == 2  # one compaction per conversation, then appends


def test_agents_filter_is_safe_for_concurrent_runs():
    from agents import Runner

    agent, config, results = _agents_setup(8)
    convs = {n: _agents_conversation(n) for n in "ABCD"}

    async def main():
        for step in range(2):
            outs = await asyncio.gather(
                *(Runner.run(agent, convs[n], run_config=config) for n in "ABCD")
            )
            for n, out in zip("ABCD", outs, strict=True):
                convs[n] = [*out.to_input_list(), {"role": "user", "content": f"next {step}"}]

    asyncio.run(main())
    assert len(results) == 4


def test_agents_handoff_filter_counts_the_receiving_agents_tools():
    pytest.importorskip("agents")
    from agents import Agent, function_tool

    from glyphfold.integrations.openai_agents import glyphfold_handoff_filter

    @function_tool(description_override=TOOL_DOC)
    def search(q: str) -> str:
        return "none"

    reviewer = Agent(name="reviewer", instructions="Review.", tools=[search])
    with_tools = glyphfold_handoff_filter(agent=reviewer, **SCHEMA_OPTIONS)
    without = glyphfold_handoff_filter(**SCHEMA_OPTIONS)

    class Data:  # what a handoff filter reads and calls
        input_history = tuple(_agents_conversation("H")[:15])  # the task + 7 steps
        pre_handoff_items = ()

        def clone(self, **kw):
            return kw

    data = Data()
    assert without(data) is data  # ~3.6k tokens alone: under the trigger
    out = with_tools(data)
    assert isinstance(out, dict)  # with the receiving agent's tools: compacted
    sent = glyphfold.estimate_history_tokens(
        list(out["input_history"]), profile="openai", image_policy="all"
    )
    assert sent <= 4_000 - 1_900
