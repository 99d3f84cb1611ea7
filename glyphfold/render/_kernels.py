"""numba kernels: layout one page of cells, blit cells into pixels, pack bits.

Arrays and scalars in, arrays out; nothing here allocates what the caller can
give, and nothing holds Python objects. Compile flags and the cache directory
come from ``glyphfold.render._jit``; the codes from ``glyphfold.render.codes``.
The same code runs with ``NUMBA_DISABLE_JIT=1`` (then it is plain Python), and
tests compare it with the naive references in ``tests/naive.py`` and with the
numpy path (``glyphfold.render.vector``) that renders small inputs without numba.
"""

from __future__ import annotations

import numpy as np

from glyphfold.render._jit import kernel
from glyphfold.render.codes import (
    BLANK,
    C_CR,
    C_FOLD,
    C_LF,
    C_NARROW,
    C_TAB,
    C_WIDE,
    R_ANSI,
    R_EMOJI,
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

# The shared rules, written once in ``codes`` (plain Python for the numpy path) and
# compiled here; the cache locator of ``_jit`` stamps kernels with both files.
_ansi_len = kernel(ansi_len)
_drop_rule = kernel(drop_rule)
_unit = kernel(unit)


@kernel
def layout_page(
    cps,
    cls,
    fold_keys,
    fold_off,
    fold_chars,
    tab_size,
    reflow,
    cont_code,
    nl_code,
    join_code,
    window,
    wide_rows,
    state,
    grid,
    src,
    row_start,
    counts,
):
    """Lay out source code points from ``state[S_POS]`` into one page of cells.

    ``grid`` (rows, cols) int32 receives cell codes (code points, ``WIDE_CONT`` for
    the right half of a wide glyph, ``BLANK`` padding); ``src`` of the same shape
    receives the source offset of each cell (-1 for padding and marks) when it has
    rows, else is ignored. ``row_start[r]`` gets the source offset at which row
    ``r`` begins. ``counts`` accumulates dropped-by-rule characters. ``state`` is
    updated in place so the next call continues.

    Word wrap (``window`` > 0, see ``glyphfold.render.layout``): a token that
    starts at most ``window`` cells before the row end and does not fit there moves
    whole to the next row when a row can hold it; a token that must be split ends
    its row with ``join_code``.

    ``wide_rows`` 2 (rows too short for an ideograph): a row holding a wide glyph is
    followed by a row that shows the glyphs' lower halves (``WIDE_BELOW`` under each
    left half, ``WIDE_CONT`` under the right; the row covers no source), and such a
    row never is the page's last: it starts the next page, whole. Returns the number
    of rows used, or ``-1 - offset`` for a code point whose class was never filled in.
    """
    n = cps.shape[0]
    rows = grid.shape[0]
    cols = grid.shape[1]
    want_src = src.shape[0] > 0
    pos = state[S_POS]
    cont = state[S_CONT]
    wrap_cont = 0 if reflow else 1
    prev_tok = False  # the last unit placed on this row is inside a token (U_TOKEN)
    lead = 0  # cells the row opened with (the continuation mark)
    # padding everywhere first: rows end wherever their last cell was written
    grid[:, :] = BLANK
    if want_src:
        src[:, :] = -1
    r = 0
    c = 0
    row_open = False
    row_wide = False  # the row holds a wide glyph drawn two rows tall
    start = pos
    cont_open = cont  # ``cont`` before the row opened (a row moved to the next page)
    saved = np.zeros(counts.shape[0], dtype=np.int64)  # ``counts`` before the row opened
    while r < rows:
        if not row_open:
            if row_wide:
                # np.int64: a row index numba could type as the literal 0 here would
                # compile a second specialisation of the callee (one per kernel)
                _lower_halves(grid, src, np.int64(r), want_src)
                row_start[r] = pos
                r += 1
                row_wide = False
                if r >= rows:
                    break
            start = pos
            cont_open = cont
            if wide_rows > 1:  # a row may have to start the next page: its counts back
                saved[:] = counts
            # characters that never reach the page do not open a row (no blank
            # trailing rows or pages); they belong to the row they precede or end
            pos = skip_dropped(cps, cls, pos, n, counts)
            if pos >= n:
                break
            row_start[r] = start
            row_open = True
            prev_tok = False
            c = 0
            lead = 0
            if cont:
                grid[r, 0] = cont_code
                c = 1
                lead = 1
                cont = 0
        if pos >= n:
            break
        cp = cps[pos]
        k = cls[cp]
        if k == C_NARROW:
            u = _unit(k, cp)
            if window > 0 and u != U_BREAK and not prev_tok and c > lead and cols - c <= window:
                # a token starts near the row end: move it whole if a row can hold it
                fresh = cols - wrap_cont
                need = _token_width(cps, cls, pos, n, fresh)
                if cols - c < need <= fresh:
                    r += 1
                    row_open = False
                    cont = wrap_cont
                    continue
            if c + 1 > cols:
                r += 1
                row_open = False
                cont = wrap_cont
                continue
            if window > 0 and u == U_TOKEN and c + 1 == cols:
                nxt = _next_visible(cps, cls, pos + 1, n)
                if nxt < n and _unit(cls[cps[nxt]], cps[nxt]) != U_BREAK:
                    # the token goes on past the row end: the last cell says so (a token
                    # that would start in the last cell just starts the next row)
                    if prev_tok:
                        grid[r, c] = join_code
                    r += 1
                    row_open = False
                    cont = wrap_cont
                    continue
            grid[r, c] = cp
            if want_src:
                src[r, c] = pos
            c += 1
            pos += 1
            prev_tok = u == U_TOKEN
        elif k == C_WIDE:
            if c + 2 > cols:
                r += 1
                row_open = False
                cont = wrap_cont
                continue
            if wide_rows > 1 and r + 1 >= rows:
                # two rows tall, a wide glyph never sits on the last row: the row
                # starts the next page, with what it holds so far
                grid[r, :] = BLANK
                if want_src:
                    src[r, :] = -1
                counts[:] = saved
                pos = start
                cont = cont_open
                row_open = False
                break
            grid[r, c] = cp
            grid[r, c + 1] = WIDE_CONT
            if want_src:
                src[r, c] = pos
                src[r, c + 1] = pos
            c += 2
            pos += 1
            prev_tok = False
            row_wide = wide_rows > 1
        elif k == C_LF or k == C_CR:  # noqa: SIM109
            step = 1
            if k == C_CR and pos + 1 < n and cps[pos + 1] == 0x0A:
                step = 2
            if reflow:
                if c >= cols:
                    r += 1
                    row_open = False
                    continue
                grid[r, c] = nl_code
                if want_src:
                    src[r, c] = pos
                c += 1
                pos += step
                prev_tok = False
            else:
                pos += step
                r += 1
                row_open = False
        elif k == C_TAB:
            if c >= cols:
                r += 1
                row_open = False
                cont = wrap_cont
                continue
            stop = (c // tab_size + 1) * tab_size
            if stop > cols:
                stop = cols
            if want_src:
                src[r, c:stop] = pos
            c = stop
            pos += 1
            prev_tok = False
        elif k == C_FOLD:
            lo = 0
            hi = fold_keys.shape[0] - 1
            found = -1
            while lo <= hi:
                mid = (lo + hi) // 2
                if fold_keys[mid] == cp:
                    found = mid
                    break
                if fold_keys[mid] < cp:
                    lo = mid + 1
                else:
                    hi = mid - 1
            if found < 0:  # pragma: no cover - C_FOLD is only set for table keys
                counts[R_EMOJI] += 1
                pos += 1
                continue
            # a label is atomic, like a wide glyph: it wraps whole (MIN_COLS fits any)
            a = fold_off[found]
            b = fold_off[found + 1]
            if c + (b - a) > cols:
                r += 1
                row_open = False
                cont = wrap_cont
                continue
            for j in range(a, b):
                grid[r, c] = fold_chars[j]
                if want_src:
                    src[r, c] = pos
                c += 1
            pos += 1
            prev_tok = False
        else:
            nxt = skip_dropped(cps, cls, pos, n, counts)
            if nxt == pos:  # a class no rule knows: the caller's table is incomplete
                return -1 - pos
            pos = nxt
    if row_open:
        r += 1
    if row_wide:  # the last row holds wide glyphs (never the page's last row)
        _lower_halves(grid, src, np.int64(r), want_src)
        row_start[r] = pos
        r += 1
    if pos < n and not cont and _only_dropped_from(cps, cls, pos, n):
        # characters left that would all be dropped belong to this page, not a blank one
        pos = skip_dropped(cps, cls, pos, n, counts)
    state[S_POS] = pos
    state[S_CONT] = cont
    return r


@kernel
def _lower_halves(grid, src, r, want_src):
    """Fill row ``r`` with the lower halves of the wide glyphs of row ``r - 1``."""
    for j in range(grid.shape[1] - 1):
        if grid[r - 1, j + 1] == WIDE_CONT:
            grid[r, j] = WIDE_BELOW
            grid[r, j + 1] = WIDE_CONT
            if want_src:
                src[r, j] = src[r - 1, j]
                src[r, j + 1] = src[r - 1, j]


@kernel
def skip_dropped(cps, cls, pos, n, counts):
    """Consume the characters from ``pos`` that are dropped by rule; return the next offset.

    Each is added to its rule's counter in ``counts``.
    """
    while pos < n:
        rule = _drop_rule(cls[cps[pos]])
        if rule < 0:
            break
        m = _ansi_len(cps, pos, n) if rule == R_ANSI else 1
        counts[rule] += m
        pos += m
    return pos


@kernel
def _next_visible(cps, cls, pos, n):
    """Offset of the first character from ``pos`` that is not dropped by rule (or ``n``)."""
    while pos < n:
        rule = _drop_rule(cls[cps[pos]])
        if rule < 0:
            return pos
        pos += _ansi_len(cps, pos, n) if rule == R_ANSI else 1
    return n


@kernel
def _token_width(cps, cls, pos, n, limit):
    """Cells of the token that starts at ``pos`` (a narrow, non-break unit), at most ``limit + 1``.

    A token is a run of ``U_TOKEN`` characters and the ``U_END`` one that closes it;
    characters dropped by rule inside it take no cell.
    """
    w = 1
    u = _unit(cls[cps[pos]], cps[pos])
    i = pos
    while u == U_TOKEN and w <= limit:
        i = _next_visible(cps, cls, i + 1, n)
        if i >= n:
            break
        u = _unit(cls[cps[i]], cps[i])
        if u == U_BREAK:
            break
        w += 1
    return w


@kernel
def _only_dropped_from(cps, cls, pos, n):
    """Whether every character from ``pos`` on is dropped by rule (a look-ahead, no counting)."""
    while pos < n:
        rule = _drop_rule(cls[cps[pos]])
        if rule < 0:
            return False
        pos += _ansi_len(cps, pos, n) if rule == R_ANSI else 1
    return True


@kernel
def _slots(grid, r, end, table, ink, stride, slots):
    """Atlas slot of each of the first ``end`` cells of row ``r`` into ``slots``.

    A ``WIDE_CONT`` code takes the slot after the previous cell's (the right half
    of a wide glyph); a ``WIDE_BELOW`` code the slot two after the cell above's
    (the lower left quarter of a wide glyph two rows tall). With an ``ink`` grid
    (rows, cols) each cell's slot moves ``ink[r, c] * stride`` slots on, into the
    atlas copy drawn at that ink level.
    """
    has_ink = ink.shape[0] > 0
    prev = 0
    for c in range(end):
        code = grid[r, c]
        if code == WIDE_CONT:
            slot = prev + 1
        elif code == WIDE_BELOW:
            slot = table[grid[r - 1, c]] + 2
            if has_ink:
                slot += ink[r, c] * stride
        else:
            slot = table[code]
            if has_ink:
                slot += ink[r, c] * stride
        slots[c] = slot
        prev = slot


@kernel
def blit_page(grid, n_rows, table, cells, ink, stride, page, y0, x0):
    """Copy the atlas cell of every grid code into ``page`` at (y0, x0) px (no blending).

    The reference blit for any page layout (e.g. a view whose rows are not whole
    64-bit words). ``ink`` and ``stride`` as in ``_slots``.
    """
    ch = cells.shape[1]
    cw = cells.shape[2]
    cols = grid.shape[1]
    slots = np.empty(cols, dtype=np.int64)
    for r in range(n_rows):
        _slots(grid, r, cols, table, ink, stride, slots)
        top = y0 + r * ch
        for c in range(cols):
            slot = slots[c]
            left = x0 + c * cw
            for y in range(ch):
                for x in range(cw):
                    page[top + y, left + x] = cells[slot, y, x]


_PAPER64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@kernel
def _printed_cols(grid, r):
    """Columns of row ``r`` up to and including its last non-blank cell."""
    c = grid.shape[1]
    while c > 0 and grid[r, c - 1] == BLANK:
        c -= 1
    return c


@kernel
def blit_page_u64(grid, n_rows, table, cells64, ink, stride, page64, y0, w0):
    """``blit_page`` for 8-px-wide cells: one 64-bit store per cell row.

    ``cells64`` is the atlas viewed as (n, cell_h) uint64, ``page64`` the page
    viewed as (H, W / 8) uint64; cells start at row ``y0``, word ``w0``. The blank
    tail of each row is filled with paper by one slice assignment (measured ~10%
    faster than copying blank cells). The 16-px-tall case has a constant trip
    count so the compiler unrolls it.
    """
    ch = cells64.shape[1]
    cols = grid.shape[1]
    slots = np.empty(cols, dtype=np.int64)
    for r in range(n_rows):
        top = y0 + r * ch
        end = _printed_cols(grid, r)
        _slots(grid, r, end, table, ink, stride, slots)
        for c in range(end):
            slot = slots[c]
            if ch == 16:
                for y in range(16):
                    page64[top + y, w0 + c] = cells64[slot, y]
            else:
                for y in range(ch):
                    page64[top + y, w0 + c] = cells64[slot, y]
        page64[top : top + ch, w0 + end : w0 + cols] = _PAPER64


@kernel
def blit_page_stream(grid, n_rows, table, words, cw, ink, stride, page64, y0, w0):
    """``blit_page`` for any cell width, writing whole 64-bit words.

    ``words`` is the atlas as (n, cell_h, nw) uint64: each cell row's ``cw`` bytes
    split into little-endian words (8 bytes each, the last one ``cw - 8 (nw - 1)``).
    Each page pixel row is assembled as a byte stream in a 64-bit accumulator and
    stored a word at a time into ``page64`` (the page viewed as (H, W_pad / 8)
    uint64), from row ``y0`` and word ``w0`` on. After the last printed cell a row
    is paper (255) to its end.
    """
    ch = words.shape[1]
    nw = words.shape[2]
    last_k = cw - 8 * (nw - 1)
    cols = grid.shape[1]
    slots = np.empty(cols, dtype=np.int64)
    words_per_row = page64.shape[1]
    for r in range(n_rows):
        end = _printed_cols(grid, r)
        _slots(grid, r, end, table, ink, stride, slots)
        # after the last printed cell the row is paper: whole words of 0xFF
        paper_from = w0 + end * cw // 8
        for y in range(ch):
            out = page64[y0 + r * ch + y]
            acc = np.uint64(0)
            nb = 0  # bytes pending in acc (0..7)
            o = w0
            for c in range(end):
                cell = words[slots[c], y]
                for j in range(nw):
                    v = cell[j]
                    k = 8 if j < nw - 1 else last_k
                    if nb == 0:
                        if k == 8:
                            out[o] = v
                            o += 1
                        else:
                            acc = v
                            nb = k
                    else:
                        acc |= v << np.uint64(8 * nb)
                        if nb + k >= 8:
                            out[o] = acc
                            o += 1
                            acc = v >> np.uint64(8 * (8 - nb))
                            nb = nb + k - 8
                        else:
                            nb += k
            if nb:
                # the partial word: pending bytes, then paper
                out[o] = acc | (_PAPER64 << np.uint64(8 * nb))
                o += 1
            for i in range(max(o, paper_from), words_per_row):
                out[i] = _PAPER64


@kernel
def blit_bits(grid, n_rows, table, bitrows, cw, ink, stride, out, y0, b0):
    """Draw 1-bpp PNG scanlines straight from the grid (no 8-bit page in between).

    ``bitrows`` (n, cell_h) int64 holds each atlas cell row as ``cw`` bits, the
    leftmost pixel in the highest bit, 1 = paper. ``out`` (H, 1 + row_bytes) uint8
    receives, in rows ``y0`` on, filter byte 0, ``b0`` bytes of paper (the left
    margin) and the packed cells; bits past the last cell are 1 (paper). ``ink``
    and ``stride`` as in ``_slots`` (a 1-bit page has one ink: callers pass none).
    """
    ch = bitrows.shape[1]
    cols = grid.shape[1]
    row_bytes = out.shape[1] - 1
    slots = np.empty(cols, dtype=np.int64)
    for r in range(n_rows):
        end = _printed_cols(grid, r)
        _slots(grid, r, end, table, ink, stride, slots)
        for y in range(ch):
            dst = out[y0 + r * ch + y]
            dst[0] = 0
            for i in range(1, 1 + b0):
                dst[i] = 0xFF
            o = 1 + b0
            if cw == 8:
                for c in range(end):
                    dst[o] = bitrows[slots[c], y]
                    o += 1
            else:
                # accumulate cell rows, flush 32 bits at a time (one branch per flush)
                acc = 0
                nbits = 0
                for c in range(end):
                    acc = (acc << cw) | bitrows[slots[c], y]
                    nbits += cw
                    if nbits >= 32:
                        nbits -= 32
                        word = acc >> nbits
                        dst[o] = (word >> 24) & 0xFF
                        dst[o + 1] = (word >> 16) & 0xFF
                        dst[o + 2] = (word >> 8) & 0xFF
                        dst[o + 3] = word & 0xFF
                        o += 4
                        acc &= (1 << nbits) - 1
                while nbits >= 8:
                    nbits -= 8
                    dst[o] = (acc >> nbits) & 0xFF
                    o += 1
                acc &= (1 << nbits) - 1
                if nbits:
                    # pending ink bits, then paper
                    dst[o] = ((acc << (8 - nbits)) | ((1 << (8 - nbits)) - 1)) & 0xFF
                    o += 1
            for i in range(o, row_bytes + 1):
                dst[i] = 0xFF


@kernel
def pack_rows(page, height, bits, out):
    """Pack 8-bit gray rows into PNG scanlines (filter byte 0) of ``bits`` per pixel.

    The page values are already quantised to 2**bits levels, so packing keeps the
    top ``bits`` bits of each pixel. ``out`` has shape (height, 1 + row_bytes).
    """
    width = page.shape[1]
    shift = 8 - bits
    per_byte = 8 // bits
    full = width // per_byte
    for y in range(height):
        row = page[y]
        dst = out[y]
        dst[0] = 0
        if bits == 8:
            for x in range(width):
                dst[1 + x] = row[x]
            continue
        for b in range(full):
            acc = 0
            x0 = b * per_byte
            for k in range(per_byte):
                acc = (acc << bits) | (row[x0 + k] >> shift)
            dst[1 + b] = acc
        rest = width - full * per_byte
        if rest:
            acc = 0
            for k in range(rest):
                acc = (acc << bits) | (row[full * per_byte + k] >> shift)
            dst[1 + full] = acc << (bits * (per_byte - rest))


# Gather the top bit of 8 bytes (little-endian u64) into one byte, first byte as MSB.
_GATHER1 = np.uint64(0x8040201008040201)
_LOW_BITS = np.uint64(0x0101010101010101)


@kernel
def pack_rows_1bit_u64(page64, height, out):
    """1-bpp packing of a page viewed as (H, W / 8) uint64: 8 pixels per multiply."""
    words = page64.shape[1]
    for y in range(height):
        row = page64[y]
        dst = out[y]
        dst[0] = 0
        for b in range(words):
            v = (row[b] >> np.uint64(7)) & _LOW_BITS
            dst[1 + b] = (v * _GATHER1) >> np.uint64(56)


# Gather the top two bits of 4 bytes (a u32 half) into one byte, first byte highest.
_GATHER2 = np.uint64(0x40100401)
_LOW2_BITS = np.uint64(0x0303030303030303)
_U32 = np.uint64(0xFFFFFFFF)


@kernel
def pack_rows_2bit_u64(page64, height, out):
    """2-bpp packing of a page viewed as (H, W / 8) uint64: 4 pixels per multiply."""
    words = page64.shape[1]
    for y in range(height):
        row = page64[y]
        dst = out[y]
        dst[0] = 0
        for b in range(words):
            v = (row[b] >> np.uint64(6)) & _LOW2_BITS
            lo = v & _U32
            hi = v >> np.uint64(32)
            dst[1 + 2 * b] = ((lo * _GATHER2) >> np.uint64(24)) & np.uint64(0xFF)
            dst[2 + 2 * b] = ((hi * _GATHER2) >> np.uint64(24)) & np.uint64(0xFF)


@kernel
def _is_break(cp):
    return cp == 0x0A or cp == 0x0D or cp == 0x85 or cp == 0x2028 or cp == 0x2029


@kernel
def collapse_whitespace(cps, reflow, tab_size, out, orig):
    """Fold whitespace of ``cps`` in one pass (``glyphfold.render.collapse`` has the rules).

    ``out`` receives the folded code points and ``orig`` the source offset of each
    (then ``n`` after the last); both must hold the folded text, which indentation
    of tabs can make longer than the source (see ``collapse.folded_bound``). Returns
    (folded length, source characters copied as they are).
    """
    n = cps.shape[0]
    m = 0
    copied = 0
    seen = False
    blank_a = -1  # the break of the first blank line of a run
    blank_b = -1
    a = 0
    while a < n:
        j = a
        while j < n and not _is_break(cps[j]):
            j += 1
        k = j
        if j < n:
            k = j + 2 if cps[j] == 0x0D and j + 1 < n and cps[j + 1] == 0x0A else j + 1
        end = j
        while end > a and (cps[end - 1] == 0x20 or cps[end - 1] == 0x09):
            end -= 1
        if end == a:  # a blank line
            if seen and blank_a < 0:
                blank_a = j
                blank_b = k
            a = k
            continue
        if blank_a >= 0 and not reflow:
            for x in range(blank_a, blank_b):
                out[m] = cps[x]
                orig[m] = x
                m += 1
            copied += blank_b - blank_a
        blank_a = -1
        x = a
        col = 0
        while x < end and (cps[x] == 0x20 or cps[x] == 0x09):
            col = (col // tab_size + 1) * tab_size if cps[x] == 0x09 else col + 1
            x += 1
        for _ in range((col + 1) // 2):
            out[m] = 0x20
            orig[m] = a
            m += 1
        while x < end:
            cp = cps[x]
            if cp == 0x20 or cp == 0x09:
                y = x + 1
                while y < end and (cps[y] == 0x20 or cps[y] == 0x09):
                    y += 1
                out[m] = 0x20
                orig[m] = x
                m += 1
                if y == x + 1 and cp == 0x20:
                    copied += 1  # a lone space is itself
                x = y
            else:
                out[m] = cp
                orig[m] = x
                m += 1
                copied += 1
                x += 1
        for x in range(j, k):
            out[m] = cps[x]
            orig[m] = x
            m += 1
        copied += k - j
        seen = True
        a = k
    orig[m] = n
    return m, copied


@kernel
def mark_seen(cps, seen, out):
    """Set ``seen[c]`` to 1 for every code point ``c`` of ``cps``, each new one also put
    in ``out`` in order of first sight; return how many were new.

    One pass over a layout chunk (``seen`` holds a byte per code point): its distinct
    code points are then ``out[:new]`` (sorted by the caller: a few hundred, where a scan
    of ``seen`` reads a byte per code point up to the largest, 128k for an emoji), and
    the class and atlas checks run on those few instead of every character of the chunk.
    """
    new = 0
    for i in range(cps.shape[0]):
        c = cps[i]
        if seen[c] == 0:
            seen[c] = 1
            out[new] = c
            new += 1
    return new
