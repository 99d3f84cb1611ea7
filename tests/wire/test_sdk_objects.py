"""SDK message objects (openai, anthropic, google-genai, litellm) are accepted; dicts come back.

Also: an Anthropic history whose ``messages`` hold a ``system`` entry is accepted.
"""

from __future__ import annotations

import json

import pytest
from wire_samples import big_text

import glyphfold
from glyphfold.compaction.history.messages import detect_format, to_canonical
from glyphfold.compaction.history.validate import find_violations


def _is_plain(x) -> bool:
    if isinstance(x, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in x.items())
    if isinstance(x, list):
        return all(_is_plain(v) for v in x)
    return isinstance(x, str | int | float | bool | bytes | type(None))


def _check(history, fmt):
    assert detect_format(history) == fmt
    h = to_canonical(history)
    assert h.format == fmt
    unchanged = glyphfold.shake(history, dry_run=True).messages
    assert _is_plain(unchanged)
    out = glyphfold.shake(history).messages
    assert _is_plain(out)
    assert find_violations(out) == []
    return out


def _turns(n, make_call):
    out = []
    for t in range(n):
        out += make_call(t)
    return out


def test_openai_chat_completion_messages():
    from openai.types.chat import ChatCompletionMessage

    def step(t):
        call = ChatCompletionMessage(
            role="assistant",
            content=None,
            tool_calls=[
                {
                    "id": f"c{t}",
                    "type": "function",
                    "function": {"name": "read", "arguments": "{}"},
                }
            ],
        )
        return [
            {"role": "user", "content": f"step {t}"},
            call,
            {"role": "tool", "tool_call_id": f"c{t}", "content": big_text(t, 12_000)},
            ChatCompletionMessage(role="assistant", content=f"done {t}"),
        ]

    history = [{"role": "system", "content": "s"}, *_turns(6, step)]
    out = _check(history, "openai")
    assert "[elided:" in json.dumps(out)
    assert "content" not in out[2]  # unset stays unset (no null content invented)


def test_anthropic_response_objects_and_content_blocks():
    from anthropic.types import Message, TextBlock, ToolUseBlock

    def step(t):
        reply = Message(
            id=f"msg_{t}",
            type="message",
            role="assistant",
            model="claude-test",
            content=[
                TextBlock(type="text", text="reading"),
                ToolUseBlock(type="tool_use", id=f"tu{t}", name="read", input={"n": t}),
            ],
            stop_reason="tool_use",
            usage={"input_tokens": 1, "output_tokens": 1},
        )
        result = {"type": "tool_result", "tool_use_id": f"tu{t}", "content": big_text(t, 12_000)}
        # harnesses append either the response object or {"role", "content": blocks}
        assistant = reply if t % 2 else {"role": "assistant", "content": reply.content}
        return [
            {"role": "user", "content": f"step {t}"},
            assistant,
            {"role": "user", "content": [result]},
            {"role": "assistant", "content": [TextBlock(type="text", text=f"done {t}")]},
        ]

    history = _turns(6, step)
    out = _check(history, "anthropic")
    assert set(out[1]) == {"role", "content"}  # no id/model/usage sent back in a request
    assert out[1]["content"][1] == {
        "id": "tu0",
        "input": {"n": 0},
        "name": "read",
        "type": "tool_use",
    }


def test_openai_responses_output_items():
    from openai.types.responses import ResponseFunctionToolCall, ResponseReasoningItem

    def step(t):
        return [
            {"role": "user", "content": f"step {t}"},
            ResponseReasoningItem(id=f"rs{t}", type="reasoning", summary=[]),
            ResponseFunctionToolCall(
                type="function_call", call_id=f"c{t}", name="read", arguments="{}", id=f"fc{t}"
            ),
            {"type": "function_call_output", "call_id": f"c{t}", "output": big_text(t, 12_000)},
        ]

    out = _check(_turns(6, step), "responses")
    assert out[1] == {"id": "rs0", "summary": [], "type": "reasoning"}


def test_google_genai_content_objects():
    from google.genai import types

    def step(t):
        return [
            types.Content(role="user", parts=[types.Part(text=f"step {t}")]),
            types.Content(
                role="model",
                parts=[types.Part(function_call=types.FunctionCall(name="read", args={"n": t}))],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name="read", response={"output": big_text(t, 12_000)}
                        )
                    )
                ],
            ),
            types.Content(role="model", parts=[types.Part(text=f"done {t}")]),
        ]

    out = _check(_turns(6, step), "gemini")
    # the dicts go back into the SDK's own types
    assert [types.Content.model_validate(c) for c in out]


def test_one_sdk_object_is_not_a_history():
    from openai.types.chat import ChatCompletionMessage

    with pytest.raises(glyphfold.HistoryFormatError, match="pass a list"):
        to_canonical(ChatCompletionMessage(role="assistant", content="x"))


def test_anthropic_system_entry_in_messages_is_accepted():
    body = {
        "system": "You are terse.",
        "messages": [
            {"role": "system", "content": "Extra rules: answer in French."},
            {"role": "user", "content": [{"type": "text", "text": "Bonjour"}]},
            {"role": "assistant", "content": "Salut"},
        ],
    }
    h = to_canonical(body)
    assert h.format == "anthropic" and h.messages[0].role == "system"
    assert glyphfold.to_wire(h) is body
    assert glyphfold.shake(body).messages is body
    # the provider's rule is reported, not raised at parse time
    rules = [v.rule for v in find_violations(body)]
    assert rules == ["system-message"]
