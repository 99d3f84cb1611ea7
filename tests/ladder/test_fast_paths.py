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
