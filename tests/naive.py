"""Naive pure-Python references for the render kernels (slow, obviously right).

The kernels in ``glyphfold.render._kernels`` and the numpy path in
``glyphfold.render.vector`` must produce exactly what these do.
They are written differently on purpose: layout tokenises the string with
regular expressions first, then flows tokens into rows; blit and pack loop
pixel by pixel.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from glyphfold.render import codes as K
from glyphfold.render.emoji import FOLD
from glyphfold.render.layout import RULES, classify

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI
    r"|\x1b\][^\x00-\x1f\x7f]*(?:\x07|\x1b\\)?"  # OSC, ended by BEL/ST or a control
    r"|\x1b[ -/][0-~]?"  # ESC intermediate final
    r"|\x1b[0-~]"  # two-character escapes
    r"|\x1b",  # a lone ESC
    re.DOTALL,
)
_DROP_RULE = {
    K.C_DROP_CONTROL: "control",
    K.C_DROP_FORMAT: "format",
    K.C_DROP_EMOJI: "emoji",
    K.C_DROP_COMBINING: "combining",
}


@dataclass
class Token:
    kind: str  # glyph | tab | nl | label | drop
    pos: int
    length: int = 1
    code: int = 0
    width: int = 1
    label: str = ""
    rule: str = ""


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into layout tokens."""
    out: list[Token] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        cp = ord(ch)
        k = classify(cp)
        if k == K.C_ESC:
            m = _ANSI.match(text, i)
            out.append(Token("drop", i, m.end() - i, rule="ansi"))
            i = m.end()
        elif k == K.C_CR and text.startswith("\r\n", i):
            out.append(Token("nl", i, 2))
            i += 2
        elif k in (K.C_CR, K.C_LF):
            out.append(Token("nl", i))
            i += 1
        elif k == K.C_TAB:
            out.append(Token("tab", i))
            i += 1
        elif k == K.C_FOLD:
            out.append(Token("label", i, label=FOLD[cp]))
            i += 1
        elif k in _DROP_RULE:
            out.append(Token("drop", i, rule=_DROP_RULE[k]))
            i += 1
        else:
            # a letter followed by combining marks shows its precomposed (NFC) form
            j = i + 1
            while j < n and classify(ord(text[j])) == K.C_DROP_COMBINING:
                j += 1
            if j > i + 1:
                composed = unicodedata.normalize("NFC", text[i:j])[0]
                if unicodedata.category(composed) not in ("Mn", "Me"):
                    cp = ord(composed)
                    k = classify(cp)
            out.append(Token("glyph", i, code=cp, width=2 if k == K.C_WIDE else 1))
            i += 1
    return out


@dataclass
class Row:
    start: int
    cells: list[tuple[int, int]] = field(default_factory=list)  # (code, source offset)


