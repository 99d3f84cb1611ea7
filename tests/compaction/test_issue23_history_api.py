"""The history functions' shared arguments and exported names (issue 23).

docs/wire-formats.md: every history function takes ``format=``; an unknown profile is
refused by the estimate as by ``compact``; ``gemini`` (the format's and the extra's
name) is a profile name; the documented helpers import from ``glyphfold``;
``convert_history`` between Chat Completions and Responses keeps system/developer roles.
"""

from __future__ import annotations

import pytest

import glyphfold
from glyphfold.errors import HistoryFormatError, UnknownProfileError

# plain user/assistant text reads as several formats (docs/wire-formats.md); a tool
# message is Chat Completions' own, so said to be Anthropic's the history is refused
PLAIN = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]
CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
CHAT_ONLY = [
    {"role": "user", "content": "list"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "a b"},
]


@pytest.mark.parametrize(
    "call",
    [
        lambda h, f: glyphfold.estimate_history_tokens(h, format=f),
        lambda h, f: glyphfold.validate_history(h, format=f),
        lambda h, f: glyphfold.trim_history(h, budget=1_000, format=f),
    ],
    ids=["estimate_history_tokens", "validate_history", "trim_history"],
)
def test_history_functions_take_format(call):
    call(PLAIN, "openai")  # said explicitly: accepted
    call(PLAIN, "anthropic")
    with pytest.raises(HistoryFormatError):
        call(CHAT_ONLY, "anthropic")  # the format is the caller's word, not detection's
    with pytest.raises(Exception, match="format"):
        call(PLAIN, "nonsense")


def test_estimate_refuses_an_unknown_profile_like_compact():
    with pytest.raises(UnknownProfileError, match="nonsense"):
        glyphfold.compact(PLAIN, budget=1_000, profile="nonsense")
    with pytest.raises(UnknownProfileError, match="nonsense"):
        glyphfold.estimate_history_tokens(PLAIN, profile="nonsense")


def test_gemini_is_a_profile_name():
    """``gemini`` is an alias of the current family, Gemini 3 (docs/budget.md)."""
    assert glyphfold.get_profile("gemini") is glyphfold.get_profile("gemini-3")
    assert glyphfold.estimate_history_tokens(PLAIN, profile="gemini") > 0
    with pytest.raises(UnknownProfileError, match="gemini \\(= gemini-3\\)"):
        glyphfold.get_profile("gemini-4")


def test_documented_helpers_import_from_glyphfold():
    from glyphfold import floor_tokens, recovery_target, repair_orphans

    assert recovery_target(300) == 200
    assert floor_tokens(PLAIN) > 0
    broken = [*PLAIN, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
    assert len(repair_orphans(broken).history) == 2


@pytest.mark.parametrize("to", ["responses", "openai"])
def test_convert_keeps_system_and_developer_messages(to):
    chat = [
        {"role": "system", "content": "be nice"},
        {"role": "developer", "content": "dev rules"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
    ]
    src = chat if to == "responses" else glyphfold.convert_history(chat, to="responses")
    out = glyphfold.convert_history(src, to=to)
    roles = [m["role"] for m in out]
    assert roles == ["system", "developer", "user", "assistant"]
    glyphfold.validate_history(out)
    assert "dev rules" in str(out[1]["content"])
