"""Shell commands are split with shlex only when their first word may read or write (issue 22).

``shlex.split`` of a long command line cost ~4 ms: on 10,000 tool calls the elision
rules spent more time splitting than the rest of ``compact``. A part whose first
word has no quotes or backslashes and names no program that acts is skipped: shlex's
first word would be that word, and nothing follows from it.
"""

from __future__ import annotations

import shlex

from glyphfold.compaction.ladder.rungs import superseded


def test_parts_that_cannot_act_are_not_split(monkeypatch):
    calls = []
    real = shlex.split
    monkeypatch.setattr(superseded.shlex, "split", lambda s, **k: calls.append(s) or real(s, **k))
    long = "python -c 'print(1)' " + "x " * 2000
    assert superseded._shell_action(long + "&& ls -la | grep foo") == ((), False, (), ())
    assert calls == []
    reads, whole, _, _ = superseded._shell_action("cd /tmp && cat a.txt")
    assert whole and reads[0].endswith("a.txt")
    assert calls == [" cat a.txt"]  # ``cd /tmp`` was not split


def test_quoted_or_escaped_programs_are_still_read():
    """``"cat" f``, ``\\cat f`` and ``c'a't f`` all run cat: shlex decides those."""
    for cmd in ('"cat" notes.txt', "\\cat notes.txt", "c'a't notes.txt"):
        reads, whole, _, _ = superseded._shell_action(cmd)
        assert whole and reads and reads[0].endswith("notes.txt")
