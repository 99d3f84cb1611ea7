"""Canonical model and wire adapters (SPEC §2.5: lossless, unchanged -> same objects)."""

from __future__ import annotations

import base64
import dataclasses
import io

import pytest
from core_histories import png_b64, snapshot, wire_histories, wire_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.compaction.history.images import image_size
from glyphfold.compaction.history.messages import coerce, detect_format, to_canonical, to_wire
from glyphfold.compaction.history.model import (
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    new_message,
)
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.compaction.history.validate import find_violations, validate_history
from glyphfold.compaction.history.wire import message_signal
from glyphfold.errors import AmbiguousFormatError, HistoryFormatError

FAST = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def _rebuilt(h: History) -> History:
    """The same history with every identity fast path dropped (forces re-serialisation)."""
    return dataclasses.replace(h, messages=tuple(dataclasses.replace(m) for m in h.messages))


@FAST
@given(wire_histories())
def test_roundtrip_is_identity_and_lossless(case):
    """SPEC §2.5: unchanged -> the very same object; re-serialised -> equal to the input."""
    fmt, wire = case
    before = snapshot(wire)
    expected = "openai" if fmt == "openai" else "anthropic"
    try:
        auto = to_canonical(wire)
    except AmbiguousFormatError:  # plain user/assistant text is valid in both formats
        assert all(message_signal(m) is None for m in wire_messages(wire))
    else:
        assert auto.format == expected
    h = to_canonical(wire, format=expected)
    assert to_wire(h) is wire
    again = to_wire(_rebuilt(h))
    assert again == wire
    assert again is not wire
    validate_history(wire, format=expected)
    validate_history(again, format=expected)
    assert wire == before


def test_unknown_keys_and_blocks_are_carried_through():
    """SPEC §2.5: unknown keys and block types survive a rebuild untouched."""
    wire = {
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "model": "claude",
        "tools": [{"name": "t"}],
        "messages": [
            {"role": "user", "content": [{"type": "document", "source": {"type": "text"}}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "abc"},
                    {"type": "tool_use", "id": "t1", "name": "x", "input": {}, "extra": 1},
                ],
                "x_custom": True,
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ],
    }
    before = snapshot(wire)
    h = to_canonical(wire)
    assert isinstance(h.messages[0].blocks[0], Unknown)
    assert isinstance(h.messages[1].blocks[0], Unknown)
    assert h.messages[1].blocks[1] == ToolCall("t1", "x", {})
    out = to_wire(_rebuilt(h))
    assert out == wire
    assert wire == before


def test_openai_unknown_parts_and_keys():
    """OpenAI: refusal, input_audio, name and legacy keys pass through a rebuild."""
    wire = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "name": "bob", "content": [{"type": "input_audio", "input_audio": {}}]},
        {
            "role": "assistant",
            "content": None,
            "refusal": "no",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "r"}]},
    ]
    before = snapshot(wire)
    h = to_canonical(wire)
    assert h.format == "openai"
    assert h.messages[0].role == "system"
    assert to_wire(_rebuilt(h)) == wire
    assert wire == before


def test_changed_message_keeps_unknown_keys_and_others_keep_identity():
    """A replaced message is re-serialised with its unknown keys; the rest are the same dicts."""
    wire = [
        {"role": "user", "content": "hi", "x_meta": 7},
        {"role": "assistant", "content": "hello"},
    ]
    before = snapshot(wire)
    h = to_canonical(wire, format="openai")
    new = h.replace_messages(
        [dataclasses.replace(h.messages[0], blocks=(Text("bye"),)), h.messages[1]]
    )
    out = to_wire(new)
    assert out[0] == {"role": "user", "content": "bye", "x_meta": 7}
    assert out[1] is wire[1]
    assert wire == before


def test_coerce_returns_same_kind():
    """Every public function returns the kind it was given (wire in, wire out)."""
    wire = [{"role": "user", "content": "a"}]
    before = snapshot(wire)
    h, restore = coerce(wire, format="openai")
    assert restore(h) is wire
    h2 = h.replace_messages([*h.messages, new_message("assistant", "b")])
    assert restore(h2) == [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    hc, restore_c = coerce(h)
    assert hc is h
    assert restore_c(h2) is h2
    assert wire == before


@pytest.mark.parametrize(
    ("wire", "index", "fragment"),
    [
        ([{"role": "user", "content": "a"}, "nope"], 1, "must be a dict"),
        ([{"role": "wizard", "content": "a"}], 0, "unknown OpenAI role"),
        ([{"role": "user", "content": 5}], 0, "string or a list"),
        ([{"role": "tool", "content": "x"}], 0, "tool_call_id"),
        ([{"role": "user", "content": [{"words": "no type"}]}], 0, "'type'"),
        ([{"role": "user", "content": "a", "tool_calls": []}], 0, "only assistant"),
        (
            [
                {"role": "tool", "tool_call_id": "x", "content": "r"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
            ],
            1,
            "mixed history",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]}]},
            0,
            "tool_use block needs",
        ),
        (
            {"system": "s", "messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]},
            0,
            "mixed history",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "x"}]}
                ]
            },
            0,
            "belong in user",
        ),
    ],
)
def test_malformed_histories_name_the_index(wire, index, fragment):
    """Malformed or mixed input raises HistoryFormatError naming the message index."""
    before = snapshot(wire)
    with pytest.raises(HistoryFormatError) as exc:
        to_canonical(wire)
    assert exc.value.index == index
    assert f"message {index}" in str(exc.value)
    assert fragment in str(exc.value)
    assert wire == before


