"""FreeType glyph -> fixed-cell bitmap (outline fonts hinted + anti-aliased, bitmaps exact).

Every font FreeType reads works: TTF/OTF/TTC outlines and BDF/PCF bitmap strikes.

* Bitmap fonts (no outlines) use the strike whose height best fits the cell
  (``select_size``) and are rendered monochrome: exact bits, no scaling.
* GNU Unifont is an outline font made of 16-px squares; at 16 px it is rendered
  monochrome too, which reproduces its bitmaps exactly.
* Other outline fonts are sized so that their glyphs fit the cell (height from a
  sample of tall/deep glyphs, width from the advance), hinted, and rendered with
  8-bit anti-aliasing (or monochrome when the page is 1 bit per pixel). Wide
  glyphs leave :func:`wide_gap` rows of paper so rows of CJK do not merge.

Output arrays are *ink coverage* (0 = paper, 255 = full ink), shape
``(cell_h, cell_w * width_cells)``; the atlas turns them into page pixels.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import freetype
import numpy as np

# Tall and deep glyphs whose bounding box must fit the cell height.
_NARROW_SAMPLE = "Hbdfghjklpqy|()[]{}$@"
_WIDE_SAMPLE = "国永道書あア한"
_WIDE_PROBE = 0x56FD  # 国, the advance that must fit two cells

_LOAD_AA = freetype.FT_LOAD_RENDER | freetype.FT_LOAD_TARGET_LIGHT
_LOAD_MONO = freetype.FT_LOAD_RENDER | freetype.FT_LOAD_TARGET_MONO | freetype.FT_LOAD_MONOCHROME


def wide_gap(cell_h: int) -> int:
    """Rows of paper an outline font's wide glyph leaves in a ``cell_h``-px cell.

    3 of 16 (the regular shape's 13-px glyph height), 2 of 10: measured by
    whole-page OCR of the Chinese corpus part (rapidocr; docs/legibility.md):
    16-px rows edge to edge read 9.2% CER (Unifont) / 4.2% (Noto Sans CJK), 13-px
    Noto glyphs 0.0%; in 10-px cells 83% -> 22% with 8-px glyphs.
    """
    return max(2, cell_h * 3 // 16)


# Rows shorter than this cannot hold a legible ideograph: wide glyphs then take two rows.
WIDE_MIN_ROW_PX = 13


def wide_rows(cell_h: int) -> int:
    """Rows of ``cell_h`` px one wide (CJK) glyph is drawn over: 1, or 2 in short rows.

    An ideograph needs about 12 px: measured by whole-page OCR of the Chinese corpus
    part and a held-out text (rapidocr; docs/legibility.md), 8-px glyphs in 10-px
    rows read 22% / 19% CER, the same glyphs 12 px tall over two 10-px rows 0% / 0%.
    So in rows under :data:`WIDE_MIN_ROW_PX` px a row holding a wide glyph is followed
    by a row holding its lower half (``glyphfold.render.layout``).
    """
    return 2 if cell_h < WIDE_MIN_ROW_PX else 1


class FontFace:
    """One font loaded at the sizes that fit a ``cell_w`` x ``cell_h`` cell."""

    def __init__(
        self, path: Path, *, cell_w: int, cell_h: int, mono: bool, top: int | None = None
    ) -> None:
        self.path = Path(path)
        self.cell_w = cell_w
        self.cell_h = cell_h
        # outline glyphs start ``top`` px below the cell's top (None: centred)
        self.top = top
        self.face = freetype.Face(str(self.path))
        family = (self.face.family_name or b"").decode("latin-1")
        self.family = family
        self.bitmap = not self.face.is_scalable
        # Unifont's 16-px squares are exact only when a wide glyph's box holds 16 px
        self.pixel_outline = (
            family.lower().startswith("unifont") and cell_h >= 16 and 2 * cell_w >= 16
        )
        self.mono = mono or self.bitmap or self.pixel_outline
        self._load_flags = _LOAD_MONO if self.mono else _LOAD_AA
        self._sizes: dict[bool, tuple[int, int]] = {}  # wide -> (size, baseline_px)
        self._current: int | None = None

    def has(self, codepoint: int) -> bool:
        """Whether the font maps ``codepoint`` to a real glyph."""
        return self.face.get_char_index(codepoint) != 0

    # -- sizing ------------------------------------------------------------------
    def _set(self, size: int) -> None:
        if self._current == size:
            return
        if self.bitmap:
            self.face.select_size(size)
        else:
            self.face.set_pixel_sizes(0, size)
        self._current = size

    def _sizing(self, wide: bool) -> tuple[int, int]:
        """Return (size, baseline row) for narrow or wide glyphs, computed once."""
        got = self._sizes.get(wide)
        if got is not None:
            return got
        box_w = self.cell_w * (2 if wide else 1)
        if self.bitmap:
            got = self._bitmap_sizing()
        elif self.pixel_outline:
            self._set(16)
            asc = self.face.size.ascender // 64
            got = (16, (self.cell_h - 16) // 2 + asc)
        else:
            got = self._outline_sizing(box_w, wide)
        self._sizes[wide] = got
        return got

    def _bitmap_sizing(self) -> tuple[int, int]:
        sizes = self.face.available_sizes
        fitting = [i for i, s in enumerate(sizes) if s.height <= self.cell_h]
        if fitting:
            best = max(fitting, key=lambda i: sizes[i].height)
        else:
            best = min(range(len(sizes)), key=lambda i: sizes[i].height)
        self._current = None
        self._set(best)
        asc = self.face.size.ascender // 64
        desc = -self.face.size.descender // 64
        pad = max(0, (self.cell_h - (asc + desc)) // 2)
        return best, pad + asc

    def _outline_sizing(self, box_w: int, wide: bool) -> tuple[int, int]:
        face = self.face
        upem = face.units_per_EM
        sample = _WIDE_SAMPLE if wide else _NARROW_SAMPLE
        y_max, y_min = 0, 0
        for ch in sample:
            gi = face.get_char_index(ord(ch))
            if gi == 0:
                continue
            face.load_glyph(gi, freetype.FT_LOAD_NO_SCALE)
            bbox = face.glyph.outline.get_bbox()
            y_max = max(y_max, bbox.yMax)
            y_min = min(y_min, bbox.yMin)
        if y_max - y_min <= 0:
            y_max, y_min = face.ascender, face.descender
        probe = _WIDE_PROBE if wide else ord("0")
        gi = face.get_char_index(probe) or face.get_char_index(ord("M"))
        if gi:
            face.load_glyph(gi, freetype.FT_LOAD_NO_SCALE)
            advance = face.glyph.advance.x
        else:
            advance = face.max_advance_width
        # wide (CJK) glyphs leave paper between rows, as the narrow glyphs do: set
        # edge to edge, rows of ideographs merge and whole-page OCR misreads them
        height = self.cell_h - wide_gap(self.cell_h) if wide else self.cell_h
        size = min(
            math.floor(height * upem / (y_max - y_min)),
            math.floor(box_w * upem / max(advance, 1)),
        )
        size = max(size, 4)
        self._current = None
        self._set(size)
        ink_h = (y_max - y_min) * size / upem
        pad = (self.cell_h - ink_h) / 2 if self.top is None else self.top
        baseline = round(pad + y_max * size / upem)
        return size, baseline

    # -- rendering ---------------------------------------------------------------
    def render(self, codepoint: int, *, width_cells: int = 1) -> np.ndarray:
        """Rasterise ``codepoint`` into ink coverage of shape (cell_h, cell_w * width_cells)."""
        wide = width_cells > 1
        size, baseline = self._sizing(wide)
        self._set(size)
        box_w = self.cell_w * width_cells
        out = np.zeros((self.cell_h, box_w), dtype=np.uint8)
        self.face.load_char(codepoint, self._load_flags)
        slot = self.face.glyph
        bm = slot.bitmap
        if bm.rows == 0 or bm.width == 0:
            return out
        if bm.pixel_mode == freetype.FT_PIXEL_MODE_MONO:
            raw = np.array(bm.buffer, dtype=np.uint8).reshape(bm.rows, bm.pitch)
            ink = np.unpackbits(raw, axis=1)[:, : bm.width] * np.uint8(255)
        else:
            raw = np.array(bm.buffer, dtype=np.uint8).reshape(bm.rows, bm.pitch)
            ink = raw[:, : bm.width]
        advance = slot.advance.x // 64
        # Centre the advance box in the cell(s): monospace fonts land exactly on the grid.
        x0 = (box_w - advance) // 2 + slot.bitmap_left if advance <= box_w else slot.bitmap_left
        y0 = baseline - slot.bitmap_top
        _paste(out, ink, x0, y0)
        return out


def _paste(out: np.ndarray, ink: np.ndarray, x0: int, y0: int) -> None:
    """Copy ``ink`` into ``out`` at (x0, y0), clipping at the cell edges."""
    h, w = out.shape
    sy0, sx0 = max(0, -y0), max(0, -x0)
    dy0, dx0 = max(0, y0), max(0, x0)
    rows = min(ink.shape[0] - sy0, h - dy0)
    cols = min(ink.shape[1] - sx0, w - dx0)
    if rows > 0 and cols > 0:
        region = out[dy0 : dy0 + rows, dx0 : dx0 + cols]
        np.maximum(region, ink[sy0 : sy0 + rows, sx0 : sx0 + cols], out=region)


class Rasterizer:
    """A font fallback chain: each code point comes from the first font that has it."""

    def __init__(
        self,
        chain: tuple[Path, ...],
        *,
        cell_w: int,
        cell_h: int,
        mono: bool,
        top: int | None = None,
    ) -> None:
        if not chain:
            msg = "font chain is empty; pass at least one font path"
            raise ValueError(msg)
        self.chain = tuple(Path(p) for p in chain)
        self.faces = [
            FontFace(p, cell_w=cell_w, cell_h=cell_h, mono=mono, top=top) for p in self.chain
        ]

    def font_for(self, codepoint: int) -> FontFace | None:
        """Return the first face in the chain that has ``codepoint``, else None."""
        for face in self.faces:
            if face.has(codepoint):
                return face
        return None

    def render(self, codepoint: int, *, width_cells: int = 1) -> np.ndarray | None:
        """Rasterise ``codepoint`` from the chain; None when no font has it."""
        face = self.font_for(codepoint)
        if face is None:
            return None
        return face.render(codepoint, width_cells=width_cells)


@functools.lru_cache(maxsize=16)
def load_face(path: str) -> freetype.Face:
    """Open a font file once per process (for callers that only query coverage)."""
    return freetype.Face(path)
