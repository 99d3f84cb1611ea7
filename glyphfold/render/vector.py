"""The numpy path: the kernels' contracts in vectorised numpy and plain Python, no numba.

A fresh process that renders a tool-result-sized text pays more for importing
numba and dispatching its first kernel (about a second of CPU, with a warm
cache) than for the render itself. Small inputs in a process that has not
loaded the kernels take this path instead (:mod:`glyphfold.render.backend`
decides). It produces exactly what the kernels produce, byte for byte: the
tests compare both, and both with ``tests/naive.py``, with the JIT on and off.

* :class:`VectorLayout` lays a text out run by run: a run of narrow characters
  is copied with one slice per row, only the other characters (tabs, wide
  glyphs, line breaks, labels, dropped characters) are handled one by one.
* :func:`blit_page` / :func:`blit_bits` gather atlas cells with fancy indexing.
* :func:`pack_rows` packs 8-bit rows into PNG scanlines.
"""

from __future__ import annotations

import bisect

import numpy as np

from glyphfold.render.codes import (
    BLANK,
    C_CR,
    C_FOLD,
    C_LF,
    C_NARROW,
    C_TAB,
    C_WIDE,
    R_ANSI,
    S_CONT,
    S_POS,
    U_BREAK,
    U_TOKEN,
    WIDE_BELOW,
    WIDE_CONT,
    ansi_len,
    drop_rule,
    unit,
)


