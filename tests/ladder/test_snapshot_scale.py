"""The snapshot rung at scale holds each word once and writes the rows it sends (issue 22).

At 10^5 messages the middle's transcript is ~100M chars: its per-message pieces and
the run's joined text were two copies of it for the rest of the call, and each fit
round wrote 10^5 ledger rows. Now a run's pieces become spans of its joined text once
it is joined, and a build writes its rows when they are asked for (only the chosen
round's are). Same pieces, same rows, same results.
"""

from __future__ import annotations

import importlib

import glyphfold
from glyphfold.compaction.history.messages import coerce
from glyphfold.compaction.history.model import Text, ToolCall, ToolResult, new_message
from glyphfold.compaction.ladder.rungs.snapshot.source import Source, _Slice
from glyphfold.compaction.ladder.rungs.transcribe import join
from glyphfold.compaction.ladder.transcript import TranscriptConfig

# the modules, not the functions the package exports under the same names
build_mod = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot.build")


def _messages(n: int) -> list:
    out = []
    for i in range(n):
        cid = f"c{i}"
        out.append(
            new_message("assistant", [Text(f"step {i} " * 5), ToolCall(cid, "bash", {"cmd": "ls"})])
        )
        out.append(new_message("user", [ToolResult(cid, (Text(f"out {i}\n" * 3),))]))
        if i % 5 == 0:
            out.append(new_message("user", ""))  # a message without text: an empty piece
    return out


def test_backed_pieces_are_the_same_text():
    msgs = _messages(30)
    names = {f"c{i}": "bash" for i in range(30)}
    src = Source(msgs, names, TranscriptConfig())
    before = [src.piece(p) for p in range(len(msgs))]
    text, _ = join([p for p in before if p])
    src.back(text, 0, range(len(msgs)))
    assert [src.piece(p) for p in range(len(msgs))] == before
    assert [src.piece_len(p) for p in range(len(msgs))] == [len(p) for p in before]
    kept = [v for (_, level), v in src._cache.items() if level == 0]
    assert all(type(v) is _Slice for v in kept if v)  # no second copy of any piece
    assert all(v.text is text for v in kept if v)
    # a second Source sharing the cache (another choice of the same call) reads them too
    other = Source(msgs[::-1], names, TranscriptConfig(), shared=src._cache)
    assert [other.piece(p) for p in range(len(msgs))] == before[::-1]
    other.back("".join(reversed(text)), 0, range(len(msgs)))  # already spans: kept as they are
    assert [src.piece(p) for p in range(len(msgs))] == before


def _synth(n: int) -> dict:
    msgs = [{"role": "user", "content": "task " * 50}]
    for i in range((n - 1) // 2):
        cid = f"call_{i}"
        body = f"line {i} of the output\n" * 30
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {i} " * 30},
                    {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": f"run {i}"}},
                ],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": cid, "content": body}],
            }
        )
    msgs.append({"role": "user", "content": "continue"})
    return {"system": "s", "messages": msgs}


def test_only_the_chosen_rounds_rows_are_written(monkeypatch):
    rounds: list[int] = []
    real = build_mod._ledger_rows

    def noting(inp, plan, rt, res, first_page, out):
        rounds.append(id(plan))
        return real(inp, plan, rt, res, first_page, out)

    monkeypatch.setattr(build_mod, "_ledger_rows", noting)
    digested: list[int] = []
    real_id = build_mod.block_id
    monkeypatch.setattr(build_mod, "block_id", lambda s: digested.append(id(s)) or real_id(s))
    builds: list[int] = []
    real_build = build_mod.build

    def counting(inp, plan):
        builds.append(1)
        return real_build(inp, plan)

    snap_mod = importlib.import_module("glyphfold.compaction.ladder.rungs.snapshot")
    monkeypatch.setattr(snap_mod, "build", counting)
    r = glyphfold.compact(_synth(801), budget=6000)
    snap = [e for e in r.ledger if e.rung == "snapshot"]
    assert snap and r.pages
    imaged = [x for x in snap[0].removed if x.dest in ("snapshot", "dropped")]
    assert imaged  # every imaged message has its row
    assert len(set(rounds)) == 1  # one plan's rows, however many rounds were built
    assert len(builds) >= 2  # several rounds were built: only one wrote its rows
    assert len(digested) == len(set(digested))  # each source digested once, not per round
    assert coerce(r.messages)[0].messages  # a valid history came out


