"""Plain-text histories are read as the format the evidence says (issue 21 item 12).

Plain user/assistant text fits several wire formats. The container alone decided: the
Anthropic SDK quickstart's message list was read as OpenAI (its snapshot pages became
``image_url`` parts Anthropic refuses), ``{"model": "gpt-4o", "messages": [...]}`` as
Anthropic, and an Anthropic history whose tool blocks were compacted away flipped to
OpenAI on the next pass.
"""

from __future__ import annotations

import json

import pytest

import glyphfold
from glyphfold.compaction.history.messages import format_evidence
from glyphfold.errors import AmbiguousFormatError


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


# ------------------------------------------------------- what stays ambiguous is refused


def _anthropic_tool_history() -> list[dict]:
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
    return history


def test_plain_text_nothing_identifies_is_refused_naming_format():
    """Issue 21 item 12: no guess by the container (a list OpenAI, a dict Anthropic)."""
    plain = [{"role": "user", "content": "Hello, Claude"}]  # the SDK quickstart's messages
    for history in (plain, {"messages": plain}, {"messages": plain, "max_tokens": 1024}):
        with pytest.raises(AmbiguousFormatError, match=r"format='openai'.*--format"):
            glyphfold.detect_format(history)
        with pytest.raises(AmbiguousFormatError, match="format="):
            glyphfold.to_canonical(history)
        with pytest.raises(AmbiguousFormatError, match="format="):
            glyphfold.validate_history(history)
    # a profile of another provider cannot say it either
    with pytest.raises(AmbiguousFormatError, match="format="):
        glyphfold.compact(_plain(), budget=6_000, profile="gemini")
    assert isinstance(AmbiguousFormatError("x"), ValueError)  # callers' except ValueError
    # what does tell: the caller, the model name, the provider's rules, a system message
    assert glyphfold.to_canonical(plain, format="anthropic").format == "anthropic"
    assert glyphfold.detect_format({"model": "claude-sonnet-4-5", "messages": plain}) == (
        "anthropic"
    )
    assert glyphfold.detect_format({"model": "openai/gpt-4o", "messages": plain}) == "openai"
    glyphfold.validate_history(plain, provider="anthropic")
    assert glyphfold.detect_format([{"role": "system", "content": "s"}, *plain]) == "openai"
    # pricing does not depend on it: plain text prices alike in every format
    assert glyphfold.estimate_history_tokens(plain) == glyphfold.estimate_history_tokens(
        plain, format="anthropic"
    )


def test_a_compacted_history_as_sent_is_never_flipped_to_openai():
    """The provider's copy (provider_messages strips glyphfold's marks) of a compacted
    Anthropic history is plain text: it was detected as OpenAI on the next pass; now the
    profile or the caller says it, or it is refused."""
    first = glyphfold.compact(
        _anthropic_tool_history(), budget=400, profile="anthropic", rungs=["trim"]
    )
    sent = glyphfold.provider_messages(first.messages)
    assert format_evidence(sent) is None  # nothing of Anthropic is left in it
    with pytest.raises(AmbiguousFormatError):
        glyphfold.detect_format(sent)
    grown = [*sent, {"role": "assistant", "content": "File 3."}, {"role": "user", "content": "Ok"}]
    again = glyphfold.compact(grown, budget=200, profile="anthropic", rungs=["trim"])
    assert again.ledger and again.tokens_after < again.tokens_before  # it compacted again
    assert glyphfold.detect_format(again.messages) == "anthropic"
    glyphfold.validate_history(again.messages)  # Anthropic's rules: alternation kept


def test_a_compactor_told_the_format_reads_plain_text_as_it():
    """Serve's compactor is told the route's format: a Claude model behind an OpenAI-style
    route gets image_url pages (the profile alone would have said Anthropic)."""
    c = glyphfold.Compactor(budget=6_000, profile="anthropic", format="openai", rungs=["snapshot"])
    fitted = c(_plain())
    assert fitted.result is not None and fitted.result.pages
    assert _image_shapes(fitted.result) == {'"image_url"'}
    assert "format=openai" in c.seed  # a compactor of another format is another conversation
    with pytest.raises(glyphfold.InputError, match="format must be"):
        glyphfold.Compactor(budget=6_000, format="cohere")
