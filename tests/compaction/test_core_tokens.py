"""Token estimates (SPEC §3.4) and the TokenCounter protocol."""

from __future__ import annotations

import hashlib
import os

import pytest
from core_histories import format_name, png_b64, render, simple_plan, snapshot, wire_histories
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.model import Image, ToolResult
from glyphfold.compaction.history.tokens import (
    HeuristicCounter,
    TiktokenCounter,
    TokenCounter,
    _tiktoken_cache_file,
    estimate_history_tokens,
    estimate_message_tokens,
    image_tokens,
    token_costs,
)
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.errors import InputError, TokenizerUnavailableError
from glyphfold.render.profiles import get_profile


def test_four_chars_per_token_plus_four_per_message():
    """SPEC §3.4: ~4 characters per token + 4 framing tokens per message."""
    wire = [
        {"role": "system", "content": "s" * 40},
        {"role": "user", "content": "u" * 41},
        {"role": "assistant", "content": "a" * 3},
    ]
    before = snapshot(wire)
    assert token_costs(wire).messages == (4 + 10, 4 + 11, 4 + 1)
    assert estimate_history_tokens(wire) == 14 + 15 + 5
    anth = {"system": "s" * 40, "messages": wire[1:]}
    assert estimate_history_tokens(anth) == 14 + 15 + 5
    assert wire == before


def test_tool_calls_and_unknown_blocks_count_as_text():
    wire = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "abcd", "arguments": "e" * 12}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "r" * 8},
    ]
    assert token_costs(wire).messages == (5, 4 + 4, 4 + 2)


def _image_history(fmt: str, *, old_shot: bool):
    """Two turns; a screenshot tool result in the first (old) or second (current) turn."""
    plan = simple_plan(2, tools=False)
    turn = plan["turns"][0 if old_shot else 1]
    turn["steps"] = [
        {
            "kind": "native",
            "text": "",
            "calls": [("browser_screenshot", "{}", "漢字" * 100, False, (1000, 750))],
        }
    ]
    plan["turns"][1]["image"] = (750, 500)
    return render(plan, fmt)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_images_priced_only_where_sent(fmt):
    """SPEC §3.4: images cost in user turns and current tool results; old results by bytes."""
    prof = get_profile("anthropic")
    old = _image_history(fmt, old_shot=True)
    cur = _image_history(fmt, old_shot=False)
    before = snapshot((old, cur))
    shot = prof.cost(1000, 750)
    user_img = prof.cost(750, 500)
    assert shot > 0 and user_img > 0
    c_old = token_costs(old, profile="anthropic", image_policy="spec")
    c_cur = token_costs(cur, profile=prof, image_policy="spec")
    # the screenshot is priced only in the current turn; the user image in both
    assert c_cur.total - c_old.total == pytest.approx(shot - (600 - 200) // 4, abs=2)
    # image_policy="all" (the default: a wire history is sent as it is) prices every image
    assert estimate_history_tokens(old, image_policy="all") == c_old.total + shot
    assert estimate_history_tokens(old) == c_old.total + shot
    assert (old, cur) == before


def test_user_images_priced_with_the_profile():
    wire = [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + png_b64(1092, 1092)},
                },
                {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
            ],
        }
    ]
    for name in ("anthropic", "openai", "gemini-2"):
        prof = get_profile(name)
        expected = 4 + prof.cost(1092, 1092) + prof.cost(prof.max_page_width, prof.max_page_height)
        assert estimate_history_tokens(wire, profile=name) == expected
    assert image_tokens(Image(None, url="https://x/y.png"), profile="anthropic") > 0
    with pytest.raises(InputError, match="no vision"):
        estimate_history_tokens(wire, profile="text-only")
    assert estimate_history_tokens([{"role": "user", "content": "hi"}], profile="text-only") == 5


def test_plugged_counter_replaces_the_heuristic():
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    assert isinstance(Words(), TokenCounter)
    wire = [{"role": "user", "content": "one two three"}, {"role": "assistant", "content": "four"}]
    assert estimate_history_tokens(wire, counter=Words()) == (4 + 3) + (4 + 1)
    assert estimate_history_tokens(wire, counter=HeuristicCounter(2)) == (4 + 7) + (4 + 2)
    with pytest.raises(InputError, match="count"):
        estimate_history_tokens(wire, counter=object())
    with pytest.raises(InputError, match="chars_per_token"):
        HeuristicCounter(0)
    with pytest.raises(InputError, match="image_policy"):
        estimate_history_tokens(wire, image_policy="some")


def test_tiktoken_never_downloads(tmp_path, monkeypatch):
    """tiktoken's wheel has no BPE tables: without a local cache, a clear error, no network."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(TokenizerUnavailableError, match="TIKTOKEN_CACHE_DIR"):
        TiktokenCounter("o200k_base")
    with pytest.raises(InputError, match="unknown tiktoken encoding"):
        TiktokenCounter("nope_base")
    # the offline lookup finds a cached table where tiktoken itself would look
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    path = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    path.write_bytes(b"")
    assert _tiktoken_cache_file("o200k_base") == os.fspath(path)


def test_estimate_is_deterministic_and_linear():
    a = render(simple_plan(10), "openai")
    b = render(simple_plan(20), "openai")
    ea, eb = estimate_history_tokens(a), estimate_history_tokens(b)
    assert ea == estimate_history_tokens(a)
    assert eb > ea


@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(wire_histories(), st.sampled_from(["spec", "all"]))
def test_fast_costing_matches_the_reference(case, policy):
    """SPEC §3.4: the per-history fast path prices every message like estimate_message_tokens."""
    fmt, wire = case
    before = snapshot(wire)
    h = to_canonical(wire, format=format_name(fmt))
    seg = segment_turns(h)
    current = seg.turns[-1].start if seg.turns else 0
    expected = []
    for i, m in enumerate(h.messages):
        is_result = (
            m.role == "tool"
            or any(isinstance(b, ToolResult) for b in m.blocks)
            or (m.role == "user" and m.text.startswith("[Tool results]"))
        )
        old = is_result and i < current
        sent = True if policy == "all" else (not old if is_result else m.role == "user")
        expected.append(estimate_message_tokens(m, images_sent=sent, tool_results_by_bytes=old))
    assert token_costs(wire, image_policy=policy).messages == tuple(expected)
    assert wire == before


@settings(max_examples=300, deadline=None)
@given(
    args=st.one_of(
        st.dictionaries(st.text(max_size=6), st.text(max_size=12), max_size=4),
        st.dictionaries(
            st.text(max_size=4),
            st.one_of(st.text(max_size=4), st.integers(), st.none(), st.lists(st.integers())),
            max_size=3,
        ),
        st.text(max_size=10),
        st.lists(st.integers(), max_size=3),
        st.none(),
    ),
    name=st.text(max_size=5),
)
def test_call_chars_equal_the_length_of_the_call_text(args, name):
    """A tool call's characters are counted without building its JSON text when its input
    is an object of strings (issue 22: 5*10^4 calls priced per 10^5-message compact);
    the count equals the text's length for every input, escapes and surrogates included."""
    from glyphfold.compaction.history.model import ToolCall
    from glyphfold.compaction.history.tokens import _call_chars, _call_text, _utf8_len

    call = ToolCall("c1", name, args)
    assert _call_chars(call) == len(_call_text(call))
    for text in (name, "a\ud800b", "é" * 3):
        assert _utf8_len(text) == len(text.encode("utf-8", "surrogatepass"))
