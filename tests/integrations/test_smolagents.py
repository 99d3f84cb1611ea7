"""smolagents' own ToolCallingAgent loop, offline (a scripted smolagents Model), compacted."""

from __future__ import annotations

import json

import pytest
from adapter_plan import BUDGET, RUNGS, rerendered, snapshots, tool_output

pytest.importorskip("smolagents")
from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

from glyphfold.integrations.smolagents import GlyphfoldModel, from_openai, to_openai

STEPS = 20


class ScriptedModel(Model):
    """Calls read_file STEPS times, then final_answer; records every request."""

    def __init__(self) -> None:
        super().__init__(model_id="gpt-5")
        self.received: list[list[ChatMessage]] = []

    def generate(
        self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw
    ):
        self.received.append(list(messages))
        k = len(self.received)
        name, args = ("read_file", {"k": k}) if k <= STEPS else ("final_answer", {"answer": "done"})
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
    return tool_output(k)


@pytest.fixture(scope="module")
def run():
    model = ScriptedModel()
    results: list = []
    # low=0.6: this small budget leaves room for pages only above the 0.4 default target
    wrapped = GlyphfoldModel(model, budget=BUDGET, rungs=RUNGS, low=0.6, on_compact=results.append)
    agent = ToolCallingAgent(
        tools=[read_file], model=wrapped, max_steps=STEPS + 5, verbosity_level=0
    )
    out = agent.run("Read parts 1-20 of the project, then answer done.")
    return model, wrapped, agent, results, out


def test_the_loop_runs_to_the_end(run):
    model, _, agent, _, out = run
    assert out == "done"
    assert len(model.received) == STEPS + 1
    assert len(agent.memory.steps) >= STEPS  # smolagents' own memory is whole


def test_the_model_receives_pages_within_the_budget(run):
    model, wrapped, _, results, _ = run
    assert snapshots(results) >= 1
    last = model.received[-1]
    images = [
        p
        for m in last
        if isinstance(m.content, list)
        for p in m.content
        if p.get("type") == "image_url"
    ]
    assert images and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert wrapped.last is not None and wrapped.last.tokens <= BUDGET
    assert "x_glyphfold" not in json.dumps([m.content for m in last], default=str)


def test_compacts_a_few_times_and_rerenders_from_source(run):
    _, wrapped, _, results, _ = run
    assert 2 <= len(results) <= STEPS // 4  # compact, then append for several steps
    assert wrapped.compactor.compactions == len(results)
    assert rerendered(results)


def test_the_pages_stay_put_between_compactions(run):
    """Between two compactions each request begins with the previous one (prompt cache)."""
    model, _, _, _, _ = run
    appended = 0
    for a, b in zip(model.received, model.received[1:], strict=False):
        if len(b) > len(a) and [m.content for m in b[: len(a)]] == [m.content for m in a]:
            appended += 1
    assert appended >= STEPS // 2


def test_messages_round_trip():
    msgs = [
        ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text": "sys"}]),
        ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "task"}]),
        ChatMessage(role=MessageRole.ASSISTANT, content=[{"type": "text", "text": "thinking"}]),
        ChatMessage(
            role=MessageRole.TOOL_CALL, content=[{"type": "text", "text": "Calling tools:"}]
        ),
        ChatMessage(
            role=MessageRole.TOOL_RESPONSE, content=[{"type": "text", "text": "Observation"}]
        ),
    ]
    wire = to_openai(msgs)
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "assistant", "tool"]
    back = from_openai(wire)
    assert [(m.role, m.content) for m in back] == [(m.role, m.content) for m in msgs]


def test_a_misspelt_option_fails_at_construction():
    from glyphfold.errors import InputError

    with pytest.raises(InputError, match="did you mean low="):
        GlyphfoldModel(ScriptedModel(), budget=BUDGET, lowe=0.5)


def _step_messages(k: int, output: str) -> list:
    call = ChatMessageToolCall(
        function=ChatMessageToolCallFunction(name="read_file", arguments={"path": f"m{k}.py"}),
        id=f"call_{k}",
        type="function",
    )
    text = "Calling tools:\n" + str(
        [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": "read_file", "arguments": {"path": f"m{k}.py"}},
            }
        ]
    )
    return [
        ChatMessage(role=MessageRole.TOOL_CALL, content=[{"type": "text", "text": text}]),
        ChatMessage(
            role=MessageRole.TOOL_RESPONSE,
            content=[{"type": "text", "text": f"Observation:\n{output}"}],
        ),
    ]


def test_a_step_maps_to_its_own_tool_call_and_back():
    """Issue 19: the ladder sees smolagents' file read as a file read (name, arguments,
    id), as in a plain Chat Completions loop; the text goes back as smolagents wrote it."""
    msgs = [
        ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text": "sys"}]),
        ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "task"}]),
        *_step_messages(0, "x = 1"),
    ]
    wire = to_openai(msgs)
    (call,) = wire[2]["tool_calls"]
    assert call["id"] == "call_0" and call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "m0.py"}
    assert wire[3] == {"role": "tool", "tool_call_id": "call_0", "content": "Observation:\nx = 1"}
    back = from_openai(wire)
    assert [(m.role, m.content) for m in back] == [(m.role, m.content) for m in msgs]


def test_compacts_as_the_plain_loop_does():
    """The same steps through the smolagents mapping and as a plain Chat Completions
    history: the ladder takes the same rungs (file reads go to the pages, not elided)."""
    import glyphfold

    n = 14
    msgs = [
        ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text": "sys"}]),
        ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "task"}]),
    ]
    plain = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for k in range(n):
        out = tool_output(k, 6_000)
        msgs += _step_messages(k, out)
        args = json.dumps({"path": f"m{k}.py"})
        plain += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{k}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": args},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{k}", "content": f"Observation:\n{out}"},
        ]
    budget = glyphfold.estimate_history_tokens(plain, profile="openai") // 2
    a = glyphfold.compact(to_openai(msgs), budget=budget, profile="openai")
    b = glyphfold.compact(plain, budget=budget, profile="openai")
    assert [e.rung for e in a.ledger] == [e.rung for e in b.ledger]
    assert "[elided: smolagents_step" not in json.dumps(a.messages)


def test_a_shortened_call_is_written_back_as_sent():
    """When the ladder stubs a call's long argument, the text smolagents sends says so
    (what is priced is what is sent)."""
    msgs = _step_messages(0, "ok")
    wire = to_openai(msgs)
    stub = json.dumps({"path": "[elided: read_file.path, 9 chars, sha1 abc]"})
    wire[0]["tool_calls"][0]["function"]["arguments"] = stub
    text = from_openai(wire)[0].content[0]["text"]
    assert text.startswith("Calling tools:\n") and "[elided: read_file.path" in text
    assert "'id': 'call_0'" in text