def test_row_chars_of_arguments_are_their_json_length():
    """A ledger row's chars count a call's arguments as ``json.dumps(args, default=str)``
    does (a dict of strings counted from its strings' JSON): non-ASCII, escapes, nesting,
    odd values and keys."""
    import json

    odd = {"a": "café ☃ \u2028", "n": [1, 2.5, None, True], "x": {"y": object()}, "e": ""}
    strings = {"cmd": 'ls -la\n\t"q" \\ \x00 é 🚀 \ud800' * 40, "": "", "ké\n": "v"}
    for args in (odd, {}, strings, {"cmd": "x"}, {1: "a"}, {None: "b"}, ["list", 1], 3):
        m = new_message("assistant", [Text("t"), ToolCall("c", "f", args)])
        want = len("t") + len(json.dumps(args, default=str))
        assert build_mod._msg_chars(m) == want


def test_row_chars_are_the_text_and_arguments_of_real_messages():
    """``_msg_chars`` in one pass equals ``len(m.text)`` plus each call's arguments (as
    JSON unless a string) on every message of the real sessions and odd blocks."""
    import json
    from pathlib import Path

    from glyphfold.compaction.history.messages import FORMATS
    from glyphfold.compaction.history.model import Image
    from glyphfold.errors import GlyphfoldError

    def reference(m) -> int:
        n = len(m.text)
        for c in m.tool_calls:
            a = c.arguments
            n += len(a) if isinstance(a, str) else len(json.dumps(a, default=str))
        return n

    msgs = [
        new_message("user", ""),
        new_message("user", [Image(media_type="image/png", data="AAAA")]),
        new_message("user", [ToolResult("c", ()), ToolResult("d", (Text(""), Text("x")))]),
        new_message("assistant", [ToolCall("c", "f", "raw args"), Text("a"), Text("")]),
    ]
    real = Path("/work/shared/realdata")
    for p in sorted(real.glob("*.json"))[:60] if real.is_dir() else ():
        fmt = p.name.removesuffix(".json").rsplit(".", 1)[-1]
        try:
            h = coerce(json.loads(p.read_text()), format=fmt if fmt in FORMATS else "auto")[0]
        except (ValueError, GlyphfoldError):  # a session the parser refuses: not this test
            continue
        msgs.extend(h.messages)
    assert len(msgs) > 4
    for m in msgs:
        assert build_mod._msg_chars(m) == reference(m) or build_mod.is_snapshot(m)


def test_sizes_are_the_result_texts_lengths():
    """``Source.sizes`` counts each tool result's text (its parts and a newline between
    each two) without joining it: ``len(result_text(b))``."""
    from glyphfold.compaction.history.model import Image
    from glyphfold.compaction.ladder.rungs.common import result_text

    blocks = [
        ToolResult("a", ()),
        ToolResult("b", (Text(""),)),
        ToolResult("c", (Text("x\n"), Text(""), Text("yz"))),
        ToolResult("d", (Image(media_type="image/png", data="AAAA"), Text("only"))),
    ]
    msgs = [new_message("user", [b]) for b in blocks] + [new_message("user", blocks)]
    src = Source(msgs, {}, TranscriptConfig())
    for pos, m in enumerate(msgs):
        want = tuple(len(result_text(b)) for b in m.blocks if isinstance(b, ToolResult))
        assert src.sizes(pos)[0] == want
