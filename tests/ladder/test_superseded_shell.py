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


class _Counting:
    """A compiled regex that counts its scans."""

    def __init__(self, pattern):
        self.pattern, self.calls = pattern, 0

    def split(self, s):
        self.calls += 1
        return self.pattern.split(s)

    def finditer(self, s):
        self.calls += 1
        return self.pattern.finditer(s)


def _plain_shell_action(command):
    """The rule without the literal tests (what it answered before them)."""
    import re

    reads, writes, edits = [], [], []
    for m in superseded._REDIRECT.finditer(command):
        (writes if m.group(1) == ">" else edits).append(superseded._norm_path(m.group(2)))
    whole = False
    for part in re.split(r"&&|\|\||;|\|", command):
        try:
            words = shlex.split(part, posix=True)
        except ValueError:
            continue
        if not words:
            continue
        prog, rest = words[0], [w for w in words[1:] if not w.startswith("-")]
        if prog in superseded._SHELL_READS and rest and ">" not in part:
            files = [superseded._norm_path(w) for w in rest if not re.fullmatch(r"[\d+,]+p?", w)]
            reads.extend(files)
            whole = whole or prog == "cat"
        elif prog == "sed" and any(w.startswith("-i") for w in words[1:]) and len(rest) >= 2:
            edits.append(superseded._norm_path(rest[-1]))
        elif prog in ("tee", "rm") and rest:
            writes.extend(superseded._norm_path(w) for w in rest)
    writes = [w for w in writes if w != "/dev/null"]
    return tuple(reads), whole, tuple(writes), tuple(edits)


def test_lines_without_separators_or_redirects_are_not_scanned(monkeypatch):
    """A command with no ``&``, ``|``, ``;`` or ``>`` is one part writing nothing: the
    separator and redirect regexes (a try at every position) are not run on it."""
    seps = _Counting(superseded._SEPARATORS)
    redirect = _Counting(superseded._REDIRECT)
    monkeypatch.setattr(superseded, "_SEPARATORS", seps)
    monkeypatch.setattr(superseded, "_REDIRECT", redirect)
    assert superseded._shell_action("cat notes.txt " + "word " * 200)[1]
    assert (seps.calls, redirect.calls) == (0, 0)
    superseded._shell_action("cat a.txt > b.txt; rm c.txt")
    assert (seps.calls, redirect.calls) == (1, 1)


def test_literal_tests_answer_as_the_plain_rule():
    import random

    rnd = random.Random(7)
    frags = [
        "cat a.txt",
        "sed -i s/x/y/ f.py",
        "tee out.log",
        "rm -f x",
        "echo hi",
        "ls",
        "&&",
        "||",
        ";",
        "|",
        ">",
        ">>",
        "2>&1",
        "/dev/null",
        "'q'",
        "head -5 b.py",
        "&",
    ]
    for _ in range(2000):
        cmd = " ".join(rnd.choice(frags) for _ in range(rnd.randrange(1, 7)))
        assert superseded._shell_action(cmd) == _plain_shell_action(cmd), cmd


def test_reasons_read_each_action_once(monkeypatch):
    """``elision_reasons`` reads every call's action once for both rules."""
    from glyphfold.compaction.ladder.rungs.superseded import Call

    calls = [
        Call("c1", "bash", {"command": "cat a.txt"}, "x\n" * 50),
        Call("c2", "write_file", {"path": "a.txt", "content": "y" * 300}, "ok"),
        Call("c3", "bash", {"command": "cat a.txt"}, "y\n" * 50),
    ]
    want = superseded.qualifying_reasons(calls), superseded.argument_reasons(calls)
    actions = superseded.actions_of(calls)
    monkeypatch.setattr(superseded, "action_of", lambda *a: (_ for _ in ()).throw(AssertionError))
    got = superseded.qualifying_reasons(calls, actions), superseded.argument_reasons(calls, actions)
    assert got == want
    assert want[0]["c1"].startswith("reread by #c3")


def _eager_reasons(calls):
    """qualifying_reasons as it was written before the verdict became lazy."""
    out, last_key, last_whole_read, last_write, last_text = {}, {}, {}, {}, {}
    for c in reversed(calls):
        act = superseded.action_of(c.name, c.arguments)
        why = None
        if c.result is not None:
            if not c.verdict:
                for p in act.reads:
                    if p in last_whole_read:
                        why = f"reread by #{last_whole_read[p]}"
                        break
                    if p in last_write:
                        why = f"rewritten by #{last_write[p]}"
                        break
                if why is None and act.key in last_key:
                    why = f"rerun as #{last_key[act.key]}"
                if why is None and c.result in last_text:
                    why = f"duplicate of #{last_text[c.result]}"
                if why is None:
                    why = superseded.text_reason(c.result)
            elif c.result in last_text:
                why = f"duplicate of #{last_text[c.result]}"
            last_text.setdefault(c.result, c.call_id)
        if why is not None:
            out[c.call_id] = why
        last_key.setdefault(act.key, c.call_id)
        if act.whole:
            for p in act.reads:
                last_whole_read.setdefault(p, c.call_id)
        for p in act.writes:
            last_write.setdefault(p, c.call_id)
    return out


def test_a_verdict_is_asked_only_when_it_matters():
    """Whether a result is an error or a test run changes its reason only when another
    rule than ``duplicate`` applies: only then is it asked (issue 22: the error and test
    regexes ran on every result), and the reasons are the eager rule's."""
    import random

    from glyphfold.compaction.ladder.rungs.superseded import Call

    rnd = random.Random(11)
    commands = ["cat a.py", "cat b.py", "ls", "pytest -q", "echo x > a.py", "rm b.py"]
    texts = ["", "ok", "5 passed", "x\ny\nz", "Traceback", "Collecting a\nCollecting b\nx"]
    for _ in range(300):
        calls, verdicts = [], []
        for k in range(rnd.randrange(1, 12)):
            text = rnd.choice([*texts, None])
            verdict = rnd.random() < 0.3
            calls.append(Call(f"c{k}", "bash", {"command": rnd.choice(commands)}, text, verdict))
            verdicts.append(verdict)
        asked = []

        def lazy(k, v, asked=asked):
            return lambda: asked.append(k) or v

        lazy_calls = [
            Call(c.call_id, c.name, c.arguments, c.result, lazy(k, verdicts[k]))
            for k, c in enumerate(calls)
        ]
        want = _eager_reasons(calls)
        assert superseded.qualifying_reasons(lazy_calls) == want
        assert superseded.qualifying_reasons(calls) == want
        # asked once at most, and only for a result some rule other than duplicate elides
        assert len(asked) == len(set(asked))
        for k in asked:
            assert calls[k].result is not None


def test_a_result_no_rule_elides_is_not_judged():
    from glyphfold.compaction.ladder.rungs.superseded import Call

    def judge():
        raise AssertionError("asked")

    calls = [Call("c1", "bash", {"command": "ls"}, "alpha\nbeta\ngamma\ndelta", judge)]
    assert superseded.qualifying_reasons(calls) == {}
