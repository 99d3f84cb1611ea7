"""Text -> pages of cell codes, with provenance (source offsets per page and per row).

Rules (what reaches the page, and what is *dropped by rule* and counted):

* ``\\r\\n`` and lone ``\\r`` are line breaks like ``\\n`` (also U+0085, U+2028, U+2029).
  Line structure is kept: every source line starts a new row. In ``reflow`` mode a
  line break is instead drawn as one newline glyph and text keeps flowing.
* Tabs expand to the next tab stop (every ``tab_size`` cells) of the row.
* ANSI escape sequences (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL/ST``, and
  two/three-character escapes) are stripped: counted under ``"ansi"``.
* Other control characters (C0, DEL, C1, lone surrogates): dropped, ``"control"``.
* Zero-width and bidirectional formatting characters (category Cf: ZWSP, ZWJ,
  LRM/RLM, LRE..RLO, isolates, BOM, soft hyphen, tags) and variation selectors:
  dropped, ``"format"``. They are invisible in the source too; a visible symbol
  would add noise to every emoji sequence.
* Combining marks (Mn/Me) never get a cell of their own (they cannot share a
  fixed cell with their base in a monospace grid): counted under ``"combining"``.
  Where Unicode has a precomposed letter for the base and its marks (NFC), the
  base's cell shows that letter, so decomposed ``e`` + U+0301 still prints ``é``;
  marks with no precomposed form are lost. NFC text (the norm) has almost none.
* Emoji: see :mod:`glyphfold.render.emoji` (semantic ones fold to ASCII labels,
  decorative ones are dropped, ``"emoji"``).
* East Asian Wide/Fullwidth characters take two cells; the second holds
  ``WIDE_CONT``. Everything else printable takes one cell. In rows too short for
  an ideograph (``wide_rows`` 2: cells under 13 px, the dense shape) a wide glyph
  is drawn two rows tall: a row that holds one is followed by a row showing the
  lower halves (``WIDE_BELOW`` under each left half, ``WIDE_CONT`` under the
  right; it covers no source), and such a row is never a page's last row: it
  starts the next page whole. The planner prices the extra rows (it lays out).
* A line longer than the row wraps; the next row starts with the continuation
  mark (``CONTINUATION_CODEPOINT``, U+21AA ↪). Reflow mode wraps without it and
  draws each line break as the newline mark (``NEWLINE_CODEPOINT``, U+258C ▌).
  A wide glyph or a folded-emoji label never splits: it moves whole to the next row.
* Word wrap (``word_wrap``, on by default; SPEC §5.4, issue 20): rows keep tokens
  whole. A *token* is a run of narrow characters other than the space, closed by
  the first of ``, ; ) ] }`` (a row may break after those); spaces, tabs, line
  breaks, wide glyphs and folded labels stand alone, and characters dropped by
  rule are invisible to it. A token that starts at most ``break_window`` cells
  before the row end (``min(32, cols // 4)``) and does not fit there moves whole
  to the next row, when a row can hold it. A token that must be split (longer
  than a row, or starting earlier) fills its row up to the last cell, which shows
  the join mark (``JOIN_CODEPOINT``, U+2590 ▐): the token goes on at the start of
  the next row. Breaking elsewhere costs at most ``break_window - 1`` cells of a row.

Provenance: each row ``r`` of a page covers source offsets
``[row_start[r], row_start[r + 1])`` (the last row ends at the page's end), pages
cover ``[start, end)``; together the rows and pages tile the source exactly.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from glyphfold.errors import LayoutError
from glyphfold.render import backend, vector
from glyphfold.render import codes as K
from glyphfold.render.collapse import collapse_codepoints
from glyphfold.render.emoji import FOLD, is_decorative

# Same code points as glyphfold.fonts.pixel.CONTINUATION_CODEPOINT / NEWLINE_CODEPOINT
# (the renderer passes those; layout stays importable without the font package).
DEFAULT_CONTINUATION = 0x21AA  # ↪
DEFAULT_NEWLINE = 0x258C  # ▌
DEFAULT_JOIN = 0x2590  # ▐ (glyphfold.fonts.pixel.JOIN_CODEPOINT)
# Word wrap moves a token whole to the next row when it starts at most this many cells
# before the row end (and a quarter of the row at most): the cells a row may leave empty.
MAX_BREAK_WINDOW = 32
# A row must hold the continuation mark plus the longest folded-emoji label,
# because labels wrap whole (they never split across rows).
MIN_COLS = 12

RULES: tuple[str, ...] = ("ansi", "control", "format", "emoji", "combining")

_LINE_BREAKS = {0x0A: K.C_LF, 0x0D: K.C_CR, 0x85: K.C_LF, 0x2028: K.C_LF, 0x2029: K.C_LF}


def classify(codepoint: int) -> int:
    """Return the layout class of one code point (see ``codes.C_*``)."""
    if codepoint in _LINE_BREAKS:
        return _LINE_BREAKS[codepoint]
    if codepoint == 0x09:
        return K.C_TAB
    if codepoint == 0x1B:
        return K.C_ESC
    if codepoint in FOLD:
        return K.C_FOLD
    if is_decorative(codepoint):
        return K.C_DROP_EMOJI
    ch = chr(codepoint)
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cs"):
        return K.C_DROP_CONTROL
    if cat == "Cf" or 0xFE00 <= codepoint <= 0xFE0F or 0xE0100 <= codepoint <= 0xE01EF:
        return K.C_DROP_FORMAT
    if cat in ("Mn", "Me"):
        return K.C_DROP_COMBINING
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return K.C_WIDE
    return K.C_NARROW


# One process-wide table, filled lazily for the code points actually seen.
_CLS = np.zeros(0x110000, dtype=np.uint8)
_CLS_LOCK = threading.Lock()


def class_table(cps: np.ndarray) -> np.ndarray:
    """Return the class table with every code point of ``cps`` classified."""
    todo = vector.unclassified(cps, _CLS)
    if todo:
        with _CLS_LOCK:
            for cp in todo:
                _CLS[cp] = classify(cp)
    return _CLS


def _fold_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys = sorted(FOLD)
    off = [0]
    chars: list[int] = []
    for k in keys:
        chars.extend(ord(c) for c in FOLD[k])
        off.append(len(chars))
    return (
        np.array(keys, dtype=np.uint32),
        np.array(off, dtype=np.int64),
        np.array(chars, dtype=np.int32),
    )


FOLD_KEYS, FOLD_OFF, FOLD_CHARS = _fold_arrays()


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy): the one array type the kernels are compiled for.

    numba compiles a kernel once per argument type, and a read-only array (what
    :func:`to_codepoints` returns) is another type than a writable one: every code
    point array reaches the kernels read-only, so a warm cache never compiles again.
    """
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def to_codepoints(text: str) -> np.ndarray:
    """Return the code points of ``text`` as uint32 (index i is ``text[i]``)."""
    # surrogatepass keeps lone surrogates (from surrogateescape'd input) one-to-one
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