class VectorLayout:
    """The ``layout_page`` contract for one text, computed run by run.

    ``cps`` (uint32) and ``cls`` (the class table) are those the kernel would get;
    :meth:`page` takes the rest of the kernel's arguments and fills the same
    outputs (``grid``, ``src``, ``row_start``, ``counts``, ``state``).
    """

    def __init__(
        self,
        cps: np.ndarray,
        cls: np.ndarray,
        fold_keys: np.ndarray,
        fold_off: np.ndarray,
        fold_chars: np.ndarray,
    ) -> None:
        self.cps = cps
        self.n = int(cps.shape[0])
        kinds = cls[cps]
        self.kinds = kinds.tolist()
        self.codes = cps.tolist()
        # offsets of every character that is not plain narrow text, then a sentinel
        self.special = [*np.flatnonzero(kinds != C_NARROW).tolist(), self.n]
        self.labels = {
            int(k): fold_chars[fold_off[i] : fold_off[i + 1]].tolist()
            for i, k in enumerate(fold_keys.tolist())
        }
        self._si = 0  # index into ``special`` of the first special at or after the cursor
        self._no_counts = np.zeros(0, dtype=np.int64)  # look-ahead never counts

    def skip_dropped(self, pos: int, counts: np.ndarray, count: bool) -> int:
        """Consume characters dropped by rule from ``pos``; return the next offset."""
        kinds, n = self.kinds, self.n
        while pos < n:
            rule = drop_rule(kinds[pos])
            if rule < 0:
                break
            m = ansi_len(self.codes, pos, n) if rule == R_ANSI else 1
            if count:
                counts[rule] += m
            pos += m
        return pos

    def _unit(self, i: int) -> int:
        return unit(self.kinds[i], self.codes[i])

    def _continues(self, i: int) -> bool:
        """Whether the next visible character from ``i`` goes on a token (not a break)."""
        nxt = self.skip_dropped(i, self._no_counts, False)
        return nxt < self.n and self._unit(nxt) != U_BREAK

    def _token_width(self, pos: int, limit: int) -> int:
        """The kernels' ``_token_width``: cells of the token at ``pos``, at most ``limit + 1``."""
        w, u, i = 1, self._unit(pos), pos
        while u == U_TOKEN and w <= limit:
            i = self.skip_dropped(i + 1, self._no_counts, False)
            if i >= self.n:
                break
            u = self._unit(i)
            if u == U_BREAK:
                break
            w += 1
        return w

    def _run_end(self, pos: int) -> int:
        """End of the run of narrow characters that starts at ``pos``."""
        special, si = self.special, self._si
        if special[si] < pos:  # the cursor moved on: catch up (never backwards)
            while special[si] < pos:
                si += 1
            self._si = si
        return special[si]

    def page(
        self,
        tab_size: int,
        reflow: bool,
        cont_code: int,
        nl_code: int,
        join_code: int,
        window: int,
        wide_rows: int,
        state: np.ndarray,
        grid: np.ndarray,
        src: np.ndarray,
        row_start: np.ndarray,
        counts: np.ndarray,
    ) -> int:
        """Lay out one page from ``state[S_POS]``; return the rows used (as the kernel)."""
        kinds, codes, n = self.kinds, self.codes, self.n
        rows, cols = grid.shape
        want_src = src.shape[0] > 0
        pos, cont = int(state[S_POS]), int(state[S_CONT])
        if pos == 0:  # a new pass over the text: the run cursor starts again
            self._si = 0
        wrap_cont = 0 if reflow else 1
        prev_tok = False  # the last unit placed on this row is inside a token
        lead = 0  # cells the row opened with (the continuation mark)
        grid[:] = BLANK  # padding everywhere; cells below overwrite it
        if want_src:
            src[:] = -1
        r = c = 0
        row_open = False
        row_wide = False  # the row holds a wide glyph drawn two rows tall
        start, cont_open, saved = pos, cont, counts.copy()
        while r < rows:
            if not row_open:
                if row_wide:
                    _lower_halves(grid, src, r, want_src)
                    row_start[r] = pos
                    r, row_wide = r + 1, False
                    if r >= rows:
                        break
                start, cont_open = pos, cont
                if wide_rows > 1:  # a row may have to start the next page: its counts back
                    saved = counts.copy()
                pos = self.skip_dropped(pos, counts, True)
                if pos >= n:
                    break
                row_start[r] = start
                row_open, prev_tok = True, False
                c = lead = 0
                if cont:
                    grid[r, 0] = cont_code
                    c = lead = 1
                    cont = 0
            k = kinds[pos]
            if k == C_NARROW:
                run = self._run_end(pos) - pos
                if window <= 0:
                    take = min(run, cols - c)
                elif cols - c > window:  # far from the row end: no break decision to take
                    take = min(run, cols - c - window)
                elif c + run <= cols and not (
                    self._unit(pos + run - 1) == U_TOKEN and self._continues(pos + run)
                ):  # the rest of the run fits and its last token ends in it
                    take = run
                else:  # near the row end: as the kernel decides it, a token at a time
                    u = self._unit(pos)
                    take = 1
                    if u != U_BREAK and not prev_tok:
                        fresh = cols - wrap_cont
                        need = self._token_width(pos, fresh)
                        if c > lead and cols - c < need <= fresh:
                            r, row_open, cont = r + 1, False, wrap_cont
                            continue
                        if need <= cols - c and need <= run:
                            # the whole token fits this row and lies in this run: no
                            # character of it ends the row inside the token
                            take = need
                    if c + 1 > cols:
                        r, row_open, cont = r + 1, False, wrap_cont
                        continue
                    if u == U_TOKEN and c + 1 == cols and self._continues(pos + 1):
                        if prev_tok:
                            grid[r, c] = join_code
                        r, row_open, cont = r + 1, False, wrap_cont
                        continue
                if take <= 0:
                    r, row_open, cont = r + 1, False, wrap_cont
                    continue
                grid[r, c : c + take] = self.cps[pos : pos + take]
                if want_src:
                    src[r, c : c + take] = np.arange(pos, pos + take)
                c += take
                pos += take
                prev_tok = self._unit(pos - 1) == U_TOKEN
            elif k == C_WIDE:
                if c + 2 > cols:
                    r, row_open, cont = r + 1, False, wrap_cont
                    continue
                if wide_rows > 1 and r + 1 >= rows:
                    # two rows tall, a wide glyph never sits on the last row: the row
                    # starts the next page, with what it holds so far
                    grid[r] = BLANK
                    if want_src:
                        src[r] = -1
                    counts[:] = saved
                    pos, cont, row_open = start, cont_open, False
                    self._si = bisect.bisect_left(self.special, pos)  # the cursor goes back
                    break
                grid[r, c] = codes[pos]
                grid[r, c + 1] = WIDE_CONT
                if want_src:
                    src[r, c : c + 2] = pos
                c += 2
                pos += 1
                prev_tok = False
                row_wide = wide_rows > 1
            elif k in (C_LF, C_CR):
                step = 2 if k == C_CR and pos + 1 < n and codes[pos + 1] == 0x0A else 1
                if not reflow:
                    pos += step
                    r, row_open = r + 1, False
                elif c >= cols:
                    r, row_open = r + 1, False
                else:
                    grid[r, c] = nl_code
                    if want_src:
                        src[r, c] = pos
                    c += 1
                    pos += step
                    prev_tok = False
            elif k == C_TAB:
                if c >= cols:
                    r, row_open, cont = r + 1, False, wrap_cont
                    continue
                stop = min((c // tab_size + 1) * tab_size, cols)
                if want_src:
                    src[r, c:stop] = pos
                c = stop
                pos += 1
                prev_tok = False
            elif k == C_FOLD:
                label = self.labels[codes[pos]]
                if c + len(label) > cols:
                    r, row_open, cont = r + 1, False, wrap_cont
                    continue
                grid[r, c : c + len(label)] = label
                if want_src:
                    src[r, c : c + len(label)] = pos
                c += len(label)
                pos += 1
                prev_tok = False
            else:
                nxt = self.skip_dropped(pos, counts, True)
                if nxt == pos:  # a class no rule knows: the caller's table is incomplete
                    return -1 - pos
                pos = nxt
            if pos >= n:
                break
        if row_open:
            r += 1
        if row_wide:  # the last row holds wide glyphs (never the page's last row)
            _lower_halves(grid, src, r, want_src)
            row_start[r] = pos
            r += 1
        if pos < n and not cont and self.skip_dropped(pos, counts, False) >= n:
            # characters left that would all be dropped belong to this page, not a blank one
            pos = self.skip_dropped(pos, counts, True)
        state[S_POS] = pos
        state[S_CONT] = cont
        return r


def _lower_halves(grid: np.ndarray, src: np.ndarray, r: int, want_src: bool) -> None:
    """Fill row ``r`` with the lower halves of the wide glyphs of row ``r - 1`` (the kernel's)."""
    left = np.flatnonzero(grid[r - 1, 1:] == WIDE_CONT)
    grid[r, left] = WIDE_BELOW
    grid[r, left + 1] = WIDE_CONT
    if want_src:
        src[r, left] = src[r - 1, left]
        src[r, left + 1] = src[r - 1, left]


_SEEN_MIN = 1 << 16  # from this many code points, a seen-table beats sorting


def distinct(cps: np.ndarray) -> np.ndarray:
    """The distinct values of the code point array ``cps``, ascending.

    Not ``np.unique``: its first call imports ``numpy.ma`` (~40 ms of a fresh
    process's first page, issue 22). Small arrays are sorted; large ones mark a
    table of every code point (no sort).
    """
    if cps.shape[0] < _SEEN_MIN:
        s = np.sort(cps)
        if not s.shape[0]:
            return s
        keep = np.empty(s.shape[0], dtype=np.bool_)
        keep[0] = True
        np.not_equal(s[1:], s[:-1], out=keep[1:])
        return s[keep]
    seen = np.zeros(int(cps.max()) + 1, dtype=np.bool_)
    seen[cps] = True
    return np.flatnonzero(seen).astype(cps.dtype, copy=False)


def unclassified(cps: np.ndarray, cls: np.ndarray) -> list[int]:
    """The distinct code points of ``cps`` whose class is still unknown (0)."""
    if not cps.shape[0]:
        return []
    return distinct(cps[cls[cps] == 0]).tolist()


def unmapped(cps: np.ndarray, cls: np.ndarray, table: np.ndarray) -> list[int]:
    """The distinct visible (narrow or wide) code points of ``cps`` with no atlas slot."""
    if not cps.shape[0]:
        return []
    todo = cps[table[cps] < 0]
    if not todo.shape[0]:
        return []
    k = cls[todo]
    return distinct(todo[(k == C_NARROW) | (k == C_WIDE)]).tolist()


def slots(grid: np.ndarray, table: np.ndarray, ink: np.ndarray, stride: int) -> np.ndarray:
    """Atlas slot of every cell of ``grid`` (the kernels' ``_slots``, all rows at once)."""
    out = table[grid].astype(np.int64)
    if ink.shape[0]:
        out += ink[: grid.shape[0]].astype(np.int64) * stride
    below = grid[1:] == WIDE_BELOW  # never in row 0: it lies under its upper half
    if below.any():
        above = table[grid[:-1]].astype(np.int64) + 2
        if ink.shape[0]:
            above += ink[1 : grid.shape[0]].astype(np.int64) * stride
        out[1:][below] = above[below]
    wide = grid[:, 1:] == WIDE_CONT  # never in column 0: it follows its left half
    if wide.any():
        out[:, 1:][wide] = out[:, :-1][wide] + 1
    return out


def _cells_image(cells: np.ndarray, idx: np.ndarray) -> np.ndarray:
    rows, cols = idx.shape
    ch, cw = cells.shape[1], cells.shape[2]
    return cells[idx].transpose(0, 2, 1, 3).reshape(rows * ch, cols * cw)


def blit_page(grid, n_rows, table, cells, ink, stride, page, y0, x0) -> None:
    """The kernels' ``blit_page`` (and its 64-bit variants' pixels), by fancy indexing."""
    if n_rows == 0:
        return
    img = _cells_image(cells, slots(grid[:n_rows], table, ink, stride))
    page[y0 : y0 + img.shape[0], x0 : x0 + img.shape[1]] = img


def blit_bits(grid, n_rows, table, cells, out, y0, x0) -> None:
    """The kernels' ``blit_bits``: 1-bpp scanlines (filter byte 0) from 0/255 ``cells``.

    Every bit outside the cells (left margin ``x0`` px, the row's end) is paper.
    """
    if n_rows == 0:
        return
    no_ink = np.empty((0, 0), dtype=np.uint8)
    img = _cells_image(cells, slots(grid[:n_rows], table, no_ink, 0))
    h = img.shape[0]
    bits = np.ones((h, (out.shape[1] - 1) * 8), dtype=bool)
    bits[:, x0 : x0 + img.shape[1]] = img >= 128
    out[y0 : y0 + h, 0] = 0
    out[y0 : y0 + h, 1:] = np.packbits(bits, axis=1)


def pack_rows(page: np.ndarray, height: int, bits: int, out: np.ndarray) -> None:
    """The kernels' ``pack_rows``: the top ``bits`` of each pixel, left pixel highest.

    A partial last byte is padded with zero bits, and only ``out``'s width is kept
    (a padded page packed whole, then cut to the image's row, as the kernels do).
    """
    per_byte = 8 // bits
    vals = page[:height] >> np.uint8(8 - bits)
    pad = -vals.shape[1] % per_byte
    if pad:
        vals = np.pad(vals, ((0, 0), (0, pad)))
    vals = vals.reshape(height, -1, per_byte).astype(np.uint16)
    shifts = (bits * np.arange(per_byte - 1, -1, -1)).astype(np.uint16)
    packed = (vals << shifts).sum(axis=2, dtype=np.uint16).astype(np.uint8)
    out[:height, 0] = 0
    out[:height, 1:] = packed[:, : out.shape[1] - 1]
