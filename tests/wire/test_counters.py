"""RequestCounter: the estimate by default, the providers' count-tokens endpoints on demand.

Each adapter runs against its SDK on a mock transport: the request the SDK builds is
checked (whole request: messages, system, tools, images; no x_glyphfold), nothing is sent.
"""

from __future__ import annotations

import pytest
from sdk_mocks import Capture, anthropic_client, bedrock_client, genai_client, openai_client
from wire_samples import bedrock_history

import glyphfold
from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.counters import (
    AnthropicRequestCounter,
    BedrockRequestCounter,
    EstimateRequestCounter,
    GeminiRequestCounter,
    OpenAIRequestCounter,
    RequestCounter,
    calibrated_budget,
)

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


@pytest.fixture(scope="module")
def compacted():
    """An OpenAI Chat history after compaction: it holds snapshot pages and x_glyphfold."""
    body = convert_history(bedrock_history(turns=10, chars=9000), to="openai")
    return glyphfold.compact(body, budget=6_000, profile="openai").messages


def _no_glyphfold_keys(x) -> bool:
    if isinstance(x, dict):
        return "x_glyphfold" not in x and all(_no_glyphfold_keys(v) for v in x.values())
    if isinstance(x, list):
        return all(_no_glyphfold_keys(v) for v in x)
    return True


def test_the_estimate_is_the_default_and_prices_tools_and_images(compacted):
    c = EstimateRequestCounter()
    assert isinstance(c, RequestCounter)
    bare = c.count_request(compacted)
    assert bare == glyphfold.estimate_history_tokens(compacted, image_policy="all")
    assert c.count_request(compacted, tools=TOOLS) > bare
    no_images = glyphfold.estimate_history_tokens(compacted, image_policy="spec")
    assert bare >= no_images


def test_anthropic_count_tokens(compacted):
    cap = Capture({"input_tokens": 4321})
    counter = AnthropicRequestCounter(anthropic_client(cap), model="claude-test")
    assert counter.count_request(compacted, tools=TOOLS) == 4321
    body = cap.bodies[-1]
    assert cap.paths[-1].endswith("/messages/count_tokens")
    assert body["model"] == "claude-test" and body["tools"] == TOOLS
    assert body["system"] == "You are a careful coding agent."
    assert any(
        b.get("type") == "image"
        for m in body["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )
    assert _no_glyphfold_keys(body)


def test_openai_responses_input_tokens_count(compacted):
    cap = Capture({"object": "response.input_tokens", "input_tokens": 987})
    counter = OpenAIRequestCounter(openai_client(cap), model="gpt-5")
    tools = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    assert counter.count_request(compacted, tools=tools) == 987
    body = cap.bodies[-1]
    assert cap.paths[-1].endswith("/responses/input_tokens")
    assert body["tools"] == tools
    images = [
        p
        for i in body["input"]
        for p in (i.get("content") or [])
        if isinstance(p, dict) and p.get("type") == "input_image"
    ]
    assert images and images[0]["image_url"].startswith("data:image/png;base64,")
    assert _no_glyphfold_keys(body)


def test_gemini_count_tokens_developer_api(compacted):
    cap = Capture({"totalTokens": 555})
    counter = GeminiRequestCounter(genai_client(cap), model="gemini-2.5-flash")
    assert counter.count_request(compacted, tools=[{"function_declarations": []}]) == 555
    body = cap.bodies[-1]
    assert cap.paths[-1].endswith(":countTokens")
    first = body["contents"][0]["parts"]
    assert first[0]["text"] == "You are a careful coding agent."  # system counted as text
    assert "function_declarations" in first[1]["text"]
    assert _no_glyphfold_keys(body)


def test_bedrock_count_tokens(compacted):
    sent: list = []
    client = bedrock_client({"inputTokens": 42}, "CountTokens", sent)
    counter = BedrockRequestCounter(client, model_id="anthropic.claude-sonnet-4")
    tools = [{"toolSpec": {"name": "read_file", "inputSchema": {"json": {"type": "object"}}}}]
    assert counter.count_request(compacted, tools=tools) == 42
    converse = sent[-1]["input"]["converse"]
    assert converse["system"] == [{"text": "You are a careful coding agent."}]
    assert converse["toolConfig"] == {"tools": tools}
    assert _no_glyphfold_keys(converse)


def test_calibrated_budget(compacted):
    estimate = EstimateRequestCounter().count_request(compacted)

    class Doubling:
        def count_request(self, history, *, tools=None):
            return 2 * EstimateRequestCounter().count_request(history, tools=tools)

    assert calibrated_budget(compacted, 10_000, Doubling()) == 5_000
    assert calibrated_budget(compacted, estimate, EstimateRequestCounter()) == estimate
    with pytest.raises(glyphfold.InputError):
        calibrated_budget(compacted, 0, Doubling())


def test_a_framework_history_is_counted_without_its_own_part_objects():
    """pydantic-ai's thinking parts ride as Unknown blocks holding objects: never sent."""
    pm = pytest.importorskip("pydantic_ai.messages")
    from glyphfold.integrations.pydantic_ai import to_history

    h = to_history(
        [
            pm.ModelRequest(parts=[pm.UserPromptPart("hi")]),
            pm.ModelResponse(parts=[pm.ThinkingPart(content="hmm"), pm.TextPart("yo")]),
        ]
    )
    cap = Capture({"input_tokens": 7})
    assert AnthropicRequestCounter(anthropic_client(cap), model="m").count_request(h) == 7
    assert cap.bodies[-1]["messages"][1]["content"] == "yo"
