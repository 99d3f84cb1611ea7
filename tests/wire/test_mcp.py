"""MCP and server-tool blocks are tool results: elided and stripped, never left opaque."""

from __future__ import annotations

import copy
import json

import pytest
from pydantic import TypeAdapter
from sdk_mocks import ANTHROPIC_REPLY, Capture, anthropic_client, send_responses
from wire_samples import PNG_B64, big_text, responses_history

import glyphfold
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import ToolCall, ToolResult
from glyphfold.compaction.history.validate import find_violations


def mcp_history(turns: int = 6, chars: int = 12_000) -> dict:
    """An Anthropic history whose tools are MCP servers and server-side web search."""
    msgs: list = [{"role": "user", "content": "Task: research the helpers API."}]
    for t in range(turns):
        if t:
            msgs.append({"role": "user", "content": f"Go on with part {t}."})
        content: list = [
            {"type": "text", "text": f"Looking up part {t}."},
            {
                "type": "mcp_tool_use",
                "id": f"mcptoolu_{t}",
                "name": "read_docs",
                "server_name": "docs",
                "input": {"page": t},
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": f"mcptoolu_{t}",
                "is_error": False,
                "content": [{"type": "text", "text": big_text(t, chars)}],
            },
        ]
        if t % 2 == 0:
            content += [
                {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{t}",
                    "name": "web_search",
                    "input": {"query": f"helpers part {t}"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": f"srvtoolu_{t}",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": f"https://docs.example.org/helpers/part-{t}/section-{k}",
                            "title": f"Helpers part {t}, section {k}: the value helpers explained",
                            "encrypted_content": "Eq" + "A" * 1500,
                            "page_age": "1 day",
                        }
                        for k in range(8)
                    ],
                },
            ]
        if t == 1:  # an MCP result carrying a screenshot
            content[2]["content"].append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                }
            )
        content.append({"type": "text", "text": f"Part {t} done."})
        msgs.append({"role": "assistant", "content": content})
    msgs.append({"role": "user", "content": "Summarise."})
    return {"model": "claude-test", "max_tokens": 1024, "messages": msgs}


def test_mcp_blocks_parse_as_tool_calls_and_results():
    h = to_canonical(mcp_history())
    assistant = h.messages[1]
    kinds = [type(b).__name__ for b in assistant.blocks]
    assert kinds == ["Text", "ToolCall", "ToolResult", "ToolCall", "ToolResult", "Text"]
    web = assistant.blocks[4]
    assert isinstance(web, ToolResult) and "Helpers part 0, section 1" in web.content[0].text
    assert find_violations(h) == []


def test_shake_elides_an_mcp_history():
    """Today's complaint: shake saved 0 tokens on an MCP history."""
    body = mcp_history()
    before = copy.deepcopy(body)
    r = glyphfold.shake(body)
    assert r.tokens_before > 18_000
    assert r.tokens_after < r.tokens_before * 0.5
    assert body == before
    out = r.messages
    assert find_violations(out) == []
    text = json.dumps(out)
    assert "[elided:" in text
    assert "[image removed" in text  # the MCP screenshot was stripped like any tool image
    # the newest results stay verbatim
    last = out["messages"][-2]["content"]
    assert last[2]["type"] == "mcp_tool_result" and "[elided" not in json.dumps(last[2])


def test_elided_server_results_serialise_as_text_with_their_call():
    out = glyphfold.shake(mcp_history()).messages
    first = out["messages"][1]["content"]
    types = [b["type"] for b in first]
    # the old web search pair became text (the API takes only its own result shapes)
    assert "server_tool_use" not in types and "web_search_tool_result" not in types
    assert types.count("mcp_tool_result") == 1
    texts = [b["text"] for b in first if b["type"] == "text"]
    assert any(t.startswith("[web_search ") for t in texts)  # the call, as text
    assert any(t.startswith("[elided: web_search") for t in texts)  # its result's stub


def test_the_anthropic_sdk_builds_the_shaken_request():
    from anthropic.types.beta import BetaMessageParam

    out = glyphfold.shake(mcp_history()).messages
    adapter = TypeAdapter(list[BetaMessageParam])
    adapter.validate_python(out["messages"])
    cap = Capture(ANTHROPIC_REPLY)
    anthropic_client(cap).beta.messages.create(**out)
    assert cap.bodies[-1]["messages"] == json.loads(json.dumps(out["messages"]))


@pytest.fixture(scope="module")
def responses_body():
    return responses_history(turns=6, chars=8000)


def test_responses_mcp_call_output_is_elided(responses_body):
    from openai.types.responses import ResponseInputParam

    r = glyphfold.shake(responses_body)
    items = r.messages["input"]
    mcp = [i for i in items if i.get("type") == "mcp_call"]
    assert mcp and mcp[0]["output"].startswith("[elided:")
    assert mcp[-1]["output"] == next(
        i for i in responses_body["input"] if i.get("id") == mcp[-1]["id"]
    )["output"] or mcp[-1]["output"].startswith("[elided:")
    h = to_canonical(r.messages)
    calls = [b for m in h.messages for b in m.blocks if isinstance(b, ToolCall)]
    assert any(c.raw.get("type") == "mcp_call" for c in calls)
    known = [i for i in items if i.get("type") != "future_item"]
    TypeAdapter(ResponseInputParam).validate_python(known)
    send_responses({**r.messages, "input": known})
