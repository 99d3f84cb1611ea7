"""Checks that run for every message keep their answers on their fast paths (issue 22).

A snapshot of 10^5 messages writes 10^5 ledger rows, transcribes 10^5 messages and
auto-detects the wire format of each: the valid case is tested inline first, the
error cases still raise what the full checks raise.
"""

from __future__ import annotations

import pytest

from glyphfold.compaction.history.wire import openai
from glyphfold.compaction.ladder.ledger import Removed
from glyphfold.compaction.ladder.transcript import mark


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"dest": "elsewhere"}, "ledger destination"),
        ({"dest": ["snapshot"]}, "ledger destination"),
        ({"index": -1}, "ledger index"),
        ({"index": True}, "ledger index"),
        ({"index": 1.0}, "ledger index"),
        ({"chars": -5}, "ledger chars"),
        ({"chars": "12"}, "ledger chars"),
    ],
)
def test_ledger_rows_still_refuse_bad_values(kwargs, words):
    row = {"index": 3, "dest": "snapshot", "chars": 10, "tokens": 2, **kwargs}
    with pytest.raises((ValueError, TypeError), match=words):
        Removed(**row)


def test_valid_ledger_rows():
    r = Removed(0, "dropped", 0, 0, id="c1", role="tool", detail="x")
    assert (r.index, r.dest, r.chars) == (0, "dropped", 0)


def test_openai_signal_keys_and_roles():
    for key in openai._SIGNAL_KEYS:
        assert openai.signals({"role": "assistant", key: None})
    for role in openai._SIGNAL_ROLES:
        assert openai.signals({"role": role, "content": "x"})
    assert not openai.signals({"role": "user", "content": "x"})
    assert not openai.signals({"role": ["tool"], "content": "x"})


def test_marks_are_memoised_and_still_checked():
    assert mark("[user]") is mark("[user]")
    assert mark("a b") == chr(ord(mark("a")[0])) + " " + mark("b")
    for _ in range(2):  # a refused label is refused every time (errors are not cached)
        with pytest.raises(ValueError, match="printable ASCII"):
            mark("[usér]")


def test_block_id_digests_the_source_a_slice_at_a_time(monkeypatch):
    """The id of a block is the digest of its source's UTF-8 bytes, whatever the slices
    (issue 22: a 100M-char source was copied whole into bytes for its digest)."""
    import hashlib
    import importlib

    build = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot.build")

    source = "ab\u00e9\ue041 \U0001f600 x" * 50
    whole = hashlib.blake2b(source.encode("utf-8"), digest_size=8).hexdigest()
    assert build.block_id(source) == whole
    for size in (1, 7, 64):
        monkeypatch.setattr(build, "_HASH_CHARS", size)
        assert build.block_id(source) == whole
    assert build.block_id("") == hashlib.blake2b(b"", digest_size=8).hexdigest()
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate is refused as before
        build.block_id("a\ud800b")


def test_move_price_changes_equal_the_sums():
    """MovePrices._changes (run for every imaged tool message) in plain loops gives the
    sums it was written as."""
    import random
    from types import SimpleNamespace

    from glyphfold.compaction.ladder.rungs.snapshot import price

    def by_sums(results, args, rcap, acap):
        r0, a0 = rcap[0], acap[0]
        base = sum(min(n, r0) for n in results) + sum(min(n, a0) for n in args)
        out = [0]
        for lv in range(1, price.LEVELS + 1):
            r, a = rcap[lv], acap[lv]
            out.append(sum(min(n, r) for n in results) + sum(min(n, a) for n in args) - base)
        d = sum(price._STUB - price._RESULT_FRAME - min(n, r0) for n in results if n > price._STUB)
        out.append(d + sum(price._STUB - min(n, a0) for n in args if n > 120))
        return out

    rnd = random.Random(5)
    inf = 1 << 60
    for _ in range(500):
        results = tuple(
            rnd.choice((0, 30, 50, 51, 400, 9000, 120_000)) for _ in range(rnd.randrange(3))
        )
        args = tuple(rnd.choice((16, 120, 121, 300, 5000)) for _ in range(rnd.randrange(1, 4)))
        rcap = [rnd.choice((inf, 10_000)), 8000, 4000, 2000, 1000, 400]
        acap = [rnd.choice((inf, 3000)), 2000, 1000, 500, 250, 120]
        src = SimpleNamespace(sizes=lambda pos, r=results, a=args: (r, a))
        mp = object.__new__(price.MovePrices)
        mp.planner = SimpleNamespace(source=src, move_changes={})  # the planner's memo
        mp._by_sizes = {}
        assert mp._changes(0, rcap, acap) == by_sums(results, args, rcap, acap)
        assert mp._changes(1, rcap, acap) == by_sums(results, args, rcap, acap)
        assert len(mp._by_sizes) == 1  # the same sizes: priced once


