"""The page loop: text -> laid-out pages -> pixels -> PNG, with each page's span and cost.

:func:`prepare` lays a text out and fills the atlas; :class:`PageWriter` draws
each laid-out page into one reused buffer and encodes it; :func:`render_pages`
is the loop ``render_text`` runs. Benchmarks and ``glyphfold bench`` time these
same calls, so what they measure is what users run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from glyphfold.render import _kernels as K
from glyphfold.render.atlas import Atlas, get_atlas
from glyphfold.render.config import Setup, page_size
from glyphfold.render.encode import encode_png, png_from_scanlines, row_bytes
from glyphfold.render.layout import FOLD_CHARS, Layout, PageLayout, to_codepoints


@dataclass(frozen=True)
class Page:
    """One rendered page: PNG bytes, size in px, the source span it shows, its price."""

    png: bytes
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


def atlas_for(setup: Setup) -> Atlas:
    """Return the cached atlas of a setup."""
    return get_atlas(setup.chain, cell_w=setup.cell_w, cell_h=setup.cell_h, bits=setup.bits)


def prepare(setup: Setup, text: str) -> tuple[Atlas, Layout]:
    """Lay ``text`` out for ``setup`` and make sure the atlas holds every glyph it shows.

    The atlas is filled from the code points the layout draws (``lay.cps``), not
    the source's: a base letter followed by combining marks is drawn as its
    precomposed letter, which the source never contains.
    """
    atlas = atlas_for(setup)
    lay = Layout(to_codepoints(text), setup.config)
    cfg = setup.config
    extra = (cfg.continuation, cfg.newline, *set(FOLD_CHARS.tolist()))
    atlas.prepare(lay.cps, lay.cls, extra)
    return atlas, lay


class PageWriter:
    """Draws the laid-out pages of one setup into one reused buffer and encodes them.

    At 1 bpp (every profile's default) rows are drawn straight into PNG scanlines;
    other depths (or ``keep_pixels``) draw an 8-bit page and pack it.
    """

    def __init__(
        self,
        setup: Setup,
        atlas: Atlas,
        *,
        level: int,
        max_bytes: int | None,
        keep_pixels: bool = False,
    ) -> None:
        self.setup = setup
        self.atlas = atlas
        self.level = level
        self.max_bytes = max_bytes
        self.keep_pixels = keep_pixels
        page_w, page_h = page_size(setup, setup.config.rows)
        self.direct = setup.bits == 1 and setup.cell_w <= MAX_BITS_CELL_W and not keep_pixels
        if self.direct:
            self.raw = np.empty((page_h, 1 + row_bytes(page_w, 1)), dtype=np.uint8)
        else:
            # padded to whole 64-bit words so low-bit packing works 8 pixels at a time;
            # the padding stays paper (deterministic bytes, ignored by PNG decoders)
            self.buf = np.full((page_h, -(-page_w // 8) * 8), 255, dtype=np.uint8)

    def draw(self, pl: PageLayout) -> tuple[int, int]:
        """Draw one page into the buffer (the pixel stage); return its (width, height) px."""
        used_h = pl.n_rows * self.setup.cell_h
        w, h = page_size(self.setup, pl.n_rows)
        if self.direct:
            blit_scanlines(pl, self.atlas, self.raw)
            if h > used_h:  # rows added to reach the provider's size multiple: paper
                self.raw[used_h:h, 0] = 0
                self.raw[used_h:h, 1:] = 0xFF
        else:
            blit(pl, self.atlas, self.buf)
            self.buf[used_h:h] = 255
        return w, h

    def encode(self, w: int, h: int) -> bytes:
        """Encode the page last drawn (``w`` x ``h`` px) as PNG bytes."""
        bits, level, limit = self.setup.bits, self.level, self.max_bytes
        if self.direct:
            return png_from_scanlines(self.raw[:h], width=w, bits=1, level=level, max_bytes=limit)
        return encode_png(self.buf, bits=bits, level=level, max_bytes=limit, height=h, width=w)

    def page(self, pl: PageLayout) -> Page:
        """Draw and encode one laid-out page."""
        w, h = self.draw(pl)
        png = self.encode(w, h)
        return Page(
            png=png,
            width=w,
            height=h,
            source_span=pl.span,
            image_tokens=self.setup.profile.cost(w, h),
            rows=pl.n_rows,
            row_spans=tuple(pl.row_spans()),
            pixels=self.buf[:h, :w].copy() if self.keep_pixels else None,
        )


def render_pages(
    setup: Setup,
    atlas: Atlas,
    lay: Layout,
    *,
    level: int,
    max_bytes: int | None,
    keep_pixels: bool = False,
) -> Iterator[Page]:
    """Yield the encoded pages of a prepared layout, in order."""
    writer = PageWriter(setup, atlas, level=level, max_bytes=max_bytes, keep_pixels=keep_pixels)
    for pl in lay.pages(reuse=not keep_pixels):
        yield writer.page(pl)
