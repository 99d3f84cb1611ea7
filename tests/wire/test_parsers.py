"""Targeted parser behaviour of the new formats: ids, key spellings, envelopes, errors."""

from __future__ import annotations

import dataclasses

import pytest

import glyphfold
from glyphfold.compaction.history.messages import to_canonical, to_wire
from glyphfold.compaction.history.model import Text, ToolCall, ToolResult
from glyphfold.compaction.history.turns import pair_tool_calls, repair_orphans
from glyphfold.compaction.history.validate import find_violations

# --------------------------------------------------------------------------- Gemini


def test_gemini_calls_without_ids_pair_by_name_and_order():
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"function_call": {"name": "search", "args": {"q": "a"}}},
                {"function_call": {"name": "search", "args": {"q": "b"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "search", "response": {"output": "A"}}},
                {"function_response": {"name": "search", "response": {"output": "B"}}},
            ],
        },
    ]
    h = to_canonical(contents)
    calls = [b.id for b in h.messages[1].blocks if isinstance(b, ToolCall)]
    results = [b.call_id for b in h.messages[2].blocks if isinstance(b, ToolResult)]
    assert calls == results == ["search:1:0", "search:1:1"]
    assert pair_tool_calls(h).ok
    rebuilt = to_wire(h.replace_messages([dataclasses.replace(m) for m in h.messages]))
    assert rebuilt == contents  # no synthetic id written back


def test_gemini_rest_camel_case_keys_are_read_and_kept():
    body = {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "model",
                "parts": [{"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"}],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "f", "response": {"output": "x" * 3000}}}],
            },
            {"role": "model", "parts": [{"text": "done"}]},
            {"role": "user", "parts": [{"text": "more"}]},
        ],
    }
    h = to_canonical(body)
    assert h.format == "gemini" and h.system_text == "be brief"
    out = to_wire(h.replace_messages([dataclasses.replace(m) for m in h.messages]))
    assert out == body
    # an elided response keeps its spelling and gets the stub as its output
    cfg = glyphfold.LadderConfig(
        tail_tokens=0, elide=glyphfold.ElideConfig(keep_newest_results=0, policy="unremarkable")
    )
    r = glyphfold.shake(body, config=cfg)
    fr = r.messages["contents"][2]["parts"][0]["functionResponse"]
    assert fr["response"]["output"].startswith("[elided:")


def test_gemini_synthetic_results_name_their_function():
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"function_call": {"name": "search", "args": {}}}]},
        {"role": "user", "parts": [{"text": "never mind"}]},
    ]
    swept = repair_orphans(contents, mode="synthesize").history
    part = swept[2]["parts"][0]
    assert part["function_response"]["name"] == "search"
    assert find_violations(swept) == []


# --------------------------------------------------------------------------- Responses


def test_responses_string_input_and_instructions():
    body = {"instructions": "be brief", "input": "hello"}
    h = to_canonical(body)
    assert h.format == "responses" and h.system_text == "be brief"
    assert [m.text for m in h.messages] == ["hello"]
    assert to_wire(h) is body


def test_responses_parallel_calls_are_one_step():
    items = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs", "summary": []},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "A"},
        {"type": "function_call_output", "call_id": "b", "output": "B"},
    ]
    h = to_canonical(items)
    assert [m.role for m in h.messages] == ["user", "assistant", "tool", "tool"]
    assert find_violations(h) == []
    alone = items[:2]
    assert [v.rule for v in find_violations(alone)] == ["reasoning-alone"]


def test_responses_bad_item_names_its_index():
    with pytest.raises(glyphfold.HistoryFormatError, match="message 1") as exc:
        to_canonical([{"role": "user", "content": "x"}, {"type": "function_call", "name": "f"}])
    assert exc.value.index == 1


# --------------------------------------------------------------------------- Bedrock


def test_bedrock_json_results_round_trip_and_elide_to_text():
    msgs = [
        {"role": "user", "content": [{"text": "go"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t",
                        "content": [{"json": {"rows": list(range(900))}}],
                    }
                }
            ],
        },
        {"role": "assistant", "content": [{"text": "ok"}]},
        {"role": "user", "content": [{"text": "next"}]},
    ]
    h = to_canonical(msgs)
    assert h.format == "bedrock"
    assert to_wire(h.replace_messages([dataclasses.replace(m) for m in h.messages])) == msgs
    cfg = glyphfold.LadderConfig(
        elide=glyphfold.ElideConfig(keep_newest_results=0, policy="unremarkable")
    )
    out = glyphfold.compact(msgs, budget=50, rungs=["elide"], config=cfg).messages
    part = out[2]["content"][0]["toolResult"]["content"][0]
    assert set(part) == {"text"} and part["text"].startswith("[elided:")


def test_bedrock_rules():
    msgs = [
        {"role": "assistant", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"text": " "}]},
    ]
    rules = {v.rule for v in find_violations(msgs, provider="bedrock")}
    assert {"first-user", "alternation", "blank-text"} <= rules


def test_bedrock_envelope_keeps_its_request_keys():
    body = {
        "modelId": "m",
        "system": [{"text": "s"}],
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "inferenceConfig": {"maxTokens": 5},
    }
    h = to_canonical(body)
    assert h.format == "bedrock" and h.system_text == "s"
    changed = h.replace_messages([dataclasses.replace(h.messages[0], blocks=(Text("hey"),))])
    out = to_wire(changed)
    assert out["modelId"] == "m" and out["inferenceConfig"] == {"maxTokens": 5}
    assert out["messages"][0]["content"] == [{"text": "hey"}]