@pytest.mark.parametrize(
    ("role", "content", "words"),
    [
        ("user", [{"type": "tool_use", "id": "c", "name": "n", "input": {}}], "tool_use blocks"),
        # an inline (server) block anywhere is named first, whatever comes before it
        (
            "user",
            [
                {"type": "tool_use", "id": "c", "name": "n", "input": {}},
                {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
            ],
            "MCP and server tool blocks",
        ),
        (
            "user",
            [{"type": "web_search_tool_result", "tool_use_id": "s", "content": []}],
            "MCP and server tool blocks",
        ),
        ("assistant", [{"type": "tool_result", "tool_use_id": "c"}], "tool_result blocks"),
        ("user", [{"text": "no type"}], "must be a dict with a 'type'"),
        ("user", ["a string"], "must be a dict with a 'type'"),
        ("user", [{"type": "text", "text": 3}], "needs a string 'text'"),
        ("user", [{"type": "tool_result"}], "needs a string 'tool_use_id'"),
        ("assistant", [{"type": "tool_use", "id": "", "name": "n"}], "needs a string 'id'"),
    ],
)
def test_anthropic_parse_fast_path_refuses_what_it_refused(role, content, words):
    """parse_message checks the sides of tool blocks in one pass (issue 22: 10^5 messages
    parsed per compact); the errors, and which one wins, are unchanged."""
    from glyphfold.compaction.history.wire import anthropic
    from glyphfold.errors import HistoryFormatError

    with pytest.raises(HistoryFormatError, match=words):
        anthropic.parse_message(4, {"role": role, "content": content})


def test_anthropic_parse_keeps_nested_and_server_blocks():
    from glyphfold.compaction.history.model import Image, ToolCall, ToolResult, Unknown
    from glyphfold.compaction.history.wire import anthropic

    img = {"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}
    m = anthropic.parse_message(
        0,
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c", "content": [img, {"type": "doc"}]},
                {"type": "document", "source": {}},
            ],
        },
    )
    tr, doc = m.blocks
    assert isinstance(tr, ToolResult) and [type(b) for b in tr.content] == [Image, Unknown]
    assert isinstance(doc, Unknown)
    a = anthropic.parse_message(
        1,
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": "s", "content": []},
            ],
        },
    )
    assert [type(b) for b in a.blocks] == [ToolCall, ToolResult]


def test_plain_entries_pass_dicts_through_and_convert_sdk_parts():
    from glyphfold.compaction.history.wire.sdk import plain_history

    class Part:
        def model_dump(self, **_):
            return {"type": "text", "text": "from sdk"}

    dicts = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    assert plain_history(dicts) == (None, False)
    out, changed = plain_history([*dicts, {"role": "user", "content": [Part()]}])
    assert changed and out[0] is dicts[0]
    assert out[1]["content"] == [{"type": "text", "text": "from sdk"}]


def test_marker_kind_and_pins_read_the_wire_key_and_the_meta():
    """marker_kind and is_pinned answer a message without metadata at once (issue 22); a
    kind or a pin under ``x_glyphfold`` in the wire dict or in ``meta`` still counts."""
    from types import MappingProxyType

    from glyphfold.compaction.history.markers import X_KEY, marker_kind
    from glyphfold.compaction.history.model import Message, Text, make_message
    from glyphfold.compaction.ladder.rungs.base import RungContext
    from glyphfold.render.profiles import get_profile

    plain = make_message("user", (Text("x"),), {"role": "user", "content": "x"})
    wired = make_message("user", (Text("x"),), {"role": "user", X_KEY: {"kind": "summary"}})
    pinned_raw = make_message("user", (Text("x"),), {"role": "user", X_KEY: {"pin": True}})
    meta = Message("user", (Text("x"),), meta=MappingProxyType({X_KEY: {"kind": "bridge"}}))
    odd = make_message("user", (Text("x"),), {"role": "user", X_KEY: {"kind": "other"}})
    assert [marker_kind(m) for m in (plain, wired, pinned_raw, meta, odd)] == [
        None,
        "summary",
        None,
        "bridge",
        None,
    ]
    ctx = RungContext(
        target_tokens=1,
        count=len,
        count_message=lambda m: 1,
        profile=get_profile("anthropic"),
        pinned=frozenset({id(wired)}),
    )
    assert [ctx.is_pinned(m) for m in (plain, wired, pinned_raw, meta)] == [
        False,
        True,
        True,
        False,
    ]


def test_has_images_agrees_with_images():
    """The image rung asks has_images of every middle message before it needs the kept
    steps (issue 22); it answers as ``bool(m.images)``."""
    from glyphfold.compaction.history.model import Image, Message, Text, ToolResult

    img = Image(url="http://x/a.png")
    cases = [
        Message("user", (Text("a"),)),
        Message("user", (img,)),
        Message("user", (ToolResult("c", (Text("t"), img)),)),
        Message("user", (ToolResult("c", (Text("t"),)), Text("b"))),
        Message("assistant", ()),
    ]
    assert [m.has_images for m in cases] == [bool(m.images) for m in cases]
    assert [m.has_images for m in cases] == [False, True, True, False, False]
