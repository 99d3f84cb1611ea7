"""The elision rules' fast paths give the answers of the plain regexes (SPEC §5.8, issue 22).

``error_text`` and ``is_test_run`` skip a window that holds none of the literals every
match needs, and ``text_reason`` stops counting progress lines once the verdict is
settled: on random texts built from the patterns' own fragments (and near misses,
other cases, non-ASCII look-alikes), the answers equal the plain searches'.
"""

from __future__ import annotations

import random
import re

from glyphfold.compaction.ladder.rungs.elide import ElideConfig
from glyphfold.compaction.ladder.rungs.notable import error_text
from glyphfold.compaction.ladder.rungs.superseded import (
    _PROGRESS_LINE,
    _TEST_RUN,
    _is_progress_line,
    is_test_run,
    text_reason,
)

FRAGMENTS = [
    "Traceback (most recent call last)",
    "traceback",
    "exit code 1",
    "EXIT STATUS: 2",
    "Exited with code -1",
    "exıt code 1",  # dotless i: matches (?i)exit
    "returncode=3",
    "Return Code: 0",
    "FAILED",
    "FAILED (failures=1)",
    "ERROR",
    "3 failed",
    "failed",
    "AssertionError",
    "ValueError: bad",
    "Exception: x",
    "error: linker",
    "error[E0425]: x",
    "thread 'main' panicked at",
    "npm ERR! code 1",
    "Segmentation fault",
    "bash: foo: command not found",
    "No such file or directory",
    "Permission denied",
    "===== test session starts =====",
    "== FAILURES ==",
    "5 passed",
    "2 errors",
    "1 error",
    "Ran 3 tests in 0.1s",
    "OK",
    "OK (skipped=1)",
    "Tests: 4",
    "test result: ok",
    "PASS src/a.test.js",
    "FAIL ",
    "Collecting numpy",
    "Downloading x.whl",
    " 45%|####      |",
    "  12.5% [",
    "100%",
    "7 % |",
    "1234%|",
    "##########",
    "#=#=#=#=",
    "███████▏",
    "=======",
    "Get:1 http://deb",
    "   Hit:12 x",
    "npm added 12 packages",
    "removed 1 package",
    "Cloning into 'x'",
    "\u00a0 Collecting y",
    "plain words here",
    "the value of the data",
    "K",
    "ſ",
    "é",
    "\t",
    "",
]


def _texts(n: int, seed: int = 3) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        parts = [rnd.choice(FRAGMENTS) for _ in range(rnd.randrange(1, 9))]
        seps = ["\n", " ", "", "\r\n", "x", "\r", "\n\r\n", " \n"]
        text = ""
        for p in parts:
            text += p + rnd.choice(seps)
        if rnd.random() < 0.2:
            text = "filler line\n" * rnd.randrange(1, 800) + text  # long: head/tail windows
        out.append(text)
    return out


def _plain_error(text: str, cfg: ElideConfig) -> bool:
    head, tail = cfg.scan_head_chars, cfg.scan_tail_chars
    pat = cfg.compiled_errors()
    if len(text) <= head + tail:
        return pat.search(text) is not None
    return bool(pat.search(text, 0, head) or pat.search(text, len(text) - tail))


def _plain_reason(text: str) -> str | None:
    body = text.strip()
    if not body:
        return "empty"
    lines = [ln for ln in re.split(r"[\r\n]+", body) if ln.strip()]
    if len(lines) >= 3:
        noisy = sum(1 for ln in lines if _PROGRESS_LINE.match(ln))
        if noisy * 10 >= len(lines) * 8:
            return "progress"
    return None


def test_prefiltered_rules_answer_as_the_plain_regexes():
    cfg = ElideConfig()
    texts = _texts(1500)
    hits = 0
    for t in texts:
        plain = _plain_error(t, cfg)
        assert error_text(t, cfg) == plain, t
        hits += plain
        run = bool(_TEST_RUN.search(t[:4000]) or _TEST_RUN.search(t[-4000:]))
        assert is_test_run(t) == run, t
        reason = text_reason(t)
        if reason != "confirmation":
            assert reason == _plain_reason(t), t
    assert 150 < hits < len(texts) - 150  # both answers well represented


