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

The folding is a handful of whole-array numpy passes over the code points (no
per-line Python loop: it ran 10.7 of 18.9 s of a 1,000-message ``compact``,
issue 22); only indentation that holds a tab is measured line by line.
"""

from __future__ import annotations

import numpy as np

_SPACE, _TAB, _LF, _CR = 0x20, 0x09, 0x0A, 0x0D
_BREAKS = np.array([_LF, _CR, 0x85, 0x2028, 0x2029], dtype=np.uint32)


def _indent_width(run: np.ndarray, tab_size: int) -> int:
    col = 0
    for cp in run.tolist():
        col = (col // tab_size + 1) * tab_size if cp == _TAB else col + 1
    return col


def folded_bound(cps: np.ndarray, tab_size: int) -> int:
    """An upper bound of the folded length: a tab of indentation may become several spaces."""
    return int(cps.shape[0]) + int(np.count_nonzero(cps == _TAB)) * ((tab_size + 1) // 2)


def collapse_codepoints(
    cps: np.ndarray, *, reflow: bool = False, tab_size: int = 8, kernels: bool = False
) -> tuple[np.ndarray, np.ndarray, int]:
    """Fold code points ``cps`` (uint32); return (folded code points, ``orig`` (m + 1,),
    source chars folded away). Same rules and offsets as :func:`collapse_whitespace`.

    ``kernels`` folds in one pass of the numba kernel; otherwise whole-array numpy
    passes do it (same result, no numba import).
    """
    if kernels:
        from glyphfold.render import backend
        from glyphfold.render.layout import frozen

        size = folded_bound(cps, tab_size)
        out = np.empty(size, dtype=np.uint32)
        orig = np.empty(size + 1, dtype=np.int64)
        m, copied = backend.kernels().collapse_whitespace(
            frozen(cps), bool(reflow), int(tab_size), out, orig
        )
        return out[:m].copy(), orig[: m + 1].copy(), int(cps.shape[0]) - int(copied)
    return _collapse_numpy(cps, reflow=reflow, tab_size=tab_size)


def _collapse_numpy(
    cps: np.ndarray, *, reflow: bool, tab_size: int
) -> tuple[np.ndarray, np.ndarray, int]:
    n = int(cps.shape[0])
    idx = np.arange(n, dtype=np.int64)
    if n == 0:
        return cps[:0].copy(), np.zeros(1, dtype=np.int64), 0
    ws = (cps == _SPACE) | (cps == _TAB)
    brk = np.isin(cps, _BREAKS)
    # "\r\n" is one break: the "\r" does not end its line, the "\n" does
    cr_lf = np.zeros(n, dtype=bool)
    cr_lf[:-1] = (cps[:-1] == _CR) & (cps[1:] == _LF)
    ends = brk & ~cr_lf  # the last character of each line break
    line: np.ndarray = np.cumsum(ends) - ends  # line number of every character (breaks included)
    n_lines = int(line[-1]) + 1 + int(ends[-1])
    text = ~ws & ~brk
    has_text = np.bincount(line[text], minlength=n_lines) > 0
    # whitespace after the last printed character of its line (or of the text) goes
    solid = np.where(ws, n, idx)
    next_solid = np.minimum.accumulate(solid[::-1])[::-1]
    trailing = ws & ((next_solid == n) | brk[np.minimum(next_solid, n - 1)])
    prev_solid = np.maximum.accumulate(np.where(ws, -1, idx))
    leading = ws & ~trailing & ((prev_solid < 0) | brk[np.maximum(prev_solid, 0)])
    inner = ws & ~trailing & ~leading
    # counts[i]: output characters emitted at source offset i; out_cp: which
    counts = np.zeros(n, dtype=np.int64)
    copied = text.copy()
    # a line break is kept after a line of text; the break of the first blank line
    # after a text line stands for the run (not in reflow mode, not at the very end)
    keep_break = brk & has_text[line]
    if not reflow:
        later_text = np.zeros(n_lines, dtype=bool)  # some line after this one has text
        later_text[:-1] = np.logical_or.accumulate(has_text[::-1])[::-1][1:]
        prev_text = np.zeros(n_lines, dtype=bool)
        prev_text[1:] = has_text[:-1]
        first_blank = ~has_text & prev_text & later_text
        keep_break |= brk & first_blank[line]
    copied |= keep_break
    counts[copied] = 1
    # inner runs: a lone space stays as it is; two or more blanks, or a tab, are one space
    run_start = inner.copy()
    run_start[1:] &= ~inner[:-1]
    starts = np.flatnonzero(run_start)
    if starts.shape[0]:
        run_end = inner.copy()
        run_end[:-1] &= ~inner[1:]
        lengths = np.flatnonzero(run_end) - starts + 1
        lone_space = (lengths == 1) & (cps[starts] == _SPACE)
        copied[starts[lone_space]] = True
        counts[starts] = 1
    # indentation: half its width (tabs to the tab stops), rounded up, at the line start
    lead_start = leading.copy()
    lead_start[1:] &= ~leading[:-1]
    lstarts = np.flatnonzero(lead_start)
    if lstarts.shape[0]:
        lead_end = leading.copy()
        lead_end[:-1] &= ~leading[1:]
        lends = np.flatnonzero(lead_end) + 1
        widths = lends - lstarts
        tabbed = np.flatnonzero(np.bincount(line[leading & (cps == _TAB)], minlength=n_lines))
        if tabbed.shape[0]:
            # tabs are rare in indentation: those lines are measured one by one
            lines_of: np.ndarray = line[lstarts]
            for j in np.flatnonzero(np.isin(lines_of, tabbed)).tolist():
                a, b = int(lstarts[j]), int(lends[j])
                widths[j] = _indent_width(cps[a:b], tab_size)
        counts[lstarts] = (widths + 1) // 2
    out_cp = np.where(copied, cps, np.uint32(_SPACE)).astype(np.uint32, copy=False)
    folded = np.repeat(out_cp, counts)
    orig = np.empty(folded.shape[0] + 1, dtype=np.int64)
    orig[:-1] = np.repeat(idx, counts)
    orig[-1] = n
    return folded, orig, n - int(np.count_nonzero(copied))


def collapse_whitespace(
    text: str, *, reflow: bool = False, tab_size: int = 8, kernels: bool = False
) -> tuple[str, np.ndarray, int]:
    """Fold ``text``; return (folded text, ``orig`` offsets (m + 1,), source chars folded away)."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    folded, orig, gone = collapse_codepoints(cps, reflow=reflow, tab_size=tab_size, kernels=kernels)
    return folded.tobytes().decode("utf-32-le", "surrogatepass"), orig, gone
