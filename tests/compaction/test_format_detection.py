"""Plain-text histories are read as the format the evidence says (issue 21 item 12).

Plain user/assistant text fits several wire formats. The container alone decided: the
Anthropic SDK quickstart's message list was read as OpenAI (its snapshot pages became
``image_url`` parts Anthropic refuses), ``{"model": "gpt-4o", "messages": [...]}`` as
Anthropic, and an Anthropic history whose tool blocks were compacted away flipped to
OpenAI on the next pass.
"""

from __future__ import annotations

import json

import glyphfold
from glyphfold.compaction.history.messages import format_evidence


def _plain(turns: int = 12) -> list[dict]:
    out = []
    for t in range(turns):
        out.append({"role": "user", "content": f"Question {t}: explain module {t}. " * 30})
        out.append({"role": "assistant", "content": f"Module {t} parses the input. " * 120})
    out.append({"role": "user", "content": "Now summarise what we found."})
    return out


def _image_shapes(result) -> set[str]:
    text = json.dumps(result.messages, default=str)
    return {kind for kind in ('"image_url"', '"type": "image"') if kind in text}


def test_a_gpt_body_is_read_as_openai():
    body = {"model": "gpt-4o", "messages": _plain()}
    assert glyphfold.detect_format(body) == "openai"
    res = glyphfold.compact(body, budget=6_000, profile="openai", rungs=["snapshot"])
    assert res.pages and _image_shapes(res) == {'"image_url"'}


def test_a_claude_body_is_read_as_anthropic():
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": _plain()}
    assert glyphfold.detect_format(body) == "anthropic"


def test_the_sdk_quickstart_list_gets_the_profiles_pages():
    """A bare list of plain messages, compacted for an Anthropic model: Anthropic pages."""
    messages = _plain()
    assert format_evidence(messages) is None  # nothing in it tells
    res = glyphfold.compact(messages, budget=6_000, profile="anthropic", rungs=["snapshot"])
    assert res.pages and _image_shapes(res) == {'"type": "image"'}
    res = glyphfold.compact(messages, budget=6_000, profile="openai", rungs=["snapshot"])
    assert res.pages and _image_shapes(res) == {'"image_url"'}


def test_a_compacted_anthropic_history_stays_anthropic():
    """Its tool blocks trimmed away, only plain text and glyphfold's markers are left."""
    history = []
    for t in range(10):
        history.append({"role": "user", "content": f"Step {t}: read file {t}. " * 20})
        history.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{t}", "name": "read", "input": {}}],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{t}", "content": "x" * 4000}],
            }
        )
        history.append({"role": "assistant", "content": f"File {t} read. " * 20})
    history.append({"role": "user", "content": "Which file was longest?"})
    first = glyphfold.compact(history, budget=400, profile="openai", rungs=["trim"])
    assert not any("tool_use" in json.dumps(m) for m in first.messages)  # the tool turns went
    assert glyphfold.detect_format(first.messages) == "anthropic"
    second = glyphfold.compact(first.messages, budget=300, profile="openai", rungs=["trim"])
    assert glyphfold.detect_format(second.messages) == "anthropic"