def test_custom_error_patterns_are_searched_without_the_prefilter():
    cfg = ElideConfig(error_patterns=(r"\bkaboom\b",))
    assert error_text("all fine, then kaboom", cfg)
    assert not error_text("Traceback (most recent call last)", cfg)


def test_the_split_progress_line_test_answers_as_the_one_regex():
    """``_is_progress_line`` (a start, a percentage, a bar: three linear scans) equals the
    rule written as one regex on lines built from the fragments (issue 22)."""
    rnd = random.Random(5)
    for _ in range(20000):
        parts = [rnd.choice(FRAGMENTS) for _ in range(rnd.randrange(1, 5))]
        line = rnd.choice(["", " ", "\t", "  "]).join(parts)
        line = rnd.choice(["", " ", "\t", "x ", "\u2003"]) + line
        assert _is_progress_line(line) == (_PROGRESS_LINE.match(line) is not None), repr(line)


def test_one_spaced_commands_equal_the_split_and_join():
    """A call's key normalises its command's whitespace; the shortcut for a command that
    is already one-spaced gives the same key (issue 22)."""
    import sys

    from glyphfold.compaction.ladder.rungs.superseded import _one_spaced

    # the shortcut's premise: only the ASCII space is both whitespace and printable
    spaces = [chr(i) for i in range(sys.maxunicode + 1) if chr(i).isspace()]
    assert [c for c in spaces if c.isprintable()] == [" "]
    rnd = random.Random(7)
    alphabet = ["a", "b", "é", "-", "'", *spaces]
    scripts = ["a", "b", "é", " ", "  ", "\n", "\n\n", " \n"]  # spaces and newlines only
    for _ in range(20000):
        cmd = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 10)))
        assert _one_spaced(cmd) == " ".join(cmd.split()), repr(cmd)
        cmd = "".join(rnd.choice(scripts) for _ in range(rnd.randrange(0, 12)))
        assert _one_spaced(cmd) == " ".join(cmd.split()), repr(cmd)
    assert _one_spaced("cat a.py && ls") == "cat a.py && ls"


def test_result_text_of_one_text_and_of_mixed_content():
    from glyphfold.compaction.history.model import Image, Text, ToolResult
    from glyphfold.compaction.ladder.rungs.common import result_text

    img = Image(url="http://x/a.png")
    assert result_text(ToolResult("c", (Text("one"),))) == "one"
    assert result_text(ToolResult("c", (Text("a"), img, Text("b")))) == "a\nb"
    assert result_text(ToolResult("c", (img,))) == ""
    assert result_text(ToolResult("c", ())) == ""


def test_progress_settled_on_the_first_lines_answers_as_the_count_of_all():
    """text_reason settles a non-progress text on its first lines (more misses than a
    fifth of all lines, blank ones included); near the four-in-five boundary, with blank
    and whitespace-only lines and CRs, it answers as counting every line (issue 22)."""
    rnd = random.Random(11)
    progress = ["Collecting x", " 45%|####      |", "Get:1 http://a", "##########"]
    other = ["plain words", "x = 1", "the value"]
    blank = ["", "   ", "\t"]
    answers = set()
    for _ in range(4000):
        n = rnd.randrange(1, 60)
        share = rnd.choice([0.0, 0.5, 0.75, 0.8, 0.85, 1.0])
        lines = []
        for _ in range(n):
            r = rnd.random()
            pool = blank if r < 0.15 else progress if rnd.random() < share else other
            lines.append(rnd.choice(pool))
        text = rnd.choice(["\n", "\r\n", "\r"]).join(lines)
        got = text_reason(text)
        if got != "confirmation":
            assert got == _plain_reason(text), repr(text)
        answers.add(got)
    assert {"progress", None} <= answers