def test_not_a_history():
    with pytest.raises(HistoryFormatError, match="list of message dicts"):
        to_canonical("hello")
    with pytest.raises(HistoryFormatError, match="'messages' key"):
        to_canonical({"system": "x"})
    with pytest.raises(HistoryFormatError, match="format must be"):
        to_canonical([], format="cohere")


def test_explicit_format_overrides_detection():
    wire = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    for ambiguous in (wire, {"messages": wire}):  # issue 21 item 12: refused, not guessed
        with pytest.raises(AmbiguousFormatError, match="format='openai'"):
            detect_format(ambiguous)
    assert to_canonical(wire, format="anthropic").format == "anthropic"
    h = to_canonical(wire, format="openai")
    with pytest.raises(HistoryFormatError, match="requested"):
        to_canonical(h, format="anthropic")


def test_image_sizes_from_headers():
    """Image width/height read from PNG and JPEG headers (data URLs and base64 sources)."""
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("RGB", (321, 123), "white").save(
        buf, format="JPEG", exif=b"Exif\x00\x00" + b"\x00" * 300
    )
    jpeg = base64.b64encode(buf.getvalue()).decode()
    buf = io.BytesIO()
    PILImage.new("RGB", (77, 55)).save(buf, format="WEBP")
    assert image_size(buf.getvalue()) == (77, 55)
    buf = io.BytesIO()
    PILImage.new("P", (9, 11)).save(buf, format="GIF")
    assert image_size(buf.getvalue()) == (9, 11)
    wire = [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + png_b64(640, 480)},
                },
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + jpeg}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ],
        }
    ]
    imgs = to_canonical(wire).messages[0].images
    assert [(i.width, i.height) for i in imgs] == [(640, 480), (321, 123), (None, None)]
    assert imgs[1].media_type == "image/jpeg"
    assert imgs[2].url == "https://example.com/a.png"
    anth = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": png_b64(12, 34),
                        },
                    }
                ],
            }
        ]
    }
    (img,) = to_canonical(anth).messages[0].images
    assert (img.width, img.height) == (12, 34)
    assert image_size(b"not an image") is None


def test_new_messages_serialise_in_both_formats():
    """Blocks built by the ladder serialise to valid wire dicts in both formats."""
    img = Image("image/png", data=png_b64(10, 10))
    for fmt in ("openai", "anthropic"):
        h = History(
            fmt,
            (
                new_message("user", [Text("see"), img]),
                Message("assistant", (ToolCall("c1", "f", "{}" if fmt == "openai" else {}),)),
                (
                    Message("tool", (ToolResult("c1", (Text("ok"),)),))
                    if fmt == "openai"
                    else Message("user", (ToolResult("c1", (Text("ok"),), is_error=True),))
                ),
                new_message("assistant", "done"),
            ),
        )
        wire = to_wire(h)
        validate_history(wire)
        back = to_canonical(wire, format=fmt)
        assert back.messages == h.messages


def test_model_validation():
    with pytest.raises(ValueError, match="role must be"):
        Message("robot")
    with pytest.raises(ValueError, match="exactly one of"):
        Image("image/png")
    with pytest.raises(ValueError, match="format must be"):
        History("cohere")
    with pytest.raises(ValueError, match="envelope"):
        History("anthropic", system="s")


def _containers(obj, out):
    if isinstance(obj, dict):
        out.append(obj)
        for v in obj.values():
            _containers(v, out)
    elif isinstance(obj, list):
        out.append(obj)
        for v in obj:
            _containers(v, out)
    return out


_SPOILERS = [None, "", [], {}, 0, True, "x", "data:;base64,", {"type": "text"}, [{"type": 1}]]


@settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(wire_histories(max_turns=3), st.randoms(use_true_random=False), st.integers(1, 4))
def test_damaged_input_only_ever_raises_history_format_error(case, rng, n_damages):
    """Damage a valid history at random places: parsing succeeds losslessly or names the index."""
    _, wire = case
    wire = snapshot(wire)
    for _ in range(n_damages):
        targets = _containers(wire, [])
        t = rng.choice(targets)
        if isinstance(t, dict) and t:
            key = rng.choice(sorted(t))
            if rng.random() < 0.3:
                del t[key]
            else:
                t[key] = snapshot(rng.choice(_SPOILERS))
        elif isinstance(t, list):
            t.append(snapshot(rng.choice(_SPOILERS))) if rng.random() < 0.5 or not t else t.pop(
                rng.randrange(len(t))
            )
    before = snapshot(wire)
    for fmt in ("auto", "openai", "anthropic"):
        try:
            h = to_canonical(wire, format=fmt)
        except HistoryFormatError:
            continue
        assert to_wire(h) is wire
        assert to_wire(_rebuilt(h)) == wire
        find_violations(h)
        segment_turns(h)
        estimate_history_tokens(h)
    assert wire == before
