"""Envelope keys that are sent are priced (issue 21 item 11, SPEC §3.3).

100 tool schemas (~40k tokens) in Anthropic ``tools``, Responses ``tools``, Gemini
``tools``, Bedrock ``toolConfig`` or a Chat Completions body's ``tools`` "fit" a
1,000-token budget: the estimate saw the messages only.
"""

from __future__ import annotations

import pytest

import glyphfold
from glyphfold.compaction.history.breakdown import token_breakdown
from glyphfold.compaction.history.wire import WIRE_FORMATS


def _schema(i: int) -> dict:
    props = {f"arg{j}": {"type": "string", "description": f"argument {j} " * 8} for j in range(6)}
    return {
        "name": f"tool_{i}",
        "description": f"Does task {i} carefully; " * 6,
        "parameters": {"type": "object", "properties": props},
    }


SCHEMAS = [_schema(i) for i in range(100)]
USER = "Refactor the parser."

# one request body per format, carrying the tool schemas under the format's own key
BODIES = {
    "openai": {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": USER}],
        "tools": [{"type": "function", "function": s} for s in SCHEMAS],
    },
    "anthropic": {
        "system": "You are a coding agent.",
        "messages": [{"role": "user", "content": USER}],
        "tools": [
            {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
            for s in SCHEMAS
        ],
    },
    "responses": {
        "instructions": "You are a coding agent.",
        "input": [{"role": "user", "content": USER}],
        "tools": [{"type": "function", **s} for s in SCHEMAS],
    },
    "gemini": {
        "contents": [{"role": "user", "parts": [{"text": USER}]}],
        "tools": [{"functionDeclarations": SCHEMAS}],
    },
    "bedrock": {
        "system": [{"text": "You are a coding agent."}],
        "messages": [{"role": "user", "content": [{"text": USER}]}],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": s["name"], "inputSchema": {"json": s["parameters"]}}}
                for s in SCHEMAS
            ]
        },
    },
}


def test_every_format_has_a_body():
    assert set(BODIES) == set(WIRE_FORMATS)


@pytest.mark.parametrize("fmt", list(WIRE_FORMATS))
def test_tool_schemas_are_priced(fmt):
    body = BODIES[fmt]
    without = {k: v for k, v in body.items() if k not in WIRE_FORMATS[fmt].context_keys}
    with_tools = glyphfold.estimate_history_tokens(body, format=fmt)
    alone = glyphfold.estimate_history_tokens(without, format=fmt)
    assert with_tools - alone > 20_000  # ~100 schemas of ~1,000 characters each


@pytest.mark.parametrize("fmt", list(WIRE_FORMATS))
def test_tool_schemas_do_not_fit_a_small_budget(fmt):
    with pytest.raises(glyphfold.ContextOverflowError, match="tool schemas"):
        glyphfold.compact(BODIES[fmt], budget=1_000, format=fmt)


def test_a_chat_completions_body_is_priced_without_naming_its_format():
    body = BODIES["openai"]
    assert glyphfold.estimate_history_tokens(body) > 20_000


@pytest.mark.parametrize("fmt", list(WIRE_FORMATS))
def test_the_breakdown_shows_the_schemas_and_adds_up(fmt):
    b = token_breakdown(BODIES[fmt], format=fmt)
    assert b.by_kind["tool schemas"] > 20_000
    assert sum(b.by_kind.values()) == b.total
    assert sum(r.tokens for r in b.by_role.values()) == b.total
