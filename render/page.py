"""Pages: cell grids blitted into pixels, encoded, with their source span and cost."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
from glyphfold.render import _kernels as K
from glyphfold.render.atlas import Atlas
from glyphfold.render.layout import PageLayout


@dataclass(frozen=True)
class Page:
    """One rendered page: PNG bytes, size in px, the source span it shows, its price."""

    png: bytes = field(repr=False)  # the repr shows the size, not the bytes
    width: int
    height: int
    source_span: tuple[int, int]
    image_tokens: int
    rows: int = 0
    row_spans: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    pixels: np.ndarray | None = field(default=None, repr=False, compare=False)


def blit(layout: PageLayout, atlas: Atlas, out: np.ndarray | None = None) -> np.ndarray:
    """Draw the printed rows of ``layout`` with ``atlas`` cells; return (H, W) uint8.

    The height hugs the printed rows (a short last page is short). ``out`` may be
    a preallocated array of at least the full page size, reused across pages. When
    its width is a multiple of 8 px, rows are written in 64-bit words (columns
    past the page width then hold paper, which encoders ignore).
    """
    cols = layout.grid.shape[1]
    h = layout.n_rows * atlas.cell_h
    w = cols * atlas.cell_w
    if out is None:
        out = np.empty((h, -(-w // 8) * 8), dtype=np.uint8)
    page = out[:h, :w]
    rows = out[:h]
    if rows.shape[1] % 8 == 0 and rows.flags.c_contiguous and sys.byteorder == "little":
        page64 = rows.view(np.uint64)
        if atlas.cell_w == 8:
            cells = atlas.cells  # one read: another thread may grow the atlas meanwhile
            cells64 = cells.view(np.uint64).reshape(cells.shape[0], atlas.cell_h)
            K.blit_page_u64(layout.grid, layout.n_rows, atlas.table, cells64, page64)
        else:
            words = atlas.words()
            K.blit_page_stream(layout.grid, layout.n_rows, atlas.table, words, atlas.cell_w, page64)
    else:
        K.blit_page(layout.grid, layout.n_rows, atlas.table, atlas.cells, page)
    return page


MAX_BITS_CELL_W = 32  # cell rows must fit the 64-bit accumulator with a byte pending


def blit_scanlines(layout: PageLayout, atlas: Atlas, out: np.ndarray) -> np.ndarray:
    """Draw a 1-bit page straight into PNG scanlines; return ``out[:h]`` (H, 1 + row_bytes).

    Same pixels as :func:`blit` followed by 1-bpp packing, without the 8-bit page
    (8x fewer bytes written). ``atlas.bits`` must be 1 and ``atlas.cell_w`` at most 32.
    """
    if atlas.bits != 1 or atlas.cell_w > MAX_BITS_CELL_W:
        msg = f"blit_scanlines needs a 1-bit atlas with cells <= 32 px, got {atlas.bits} bit(s)"
        raise ValueError(msg)
    h = layout.n_rows * atlas.cell_h
    rows = out[:h]
    K.blit_bits(layout.grid, layout.n_rows, atlas.table, atlas.bitrows(), atlas.cell_w, rows)
    return rows