def naive_layout(
    text: str,
    *,
    cols: int,
    rows: int,
    tab_size: int = 8,
    reflow: bool = False,
    continuation: int = 0x21AA,
    newline: int = 0x258C,
    word_wrap: bool = True,
    join: int = 0x2590,
    wide_rows: int = 1,
) -> tuple[list[dict], dict[str, int]]:
    """Return (pages, dropped); each page has grid, src, row_start, span.

    Word wrap, as ``glyphfold.render.layout`` states it: the visible tokens are
    cut into words (``words``: each visible token's word number and the length
    of its word); a word that starts within the window before the row end and
    does not fit moves whole when a row holds it; a word split at the row end
    leaves the join mark in the row's last cell.

    ``wide_rows`` 2: after the rows are cut, each row holding a wide glyph gets a row
    under it with ``WIDE_BELOW`` under each left half and ``WIDE_CONT`` under each
    right half (no source of its own: it starts where the next row starts); pages
    are filled row by row, and a row with its row under it that does not fit whole
    starts the next page.
    """
    dropped = dict.fromkeys(RULES, 0)
    window = min(32, cols // 4) if word_wrap else 0
    toks = tokenize(text)
    visible = [i for i, t in enumerate(toks) if t.kind != "drop"]

    def kind(t: Token) -> str:  # "tok" (inside a word), "end" (closes a word), "brk"
        if t.kind != "glyph" or t.width != 1 or t.code == 0x20:
            return "brk"
        return "end" if chr(t.code) in ",;)]}" else "tok"

    # words: a maximal run of visible tokens where each one after the first follows a "tok"
    word_of: dict[int, int] = {}
    word_len: list[int] = []
    prev = "brk"
    for i in visible:
        k = kind(toks[i])
        if k != "brk" and prev == "tok":
            word_len[-1] += 1
        else:
            word_len.append(1)
        word_of[i] = len(word_len) - 1
        prev = k
    first_of_word = {}
    for i in visible:
        first_of_word.setdefault(word_of[i], i)
    done: list[Row] = []
    cur: Row | None = None
    cont = False
    pending: int | None = None

    def open_row(start: int) -> Row:
        nonlocal cont
        row = Row(start)
        if cont:
            row.cells.append((continuation, -1))
            cont = False
        return row

    def close(row: Row, *, wrapped: bool) -> None:
        nonlocal cont
        row.cells += [(K.BLANK, -1)] * (cols - len(row.cells))
        done.append(row)
        cont = wrapped and not reflow

    def ensure_open(pos: int) -> Row:
        nonlocal cur, pending
        if cur is None:
            cur = open_row(pending if pending is not None else pos)
            pending = None
        return cur

    fresh = cols - (0 if reflow else 1)
    for ti, tok in enumerate(toks):
        if tok.kind == "drop":
            dropped[tok.rule] += tok.length
            if cur is None and pending is None:
                pending = tok.pos
            continue
        row = ensure_open(tok.pos)
        if tok.kind == "glyph" and tok.width == 1 and window:
            w = word_of[ti]
            used = len(row.cells)
            lead = 1 if row.cells and row.cells[0] == (continuation, -1) else 0
            starts_word = first_of_word[w] == ti and kind(tok) != "brk"
            # the rest of this token's word, this token included
            rest = sum(1 for i in visible if i >= ti and word_of[i] == w)
            moves = starts_word and used > lead and cols - used <= window
            if (moves and cols - used < rest <= fresh) or used + 1 > cols:
                close(row, wrapped=True)
                cur = row = open_row(tok.pos)
            elif used + 1 == cols and kind(tok) == "tok" and rest > 1:
                if not starts_word:
                    row.cells.append((join, -1))
                close(row, wrapped=True)
                cur = row = open_row(tok.pos)
            row.cells.append((tok.code, tok.pos))
        elif tok.kind == "glyph":
            if len(row.cells) + tok.width > cols:
                close(row, wrapped=True)
                cur = row = open_row(tok.pos)
            row.cells.append((tok.code, tok.pos))
            if tok.width == 2:
                row.cells.append((K.WIDE_CONT, tok.pos))
        elif tok.kind == "tab":
            if len(row.cells) >= cols:
                close(row, wrapped=True)
                cur = row = open_row(tok.pos)
            stop = min((len(row.cells) // tab_size + 1) * tab_size, cols)
            row.cells += [(K.BLANK, tok.pos)] * (stop - len(row.cells))
        elif tok.kind == "nl":
            if reflow:
                if len(row.cells) >= cols:
                    close(row, wrapped=False)
                    cur = row = open_row(tok.pos)
                row.cells.append((newline, tok.pos))
            else:
                close(row, wrapped=False)
                cur = None
        elif tok.kind == "label":
            if len(row.cells) + len(tok.label) > cols:
                close(row, wrapped=True)
                cur = row = open_row(tok.pos)
            row.cells += [(ord(ch), tok.pos) for ch in tok.label]
    if cur is not None:
        close(cur, wrapped=False)
    end_start = pending if pending is not None else len(text)  # where a next row would start

    # pages: groups of rows; a wide row and the row of its lower halves stay together
    groups: list[list[Row]] = []
    for i, row in enumerate(done):
        group = [row]
        if wide_rows == 2 and any(code == K.WIDE_CONT for code, _ in row.cells):
            under = Row(done[i + 1].start if i + 1 < len(done) else end_start)
            under.cells = [(K.BLANK, -1)] * cols
            for c, (code, pos) in enumerate(row.cells):
                if code == K.WIDE_CONT:
                    under.cells[c - 1] = (K.WIDE_BELOW, pos)
                    under.cells[c] = (K.WIDE_CONT, pos)
            group.append(under)
        groups.append(group)
    paged: list[list[Row]] = [[]]
    for group in groups:
        if len(paged[-1]) + len(group) > rows:
            paged.append([])
        paged[-1].extend(group)
    pages = []
    for k, chunk in enumerate(paged):
        if not chunk:
            continue
        nxt = paged[k + 1][0].start if k + 1 < len(paged) else len(text)
        start = pages[-1]["span"][1] if pages else 0
        pages.append(
            {
                "grid": [[c for c, _ in r.cells] for r in chunk],
                "src": [[s for _, s in r.cells] for r in chunk],
                "row_start": [r.start for r in chunk],
                "span": (start, nxt),
            }
        )
    return pages, {k: v for k, v in dropped.items() if v}


def naive_blit(grid: list[list[int]], table: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Draw a grid of codes cell by cell, pixel by pixel."""
    ch, cw = cells.shape[1], cells.shape[2]
    out = np.zeros((len(grid) * ch, len(grid[0]) * cw), dtype=np.uint8)
    for r, row in enumerate(grid):
        prev = 0
        for c, code in enumerate(row):
            if code == K.WIDE_CONT:
                idx = prev + 1
            elif code == K.WIDE_BELOW:  # the lower left quarter of the wide glyph above
                idx = int(table[grid[r - 1][c]]) + 2
            else:
                idx = int(table[code])
            prev = idx
            for y in range(ch):
                for x in range(cw):
                    out[r * ch + y, c * cw + x] = cells[idx, y, x]
    return out


def naive_pack(pixels: np.ndarray, bits: int) -> bytes:
    """PNG scanlines (filter 0) of quantised 8-bit pixels at ``bits`` per pixel."""
    out = bytearray()
    for row in pixels.tolist():
        out.append(0)
        vals = [v >> (8 - bits) for v in row]
        bitstr = "".join(format(v, f"0{bits}b") for v in vals)
        bitstr += "0" * (-len(bitstr) % 8)
        out += bytes(int(bitstr[i : i + 8], 2) for i in range(0, len(bitstr), 8))
    return bytes(out)


_BREAKS = "\n\r\x85\u2028\u2029"


def naive_collapse(text: str, *, reflow: bool = False, tab_size: int = 8) -> tuple[str, list[int]]:
    """Whitespace folding, character by character: (folded text, source offset per char + n)."""
    # 1. cut into (content, break) lines by walking the string
    lines: list[tuple[int, int, int]] = []  # content start, content end, break end
    i = 0
    n = len(text)
    while i < n:
        j = i
        while j < n and text[j] not in _BREAKS:
            j += 1
        k = j + 2 if text.startswith("\r\n", j) else min(j + 1, n) if j < n else j
        lines.append((i, j, k))
        i = k
    out: list[tuple[str, int]] = []
    pending_blank: tuple[int, int] | None = None
    seen = False
    for a, b, k in lines:
        end = b
        while end > a and text[end - 1] in " \t":
            end -= 1
        if end == a:
            if seen and pending_blank is None:
                pending_blank = (b, k)
            continue
        if pending_blank is not None and not reflow:
            out += [(text[x], x) for x in range(*pending_blank)]
        pending_blank = None
        x = a
        col = 0
        while x < end and text[x] in " \t":
            col = (col // tab_size + 1) * tab_size if text[x] == "\t" else col + 1
            x += 1
        out += [(" ", a)] * ((col + 1) // 2)
        while x < end:
            if text[x] in " \t":
                y = x
                while y < end and text[y] in " \t":
                    y += 1
                out.append((" ", x))  # a run (or a lone tab) is one space
                x = y
            else:
                out.append((text[x], x))
                x += 1
        out += [(text[x], x) for x in range(b, k)]
        seen = True
    folded = "".join(c for c, _ in out)
    return folded, [o for _, o in out] + [n]


def naive_distinct(cps: list[int]) -> list[int]:
    """The distinct code points of ``cps``, ascending (the layout's ``distinct``)."""
    return sorted(set(cps))