# every byte but the printable ASCII characters (``!`` to ``~``)
_NOT_PRINTABLE = bytes(range(0x21)) + b"\x7f"


def least_cells(text: str) -> int:
    """The fewest cells ``text`` takes on a page, found without a layout.

    Its printable ASCII characters (``!`` to ``~``): each is narrow and never dropped
    by rule, so each takes a cell; spaces, tabs and line breaks may fold (collapse,
    reflow) and the other characters may be dropped, so they count for nothing. A
    text holding an escape counts 0 (an ANSI sequence drops the ASCII characters it
    holds). A layout of ``text`` has at least ``ceil(least_cells(text) / cols)`` rows
    (the snapshot planner prices a choice that cannot fit without laying it out)."""
    ascii_bytes = text.encode("ascii", "ignore")
    if b"\x1b" in ascii_bytes:
        return 0
    return len(ascii_bytes.translate(None, _NOT_PRINTABLE))


def escape_bytes(cps: np.ndarray) -> set[int]:
    """Offsets of the characters that ANSI escape sequences consume (ESC included)."""
    inside: set[int] = set()
    esc = np.flatnonzero(cps == 0x1B).tolist()
    if not esc:
        return inside
    codes, n, end = cps.tolist(), int(cps.shape[0]), 0
    for i in esc:
        if i < end:  # an ESC inside the previous sequence (e.g. OSC's terminator)
            continue
        end = i + vector.ansi_len(codes, i, n)
        inside.update(range(i, end))
    return inside


