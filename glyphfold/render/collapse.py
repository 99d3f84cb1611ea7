"""Whitespace folding for transcripts: fewer cells, the same words (``collapse=True``).

In an agent transcript most whitespace carries no meaning: padding runs inside
lines, trailing blanks, stacks of blank lines, and deep indentation of code that
the reader only needs to *see* nested. With ``collapse`` the layout reads a
folded copy of the text:

* trailing spaces and tabs before a line break (or the end) go;
* blank lines (empty or whitespace-only): at most one is kept between two lines
  of text; in ``reflow`` mode none (a run of line breaks is one newline mark);
  blank lines before the first line of text go;
* indentation (spaces and tabs at the start of a line, tabs expanded to the tab
  stops) is halved, rounding up: 2 -> 1, 4 -> 2, 8 -> 4 cells, so each nesting
  level stays visible and relative depth is exact for 2- and 4-space code;
* any other run of spaces and tabs inside a line becomes one space.

Nothing else changes: every other character, line break and letter reaches the
layout as it was. Provenance is kept: ``orig[i]`` is the source offset of folded
character ``i`` (``orig[m] = n``); what was folded away before the first kept
character belongs to the first row, so page and row spans still tile the source.
"""

from __future__ import annotations

import re

import numpy as np

_LINE = re.compile(r"([^\n\r\x85\u2028\u2029]*)(\r\n|[\n\r\x85\u2028\u2029]|$)")
_RUN = re.compile(r"[ \t]{2,}|\t")
_INDENT = re.compile(r"[ \t]+")


def _indent_width(run: str, tab_size: int) -> int:
    col = 0
    for ch in run:
        col = (col // tab_size + 1) * tab_size if ch == "\t" else col + 1
    return col


class _Out:
    """The folded text as pieces, each with the source offsets of its characters."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.origs: list[np.ndarray] = []
        self.copied = 0  # output characters that are source characters (not synthetic)

    def copy(self, text: str, start: int, end: int) -> None:
        if end > start:
            self.pieces.append(text[start:end])
            self.origs.append(np.arange(start, end, dtype=np.int64))
            self.copied += end - start

    def spaces(self, count: int, at: int) -> None:
        if count > 0:
            self.pieces.append(" " * count)
            self.origs.append(np.full(count, at, dtype=np.int64))

    def line(self, text: str, a: int, b: int, tab_size: int) -> None:
        """Fold one line's content ``text[a:b]`` (no trailing blanks) into the output."""
        pos = a
        lead = _INDENT.match(text, a, b)
        if lead is not None:
            self.spaces(-(-_indent_width(lead.group(), tab_size) // 2), a)
            pos = lead.end()
        for run in _RUN.finditer(text, pos, b):
            self.copy(text, pos, run.start())
            self.spaces(1, run.start())
            pos = run.end()
        self.copy(text, pos, b)


def collapse_whitespace(
    text: str, *, reflow: bool = False, tab_size: int = 8
) -> tuple[str, np.ndarray, int]:
    """Fold ``text``; return (folded text, ``orig`` offsets (m + 1,), source chars folded away)."""
    out = _Out()
    seen_text = False
    blank_break: tuple[int, int] | None = None  # the break of the first blank line of a run
    for m in _LINE.finditer(text):
        a = m.start()
        if a == len(text) and not m.group(2):
            break  # the empty match at the very end
        content_end = a + len(m.group(1).rstrip(" \t"))
        if content_end == a:  # a blank line
            if seen_text and blank_break is None:
                blank_break = m.span(2)
            continue
        if blank_break is not None and not reflow:
            out.copy(text, *blank_break)  # one blank line stands for the run
        blank_break = None
        out.line(text, a, content_end, tab_size)
        out.copy(text, *m.span(2))
        seen_text = True
    folded = "".join(out.pieces)
    orig = np.concatenate([*out.origs, np.array([len(text)], dtype=np.int64)])
    return folded, orig, len(text) - out.copied
