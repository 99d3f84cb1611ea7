"""Glyph atlas: every glyph cell in one uint8 array plus a code -> index table.

Cells hold final page pixels (255 = paper, 0 = ink), already quantised to the
page bit depth, so blitting is a plain copy. A wide glyph occupies two
consecutive slots (left, right); the layout's ``WIDE_CONT`` code makes the blit
take the slot after the previous cell's. In rows too short for an ideograph
(:func:`~glyphfold.fonts.raster.wide_rows` 2) a wide glyph is drawn two rows tall
and occupies four slots (upper left, upper right, lower left, lower right): the
``WIDE_BELOW`` code under its left half takes the slot two after the upper left one.
Glyphs are rasterised once, on first use; atlases are cached per (font chain,
cell, bits, wide rows) for the process.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from glyphfold.fonts.pixel import (
    CONTINUATION_CODEPOINT,
    JOIN_CODEPOINT,
    NEWLINE_CODEPOINT,
    REVERSE_VIDEO_OFFSET,
    REVERSE_VIDEO_RANGE,
    bundled_fonts,
)
from glyphfold.fonts.raster import Rasterizer
from glyphfold.fonts.raster import wide_rows as default_wide_rows
from glyphfold.render import codes as K
from glyphfold.render import vector

TABLE_SIZE = K.WIDE_BELOW + 1  # the two grid codes past Unicode never map to a slot


def quantize(ink: np.ndarray, bits: int) -> np.ndarray:
    """Map ink coverage (0..255) to page pixels with 2**bits evenly spaced levels."""
    paper = 255 - ink.astype(np.int32)
    if bits == 8:
        return paper.astype(np.uint8)
    levels = (1 << bits) - 1
    q = (paper * levels + 127) // 255
    return (q * 255 // levels).astype(np.uint8)


def mark_stand_in(codepoint: int, cell_w: int, cell_h: int) -> np.ndarray | None:
    """Ink of the layout marks for a font chain that has no glyph for them, else None.

    The newline mark (U+258C) is the left half of the cell; the continuation mark
    (U+21AA) a hook arrow: a short stroke down the left, then right to a head; the
    join mark (U+2590) the right half of the cell.
    """
    ink = np.zeros((cell_h, cell_w), dtype=np.uint8)
    if codepoint == NEWLINE_CODEPOINT:
        ink[:, : max(1, cell_w // 2)] = 255
        return ink
    if codepoint == JOIN_CODEPOINT:
        ink[:, cell_w - max(1, cell_w // 2) :] = 255
        return ink
    if codepoint == CONTINUATION_CODEPOINT:
        mid = cell_h // 2
        top = max(0, mid - cell_h // 4)
        ink[top : mid + 1, 0] = 255  # the hook
        ink[mid, : cell_w - 1] = 255  # the shaft
        for d in range(1, min(3, cell_w // 2)):  # the head
            ink[mid - d, cell_w - 1 - d] = 255
            ink[min(cell_h - 1, mid + d), cell_w - 1 - d] = 255
        return ink
    return None


def is_structural(codepoint: int) -> bool:
    """Whether ``codepoint`` is one of the page's structural marks, not text.

    The layout marks and the reverse-video role marks (U+E021-U+E07E) are drawn
    by the bundled pixel fonts only: a font set by ``GLYPHFOLD_FONT`` has no glyph
    for them (or, like icon fonts, an unrelated one in the Private Use Area).
    """
    lo, hi = REVERSE_VIDEO_RANGE
    return codepoint in (CONTINUATION_CODEPOINT, NEWLINE_CODEPOINT, JOIN_CODEPOINT) or (
        REVERSE_VIDEO_OFFSET + lo <= codepoint <= REVERSE_VIDEO_OFFSET + hi
    )


def marks_font(chain: tuple[Path, ...], *, cell_w: int, cell_h: int) -> Path | None:
    """The bundled pixel font that draws the structural marks for this chain and cell.

    None when the chain's primary font is itself a bundled one (it draws them).
    Otherwise the bundled font with the largest cell that fits ``cell_w`` x
    ``cell_h`` (the smallest one when none fits), so every mark keeps its drawing
    whatever the main font (issue 21 item 13).
    """
    fonts = bundled_fonts()
    if not chain or Path(chain[0]).resolve() in {Path(p).resolve() for p in fonts.values()}:
        return None
    from glyphfold.render.shapes import SHAPES

    cells = {s.font: (s.cell_w, s.cell_h) for s in SHAPES.values() if s.font in fonts}
    if not cells:  # pragma: no cover - every bundled font has a shape
        return None
    fitting = [n for n, (w, h) in cells.items() if w <= cell_w and h <= cell_h]
    pick = (
        max(fitting, key=lambda n: (cells[n][1], cells[n][0]))
        if fitting
        else min(cells, key=lambda n: (cells[n][1], cells[n][0]))
    )
    return Path(fonts[pick])


def replacement_box(cell_w: int, cell_h: int) -> np.ndarray:
    """Ink of the visible replacement box drawn for glyphs no font has."""
    ink = np.zeros((cell_h, cell_w), dtype=np.uint8)
    x0, x1 = (1, cell_w - 2) if cell_w >= 4 else (0, cell_w - 1)
    y0, y1 = (1, cell_h - 2) if cell_h >= 6 else (0, cell_h - 1)
    ink[y0, x0 : x1 + 1] = 255
    ink[y1, x0 : x1 + 1] = 255
    ink[y0 : y1 + 1, x0] = 255
    ink[y0 : y1 + 1, x1] = 255
    return ink


class Atlas:
    """Glyph cells for one font chain, cell size and bit depth."""

    def __init__(
        self,
        chain: tuple[Path, ...],
        *,
        cell_w: int,
        cell_h: int,
        bits: int,
        wide_rows: int | None = None,
    ) -> None:
        self.chain = chain
        self.cell_w = cell_w
        self.cell_h = cell_h
        self.bits = bits
        self.raster = Rasterizer(chain, cell_w=cell_w, cell_h=cell_h, mono=bits == 1)
        # rows a wide glyph is drawn over: the layout's (default: what the cell height needs)
        self.wide_rows = default_wide_rows(cell_h) if wide_rows is None else wide_rows
        # wide glyphs drawn over two rows: sized for the double height, their top one px
        # below the row's (where the narrow glyphs' capitals start), not centred
        self.tall_raster = (
            Rasterizer(chain, cell_w=cell_w, cell_h=2 * cell_h, mono=bits == 1, top=1)
            if self.wide_rows == 2
            else None
        )
        marks = marks_font(chain, cell_w=cell_w, cell_h=cell_h)
        self.marks_raster = (
            None
            if marks is None
            else Rasterizer((marks,), cell_w=cell_w, cell_h=cell_h, mono=bits == 1)
        )
        self.table = np.full(TABLE_SIZE, -1, dtype=np.int32)
        self.cells = np.empty((256, cell_h, cell_w), dtype=np.uint8)
        self.size = 0
        self.missing: set[int] = set()
        self._lock = threading.Lock()
        self._words: np.ndarray | None = None
        self._bitrows: np.ndarray | None = None
        self._inked: tuple[tuple[int, tuple[float, ...]], np.ndarray] | None = None
        self._box = self._add(quantize(replacement_box(cell_w, cell_h), bits))
        wide_box = replacement_box(2 * cell_w, self.wide_rows * cell_h)
        self._wide_box = self._add(quantize(wide_box, bits))
        self.table[K.BLANK] = self._add(np.full((cell_h, cell_w), 255, dtype=np.uint8))

    def _add(self, pixels: np.ndarray) -> int:
        """Append the cells of ``pixels`` row by row, left to right; return the first slot.

        One cell, two for a wide glyph (left, right), four for a wide glyph two rows
        tall (upper left, upper right, lower left, lower right).
        """
        ch, cw = self.cell_h, self.cell_w
        nx, ny = pixels.shape[1] // cw, pixels.shape[0] // ch
        n = nx * ny
        while self.size + n > self.cells.shape[0]:
            grown = np.empty((self.cells.shape[0] * 2, ch, cw), np.uint8)
            grown[: self.size] = self.cells[: self.size]
            self.cells = grown
        first = self.size
        for j in range(ny):
            for i in range(nx):
                cell = pixels[j * ch : (j + 1) * ch, i * cw : (i + 1) * cw]
                self.cells[first + j * nx + i] = cell
        self.size += n
        return first

    def ensure(self, codepoints: list[int], wide: list[bool]) -> None:
        """Rasterise any of ``codepoints`` not in the atlas yet (missing ones get a box)."""
        with self._lock:
            for cp, w in zip(codepoints, wide, strict=True):
                if self.table[cp] >= 0:
                    continue
                ink = None
                if self.marks_raster is not None and is_structural(cp):
                    ink = self.marks_raster.render(cp, width_cells=1)
                if ink is None:
                    tall = w and self.tall_raster is not None
                    raster = self.tall_raster if tall else self.raster
                    assert raster is not None
                    ink = raster.render(cp, width_cells=2 if w else 1)
                if ink is None:
                    ink = mark_stand_in(cp, self.cell_w, self.cell_h)
                if ink is None:
                    self.missing.add(cp)
                    self.table[cp] = self._wide_box if w else self._box
                else:
                    self.table[cp] = self._add(quantize(ink, self.bits))

    def prepare(self, cps: np.ndarray, cls: np.ndarray, extra: tuple[int, ...] = ()) -> None:
        """Make sure every visible code point of ``cps`` (and ``extra``) has a slot."""
        marks = [c for c in extra if self.table[c] < 0]
        for batch in (marks, vector.unmapped(cps, cls, self.table)):
            if batch:
                self.ensure(batch, [bool(cls[c] == K.C_WIDE) for c in batch])

    def words(self, cells: np.ndarray | None = None) -> np.ndarray:
        """The cells as (n, cell_h, ceil(cell_w / 8)) little-endian uint64 row words.

        ``cells`` (e.g. an :meth:`inked` array) replaces the atlas's own cells.
        """
        if cells is not None:
            return _as_words(cells, self.cell_w)
        with self._lock:  # cells may be regrown by a concurrent ensure()
            size = self.size
            cached = self._words
            if cached is not None and cached.shape[0] == size:
                return cached
            words = _as_words(self.cells[:size], self.cell_w)
            self._words = words
            return words

    def inked(self, strengths: tuple[float, ...]) -> tuple[np.ndarray, int]:
        """Cells at full ink, then a copy at each ink strength; return (cells, stride).

        Slot ``s + k * stride`` is slot ``s`` drawn at ``strengths[k - 1]`` (0..1 of
        full ink), quantised to the atlas's bit depth: light ink for tool output.
        """
        with self._lock:
            size = self.size
            key = (size, strengths)
            cached = self._inked
            if cached is not None and cached[0] == key:
                return cached[1], size
            base = self.cells[:size]
            ink = 255 - base.astype(np.int32)
            copies = [base]
            for strength in strengths:
                copies.append(quantize(np.rint(ink * strength).astype(np.uint8), self.bits))
            cells = np.ascontiguousarray(np.concatenate(copies))
            self._inked = (key, cells)
            return cells, size

    def bitrows(self) -> np.ndarray:
        """The cells as (n, cell_h) int64 rows of ``cell_w`` bits (MSB left, 1 = paper).

        Only meaningful for 1-bit atlases (cells are 0 or 255) with cells up to 32 px wide.
        """
        with self._lock:  # cells may be regrown by a concurrent ensure()
            size = self.size
            cached = self._bitrows
            if cached is not None and cached.shape[0] == size:
                return cached
            bits = (self.cells[:size] >= 128).astype(np.int64)
            weights = 1 << np.arange(self.cell_w - 1, -1, -1, dtype=np.int64)
            rows = (bits * weights).sum(axis=2)
            self._bitrows = rows
            return rows

    @property
    def pixels(self) -> np.ndarray:
        """The filled cells, shape (n, cell_h, cell_w)."""
        return self.cells[: self.size]


def _as_words(cells: np.ndarray, cell_w: int) -> np.ndarray:
    """(n, cell_h, cell_w) uint8 cells as (n, cell_h, ceil(cell_w / 8)) little-endian words."""
    nw = -(-cell_w // 8)
    padded = np.zeros((cells.shape[0], cells.shape[1], nw * 8), dtype=np.uint8)
    padded[:, :, :cell_w] = cells
    return padded.view("<u8")


_ATLASES: dict[tuple[tuple[Path, ...], int, int, int, int | None], Atlas] = {}
_ATLASES_LOCK = threading.Lock()


def get_atlas(
    chain: tuple[Path, ...],
    *,
    cell_w: int,
    cell_h: int,
    bits: int,
    wide_rows: int | None = None,
) -> Atlas:
    """Return the process-wide atlas for this font chain, cell, bit depth and wide rows."""
    key = (chain, cell_w, cell_h, bits, wide_rows)
    with _ATLASES_LOCK:
        atlas = _ATLASES.get(key)
        if atlas is None:
            atlas = Atlas(chain, cell_w=cell_w, cell_h=cell_h, bits=bits, wide_rows=wide_rows)
            _ATLASES[key] = atlas
        return atlas


def clear_atlases() -> None:
    """Forget every cached atlas: the next render rasterises its glyphs afresh."""
    with _ATLASES_LOCK:
        _ATLASES.clear()
