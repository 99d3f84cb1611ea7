"""Converting histories between the OpenAI and Anthropic wire formats."""

from __future__ import annotations

import pytest
from core_histories import png_b64, snapshot, wire_histories
from hypothesis import HealthCheck, given, settings

from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import History
from glyphfold.compaction.history.turns import pair_tool_calls
from glyphfold.compaction.history.validate import validate_history
from glyphfold.errors import InputError

FAST = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def _calls(h: History) -> list[tuple[str, str]]:
    return [(c.id, c.name) for m in h.messages for c in m.tool_calls]


def _results(h: History) -> list[str]:
    return sorted(r.call_id for m in h.messages for r in m.tool_results)


@FAST
@given(wire_histories())
def test_conversion_is_valid_for_the_target_and_keeps_tool_exchanges(case):
    """Converted histories pass the target's provider rules; calls and results survive."""
    name, wire = case
    before = snapshot(wire)
    src = to_canonical(wire, format="openai" if name == "openai" else "anthropic")
    target = "anthropic" if src.format == "openai" else "openai"
    out = convert_history(src, to=target)
    assert out.format == target
    validate_history(out)
    assert pair_tool_calls(out).ok
    assert _calls(out) == _calls(src)
    assert _results(out) == _results(src)
    back = convert_history(out, to=src.format)
    validate_history(back)
    assert _calls(back) == _calls(src)
    assert wire == before


def test_openai_to_anthropic_wire():
    wire = [
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": "no emojis"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + png_b64(8, 8)},
                },
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "oops"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "ra"},
        {"role": "tool", "tool_call_id": "b", "content": "rb"},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "done", "refusal": None},
    ]
    before = snapshot(wire)
    out = convert_history(wire, to="anthropic")
    validate_history(out)
    assert out["system"] == "be brief\n\nno emojis"
    msgs = out["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[0]["content"][1]["source"]["type"] == "base64"
    assert msgs[1]["content"][0]["input"] == {"x": 1}
    assert msgs[1]["content"][1]["input"] == {"arguments": "oops"}
    assert [b["type"] for b in msgs[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert "refusal" not in msgs[3]
    assert wire == before


def test_anthropic_to_openai_wire():
    wire = {
        "system": "sys",
        "model": "m",
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "tool_use", "id": "t", "name": "shot", "input": {"url": "x"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "failed"},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": png_b64(4, 4),
                                },
                            },
                        ],
                    },
                    {"type": "text", "text": "and?"},
                ],
            },
        ],
    }
    before = snapshot(wire)
    out = convert_history(wire, to="openai")
    validate_history(out)
    msgs = out["messages"]
    assert out["model"] == "m"
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "user"]
    assert msgs[2]["tool_calls"][0]["function"]["arguments"] == '{"url": "x"}'
    assert msgs[3]["content"] == "[error] failed"
    assert msgs[4]["content"][1]["type"] == "image_url"
    assert convert_history(to_canonical(wire), to="openai").meta["dropped_blocks"] == 1
    assert convert_history(wire, to="anthropic") is wire
    with pytest.raises(InputError, match="to must be"):
        convert_history(wire, to="cohere")
    assert wire == before