def compose_marks(cps: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """Return a copy of ``cps`` where each base before a run of ``marks`` is its NFC letter.

    The marks themselves stay in place (layout drops and counts them); only the
    base code point changes, so offsets and provenance are untouched. A base that
    an ANSI escape sequence consumes (``ESC a``, a CSI's final ``m``) is no letter:
    it stays, so the sequence is stripped whole.
    """
    out = cps.copy()
    in_escape = escape_bytes(cps)
    idx = marks.tolist()
    k = 0
    while k < len(idx):
        start = end = idx[k]
        while k < len(idx) and idx[k] == end:
            k += 1
            end += 1
        if start == 0 or start - 1 in in_escape:
            continue
        run = "".join(map(chr, out[start - 1 : end].tolist()))
        first = unicodedata.normalize("NFC", run)[0]
        if ord(first) != out[start - 1] and unicodedata.category(first) not in ("Mn", "Me"):
            out[start - 1] = ord(first)
    return out


@dataclass(frozen=True)
class LayoutConfig:
    """Grid geometry and rules of one layout."""

    cols: int
    rows: int
    tab_size: int = 8
    reflow: bool = False
    continuation: int = DEFAULT_CONTINUATION
    newline: int = DEFAULT_NEWLINE
    collapse: bool = False  # fold whitespace first (glyphfold.render.collapse)
    word_wrap: bool = True  # keep tokens whole across rows (module doc)
    join: int = DEFAULT_JOIN
    wide_rows: int = 1  # rows a wide glyph is drawn over (glyphfold.fonts.raster.wide_rows)

    def __post_init__(self) -> None:
        if self.cols < MIN_COLS:
            msg = f"a page row must hold at least {MIN_COLS} cells, got {self.cols}; widen the page"
            raise LayoutError(msg)
        if self.rows < 1:
            msg = f"a page must hold at least one row, got {self.rows}; make the page taller"
            raise LayoutError(msg)
        if not 1 <= self.tab_size <= 64:
            msg = f"tab_size must be in 1..64, got {self.tab_size}"
            raise LayoutError(msg)
        if self.wide_rows not in (1, 2):
            msg = f"wide_rows must be 1 or 2, got {self.wide_rows!r}"
            raise LayoutError(msg)
        if self.wide_rows == 2 and self.rows < 2:
            msg = (
                f"a page of {self.rows} row cannot hold a wide glyph drawn two rows tall; "
                "make the page taller or the cell taller"
            )
            raise LayoutError(msg)

    @property
    def break_window(self) -> int:
        """Cells before the row end within which a token moves whole (0: word wrap off)."""
        return min(MAX_BREAK_WINDOW, self.cols // 4) if self.word_wrap else 0


@dataclass(frozen=True)
class PageLayout:
    """One page of cells: ``grid[:n_rows]`` is printed, rows tile ``span``."""

    grid: np.ndarray  # (rows, cols) int32 cell codes
    n_rows: int
    row_start: np.ndarray  # (n_rows,) int64 source offsets
    span: tuple[int, int]
    src: np.ndarray | None  # (rows, cols) int64 source offset per cell, -1 for none

    def row_spans(self) -> list[tuple[int, int]]:
        """Return the (start, end) source offsets of each printed row."""
        starts = self.row_start[: self.n_rows].tolist()
        starts[0] = self.span[0]
        ends = [*starts[1:], self.span[1]]
        return list(zip(starts, ends, strict=True))


# Source characters prepared (code points, folding, classes) at a time: the layout's
# per-character arrays are this big, whatever the length of the text (issue 22).
CHUNK_CHARS = 1 << 20
# The first chunk is smaller and each next one twice the last, up to CHUNK_CHARS: the
# first page of a long text waits for a 64k-char chunk, not a 1M one (the work before
# the first page is serial: a multi-threaded render starts its page threads sooner).
FIRST_CHUNK_CHARS = 1 << 16
_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_SOLID = re.compile("[^ \t\n\r\x85\u2028\u2029]")
_TEXT_LINE = re.compile("[ \t]*[^ \t\n\r\x85\u2028\u2029]")


def chunk_end(text: str, start: int, size: int, *, collapse: bool) -> int:
    """Where the chunk of ``text`` from ``start`` ends: after a line break at or past
    ``start + size`` (the end of the text when there is none).

    Laying out chunk by chunk then gives the pages of the whole text: no escape
    sequence, combining run or CR LF spans a line break. With ``collapse`` the cut
    falls between two lines of text (the one before ending on a printed character),
    where folding the chunks apart folds them as the whole would.
    """
    n = len(text)
    pos = start + size
    while pos < n:
        m = _BREAK.search(text, pos)
        if m is None:
            return n
        end = m.end()
        if not collapse or (
            m.start() > 0
            and _SOLID.match(text, m.start() - 1) is not None
            and _TEXT_LINE.match(text, end) is not None
        ):
            return end
        pos = end
    return n


class TextFeed:
    """Text that arrives in pieces (a file read a block at a time), for :class:`Layout`.

    ``pieces`` yields ``str``; ``size_hint`` is the expected length in characters
    (progress and the backend's choice; 0 when unknown). The layout keeps only the
    pieces it has not laid out yet: a render from a feed never holds the text.
    """

    def __init__(self, pieces: Iterable[str], size_hint: int = 0) -> None:
        self._pieces = iter(pieces)
        self.size_hint = size_hint
        self._rest = ""
        self._offset = 0  # source offset of ``_rest[0]``
        self.exhausted = False

    def take(self, size: int, *, collapse: bool) -> tuple[str, int, bool]:
        """(the next chunk's text, its source offset, whether it is the last): at least
        ``size`` characters unless the text ends, cut as :func:`chunk_end` cuts."""
        while True:
            rest = self._rest
            if self.exhausted:
                cut = len(rest)
            else:
                cut = chunk_end(rest, 0, size, collapse=collapse)
                # a cut must leave a character after it (a CR may be followed by LF,
                # the next line must be seen to be text): else read on
                if cut >= len(rest) - 1:
                    piece = next(self._pieces, None)
                    if piece is None:
                        self.exhausted = True
                    else:
                        self._rest = rest + piece
                    continue
            text, self._rest = rest[:cut], rest[cut:]
            start = self._offset
            self._offset += cut
            return text, start, self.exhausted and not self._rest


@dataclass
class _Chunk:
    """Prepared code points of the source ``[start, end)``: what the layout kernel reads."""

    cps: np.ndarray  # read-only, folded and recomposed
    orig: np.ndarray | None  # source offset of each code point (+ the end); None: start + i
    start: int
    end: int
    folded: int = 0  # source characters folded away (collapse)
    last: bool = True  # no source after it
    distinct: np.ndarray | None = None  # its distinct code points, ascending (uint32)

    def offsets(self, idx: np.ndarray) -> np.ndarray:
        """Source offsets of code point indices ``idx`` (``len(cps)``: the chunk's end)."""
        if self.orig is None:
            return idx + self.start
        return self.orig[idx]


class Layout:
    """Iterate the pages of one text; ``dropped`` holds the per-rule counts after.

    ``source`` is the text (``str``: prepared chunk by chunk, :data:`CHUNK_CHARS`
    source characters at a time, so memory is bounded by a chunk and a page) or its
    code points (one chunk). ``on_chunk(cps, cls, distinct)`` is called with each
    prepared chunk (its code points, the class table, its distinct code points) before
    its pages are laid out (the renderer fills the atlas there).
    """

    def __init__(
        self,
        source: np.ndarray | str | TextFeed,
        config: LayoutConfig,
        *,
        with_src: bool = False,
        kernels: bool | None = None,
        chunk_chars: int | None = None,
        on_chunk: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    ) -> None:
        self.config = config
        self.with_src = with_src
        if isinstance(source, TextFeed):
            self.n_source = source.size_hint  # an estimate until the feed ends
        else:
            self.n_source = len(source) if isinstance(source, str) else int(source.shape[0])
        # numba kernels or the numpy path (glyphfold.render.backend decides by default)
        self.kernels = backend.use_kernels(self.n_source) if kernels is None else kernels
        self._source = source
        self.chunk_chars = max(1, CHUNK_CHARS if chunk_chars is None else chunk_chars)
        self.on_chunk = on_chunk
        self.folded = 0  # source characters folded away (collapse)
        self.laid_out = 0  # source offset reached by the pages produced so far
        self._counts = np.zeros(K.N_RULES, dtype=np.int64)
        self._first: _Chunk | None = None

    @property
    def cps(self) -> np.ndarray:
        """The prepared code points of the first chunk (all of them for a short text)."""
        if isinstance(self._source, TextFeed):
            msg = "a layout of a TextFeed has no code points before its pages are laid out"
            raise LayoutError(msg)
        if self._first is None:
            self._first = self._prepare(0, self._chunk_end(0, 0))
        return self._first.cps

    @property
    def cls(self) -> np.ndarray:
        """The class table (filled for every code point prepared so far)."""
        return class_table(self.cps)

    def _chunk_size(self, k: int) -> int:
        """Source characters of the ``k``-th chunk (0-based): :data:`FIRST_CHUNK_CHARS`,
        doubling up to ``chunk_chars``."""
        return min(self.chunk_chars, FIRST_CHUNK_CHARS << min(k, 16))

    def _chunk_end(self, start: int, k: int) -> int:
        if not isinstance(self._source, str):
            return self.n_source
        size = self._chunk_size(k)
        return chunk_end(self._source, start, size, collapse=self.config.collapse)

    def _prepare(self, start: int, end: int, text: str | None = None) -> _Chunk:
        """Code points of the source ``[start, end)`` (``text``: its characters when the
        source is a feed), folded and recomposed, classified."""
        cfg = self.config
        src = self._source
        if text is not None:
            cps = to_codepoints(text)
        else:
            assert not isinstance(src, TextFeed)
            cps = to_codepoints(src[start:end]) if isinstance(src, str) else src[start:end]
        orig = None
        folded = 0
        if cfg.collapse:
            cps, orig, folded = collapse_codepoints(
                cps, reflow=cfg.reflow, tab_size=cfg.tab_size, kernels=self.kernels
            )
            orig += start
        cps = frozen(cps)
        # the checks run on the chunk's distinct code points (a few hundred), not on
        # every character: classes, combining marks, and (on_chunk) the atlas slots
        seen = self.distinct(cps)
        cls = class_table(seen)
        if seen.shape[0] and (cls[seen] == K.C_DROP_COMBINING).any():
            marks = np.flatnonzero(cls[cps] == K.C_DROP_COMBINING)
            cps = frozen(compose_marks(cps, marks))
            seen = self.distinct(cps)
            cls = class_table(seen)
        return _Chunk(cps, orig, start, end, folded, end >= self.n_source, seen)

    def distinct(self, cps: np.ndarray) -> np.ndarray:
        """The distinct code points of ``cps``, ascending (one kernel pass with kernels)."""
        if not self.kernels or cps.shape[0] < 4096:
            return vector.distinct(cps)
        # a byte per code point up to the chunk's largest: 128 bytes for ASCII text, not
        # the whole class table's 1.1 MB to zero and scan per chunk (the snapshot planner
        # lays out dozens of texts per compact)
        top = int(cps.max()) + 1
        seen = np.zeros(top, dtype=np.uint8)
        out = np.empty(min(top, int(cps.shape[0])), dtype=np.uint32)
        new = backend.kernels().mark_seen(cps, seen, out)
        return np.sort(out[:new])

    def _chunks(self) -> Iterator[_Chunk]:
        feed = self._source if isinstance(self._source, TextFeed) else None
        start = 0
        k = 0
        while True:
            if feed is not None:
                size = self._chunk_size(k)
                text, start, last = feed.take(size, collapse=self.config.collapse)
                chunk = self._prepare(start, start + len(text), text)
                chunk.last = last
                if last:
                    self.n_source = chunk.end
            elif start == 0 and self._first is not None:
                chunk = self._first
            else:
                chunk = self._prepare(start, self._chunk_end(start, k))
            self.folded += chunk.folded
            if self.on_chunk is not None:
                seen = chunk.distinct if chunk.distinct is not None else self.distinct(chunk.cps)
                self.on_chunk(chunk.cps, _CLS, seen)
            yield chunk
            if chunk.last:
                return
            start = chunk.end
            k += 1

    @property
    def dropped(self) -> dict[str, int]:
        """Characters dropped by rule so far, by rule name (zero counts omitted).

        With ``collapse``, ``"whitespace"`` counts the source characters folded away.
        """
        out = {name: int(v) for name, v in zip(RULES, self._counts, strict=True) if v}
        if self.folded:
            out["whitespace"] = self.folded
        return out

    def pages(self, *, reuse: bool = False) -> Iterator[PageLayout]:
        """Yield pages in order.

        With ``reuse`` the grid buffers are recycled: a page is only valid until
        the next one is produced (the renderer's hot path); otherwise each page
        owns its arrays and may be kept.

        Chunks are laid out as one text: a page that reaches the end of the
        prepared code points while more source follows is laid out again with the
        next chunk appended (its drop counts and continuation state restored).
        """
        cfg = self.config
        self._counts[:] = 0  # each pass counts afresh: ``dropped`` is the last pass's
        self.folded = 0
        state = np.zeros(K.N_STATE, dtype=np.int64)
        src_shape = (cfg.rows, cfg.cols) if self.with_src else (0, 0)
        grid = np.empty((cfg.rows, cfg.cols), dtype=np.int32)
        src = np.empty(src_shape, dtype=np.int64)
        row_start = np.empty(cfg.rows, dtype=np.int64)
        feed = self._chunks()
        buf = next(feed)
        more = not buf.last
        page_fn, args = self._page_fn(buf)
        start = 0  # code point index of the next page in ``buf``
        first = True
        while True:
            n = int(buf.cps.shape[0])
            if not reuse:
                grid = np.empty((cfg.rows, cfg.cols), dtype=np.int32)
                src = np.empty(src_shape, dtype=np.int64)
                row_start = np.empty(cfg.rows, dtype=np.int64)
            counts_before = self._counts.copy()
            cont_before = int(state[K.S_CONT])
            state[K.S_POS] = start
            used = page_fn(
                *args,
                cfg.tab_size,
                cfg.reflow,
                cfg.continuation,
                cfg.newline,
                cfg.join,
                cfg.break_window,
                cfg.wide_rows,
                state,
                grid,
                src,
                row_start,
                self._counts,
            )
            if used < 0:  # pragma: no cover - class_table guarantees coverage
                msg = f"unclassified code point at offset {-1 - used}"
                raise LayoutError(msg)
            end = int(state[K.S_POS])
            if more and end >= n:
                # the page may go on in the next chunk: lay it out again with it
                self._counts[:] = counts_before
                state[K.S_CONT] = cont_before
                buf = _join(buf, start, next(feed))
                more = not buf.last
                page_fn, args = self._page_fn(buf)
                start = 0
                continue
            if used == 0:
                self.laid_out = buf.end
                return
            page = self._page(buf, grid, int(used), row_start[:used], (start, end), src, first)
            self.laid_out = page.span[1]
            yield page
            if not more and end >= n:
                # every code point is placed (the kernel ends a page on the dropped ones
                # left): another call would lay out nothing, as the branch above finds
                self.laid_out = buf.end
                return
            first = False
            start = end

    def _page_fn(self, buf: _Chunk) -> tuple[Callable[..., int], tuple[Any, ...]]:
        if self.kernels:
            layout_page = backend.kernels().layout_page
            return layout_page, (buf.cps, _CLS, FOLD_KEYS, FOLD_OFF, FOLD_CHARS)
        vec = vector.VectorLayout(buf.cps, _CLS, FOLD_KEYS, FOLD_OFF, FOLD_CHARS)
        return vec.page, ()

    def _page(self, buf, grid, n_rows, row_start, span, src, first) -> PageLayout:
        """A laid-out page, its code point indices mapped back to source offsets."""
        src = src if self.with_src else None
        row_start = buf.offsets(row_start)
        span = (int(buf.offsets(np.array(span[0]))), int(buf.offsets(np.array(span[1]))))
        if first:
            # what was folded away before the first kept character belongs to the first row
            row_start[0] = 0
            span = (0, span[1])
        if src is not None and (buf.orig is not None or buf.start):
            src = np.where(src >= 0, buf.offsets(np.maximum(src, 0)), -1)
        return PageLayout(grid=grid, n_rows=n_rows, row_start=row_start, span=span, src=src)


def _join(buf: _Chunk, start: int, nxt: _Chunk) -> _Chunk:
    """The code points of ``buf`` from index ``start`` on, followed by ``nxt``'s."""
    cps = np.concatenate([buf.cps[start:], nxt.cps])
    if buf.orig is None and nxt.orig is None:
        return _Chunk(frozen(cps), None, buf.start + start, nxt.end, 0, nxt.last)
    a = buf.orig[start:-1] if buf.orig is not None else np.arange(buf.start + start, buf.end)
    b = nxt.orig if nxt.orig is not None else np.arange(nxt.start, nxt.end + 1)
    return _Chunk(frozen(cps), np.concatenate([a, b]), buf.start + start, nxt.end, 0, nxt.last)


def layout_text(
    text: str,
    *,
    cols: int,
    rows: int,
    tab_size: int = 8,
    reflow: bool = False,
    continuation: int = DEFAULT_CONTINUATION,
    newline: int = DEFAULT_NEWLINE,
    with_src: bool = False,
    kernels: bool | None = None,
    collapse: bool = False,
    word_wrap: bool = True,
    join: int = DEFAULT_JOIN,
    wide_rows: int = 1,
) -> tuple[list[PageLayout], dict[str, int]]:
    """Lay out ``text`` into pages; return (pages, dropped-by-rule counts).

    ``kernels`` picks the numba kernels (True) or the numpy path (False); by
    default :mod:`glyphfold.render.backend` decides.
    """
    cfg = LayoutConfig(
        cols=cols,
        rows=rows,
        tab_size=tab_size,
        reflow=reflow,
        continuation=continuation,
        newline=newline,
        collapse=collapse,
        word_wrap=word_wrap,
        join=join,
        wide_rows=wide_rows,
    )
    lay = Layout(text, cfg, with_src=with_src, kernels=kernels)
    pages = list(lay.pages())
    return pages, lay.dropped
