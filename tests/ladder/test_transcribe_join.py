"""Joining transcript pieces and sanitising content, on their fast paths (issue 22).

A snapshot's text is its messages' pieces joined (SPEC §5.5): at 10^5 messages a
run of 10^5 pieces, joined in one C call with the spans counted alongside; content is
sanitised of mark code points (which are outside ASCII: an ASCII text is returned as
it is, in O(1)). Both checked against the plain versions they replace.
"""

from __future__ import annotations

import random

from glyphfold.compaction.ladder import transcript
from glyphfold.compaction.ladder.rungs.transcribe import join
from glyphfold.compaction.ladder.transcript import mark, sanitise


def _reference_join(pieces: list[str]) -> tuple[str, list[tuple[int, int]]]:
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    n = 0
    for p in pieces:
        if not p:
            spans.append((n, n))
            continue
        if parts:
            parts.append("\n")
            n += 1
        spans.append((n, n + len(p)))
        parts.append(p)
        n += len(p)
    return "".join(parts), spans


def test_join_is_the_builders_join():
    rnd = random.Random(5)
    cases: list[list[str]] = [[], [""], ["", ""], ["a"], ["", "a", ""], ["a", "", "b"]]
    for _ in range(300):
        cases.append(
            [
                rnd.choice(["", "", "x", "line\n", "\n", "ab\ncd", "é" * rnd.randrange(5)])
                for _ in range(rnd.randrange(12))
            ]
        )
    for pieces in cases:
        assert join(pieces) == _reference_join(pieces)
        text, spans = join(pieces)
        assert [text[a:b] for a, b in spans] == pieces


def test_sanitise_ascii_fast_path_and_marks():
    assert transcript._LO > 0x7F  # no mark is ASCII: the fast path cannot miss one
    ascii_text = "plain [user] -> call <- result\n\t~"
    assert sanitise(ascii_text) is ascii_text
    forged = mark("[user]")
    assert sanitise(f"é{forged}") == "é" + "\ufffd" * len(forged)
    assert sanitise("café") == "café"
