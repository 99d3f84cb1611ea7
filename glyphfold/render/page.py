"""The page loop: text -> laid-out pages -> pixels -> PNG, with each page's span and cost.

:func:`prepare` lays a text out and fills the atlas; :class:`PageWriter` draws
each laid-out page into one reused buffer and encodes it; :func:`render_pages`
is the loop ``render_text`` runs. Benchmarks and ``glyphfold bench`` time these
same calls, so what they measure is what users run.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from glyphfold.render import backend, vector
from glyphfold.render.atlas import Atlas, get_atlas
from glyphfold.render.config import Setup, page_size
from glyphfold.render.encode import encode_png, png_from_scanlines, row_bytes
from glyphfold.render.ink import page_ink
from glyphfold.render.layout import FOLD_CHARS, Layout, PageLayout, TextFeed

if TYPE_CHECKING:
    from concurrent.futures import Future


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


_NO_INK = np.empty((0, 0), dtype=np.uint8)


def _kernels(kernels: bool | None) -> bool:
    # a drawing call alone follows the process's choice; it adds nothing to the count
    return backend.use_kernels(0) if kernels is None else kernels


def blit(
    layout: PageLayout,
    atlas: Atlas,
    out: np.ndarray | None = None,
    *,
    y0: int = 0,
    x0: int = 0,
    kernels: bool | None = None,
    ink: np.ndarray | None = None,
    strengths: tuple[float, ...] = (),
) -> np.ndarray:
    """Draw the printed rows of ``layout`` with ``atlas`` cells; return the drawn (h, w) view.

    The cells land at (``y0``, ``x0``) px of ``out`` (the page's margin), which may
    be a preallocated array reused across pages; it must hold the drawn rows. When
    its rows are whole 64-bit words and ``x0`` is a multiple of 8, the kernels
    write words (columns past the drawn cells then hold paper, which encoders
    ignore). ``kernels`` picks the numba kernels or the numpy path (default: the
    backend's choice). ``ink`` (rows, cols) uint8 gives each cell an ink level: 0
    is full ink, ``k`` is ``strengths[k - 1]`` (see :meth:`Atlas.inked`).
    """
    cols = layout.grid.shape[1]
    h = layout.n_rows * atlas.cell_h
    w = cols * atlas.cell_w
    if out is None:
        out = np.full((y0 + h, -(-(x0 + w) // 8) * 8), 255, dtype=np.uint8)
    if ink is not None and strengths:
        cells, stride = atlas.inked(strengths)
    else:
        # one read: another thread may grow the atlas meanwhile
        cells, stride, ink = atlas.cells, 0, _NO_INK
    args = (layout.grid, layout.n_rows, atlas.table)
    if not _kernels(kernels):
        vector.blit_page(*args, cells, ink, stride, out, y0, x0)
        return out[y0 : y0 + h, x0 : x0 + w]
    K = backend.kernels()
    aligned = out.shape[1] % 8 == 0 and out.flags.c_contiguous and x0 % 8 == 0
    if aligned and sys.byteorder == "little":
        page64 = out.view(np.uint64)
        if atlas.cell_w == 8:
            cells64 = cells.view(np.uint64).reshape(cells.shape[0], atlas.cell_h)
            K.blit_page_u64(*args, cells64, ink, stride, page64, y0, x0 // 8)
        else:
            words = atlas.words(cells if stride else None)
            K.blit_page_stream(*args, words, atlas.cell_w, ink, stride, page64, y0, x0 // 8)
    else:
        K.blit_page(*args, cells, ink, stride, out, y0, x0)
    return out[y0 : y0 + h, x0 : x0 + w]


MAX_BITS_CELL_W = 32  # cell rows must fit the 64-bit accumulator with a byte pending


def blit_scanlines(
    layout: PageLayout,
    atlas: Atlas,
    out: np.ndarray,
    *,
    y0: int = 0,
    x0: int = 0,
    kernels: bool | None = None,
) -> np.ndarray:
    """Draw a 1-bit page straight into PNG scanlines; return the drawn rows of ``out``.

    Same pixels as :func:`blit` followed by 1-bpp packing, without the 8-bit page
    (8x fewer bytes written). ``out`` is (H, 1 + row_bytes); rows ``y0`` on get the
    cells after ``x0`` px of paper (a multiple of 8). ``atlas.bits`` must be 1 and
    ``atlas.cell_w`` at most 32.
    """
    if atlas.bits != 1 or atlas.cell_w > MAX_BITS_CELL_W or x0 % 8:
        msg = (
            "blit_scanlines needs a 1-bit atlas with cells <= 32 px and a left margin "
            f"of whole bytes, got {atlas.bits} bit(s), {atlas.cell_w}-px cells, x0={x0}"
        )
        raise ValueError(msg)
    h = layout.n_rows * atlas.cell_h
    args = (layout.grid, layout.n_rows, atlas.table)
    if _kernels(kernels):
        bitrows = atlas.bitrows()
        backend.kernels().blit_bits(*args, bitrows, atlas.cell_w, _NO_INK, 0, out, y0, x0 // 8)
    else:
        vector.blit_bits(*args, atlas.cells, out, y0, x0)
    return out[y0 : y0 + h]


def atlas_for(setup: Setup) -> Atlas:
    """Return the cached atlas of a setup."""
    return get_atlas(
        setup.chain,
        cell_w=setup.cell_w,
        cell_h=setup.cell_h,
        bits=setup.bits,
        wide_rows=setup.config.wide_rows,
    )


def prepare(
    setup: Setup,
    text: str | TextFeed,
    *,
    with_src: bool = False,
    missing: dict[int, int] | None = None,
) -> tuple[Atlas, Layout]:
    """Set up the layout of ``text`` for ``setup``, the atlas filled chunk by chunk.

    Each layout chunk fills the atlas with the code points it draws (``cps`` after
    folding and recomposing, not the source's: a base letter followed by combining
    marks is drawn as its precomposed letter, which the source never contains)
    before its pages are drawn. ``with_src`` keeps each cell's source offset (ink
    levels need it). ``missing`` (when given) counts, per code point, the drawn
    characters no font has.
    """
    atlas = atlas_for(setup)
    cfg = setup.config
    extra = (cfg.continuation, cfg.newline, cfg.join, *sorted(set(FOLD_CHARS.tolist())))

    def on_chunk(cps: np.ndarray, cls: np.ndarray, distinct: np.ndarray) -> None:
        atlas.prepare(distinct, cls, extra)
        # counted over the chunk only when one of its code points has no glyph
        if missing is not None and atlas.missing and atlas.missing.intersection(distinct.tolist()):
            for cp, n in count_missing(cps, atlas.missing).items():
                missing[cp] = missing.get(cp, 0) + n

    lay = Layout(text, cfg, with_src=with_src, on_chunk=on_chunk)
    return atlas, lay


def count_missing(cps: np.ndarray, missing: set[int]) -> dict[int, int]:
    """How often each code point of ``missing`` occurs in ``cps``."""
    if not missing:
        return {}
    arr = np.fromiter(missing, dtype=np.uint32, count=len(missing))
    hit = cps[np.isin(cps, arr)]
    if not hit.size:
        return {}
    vals, counts = np.unique(hit, return_counts=True)
    return {int(v): int(c) for v, c in zip(vals, counts, strict=True)}


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
        kernels: bool | None = None,
        ink: tuple[np.ndarray, tuple[float, ...]] | None = None,
    ) -> None:
        self.setup = setup
        self.kernels = _kernels(kernels)
        # (per-source-char ink level, strengths) from glyphfold.render.ink, or None
        self.ink = ink
        self.atlas = atlas
        self.level = level
        self.max_bytes = max_bytes
        self.keep_pixels = keep_pixels
        page_w, page_h = page_size(setup, setup.config.rows)
        self.margin = m = setup.margin
        self.direct = (
            setup.bits == 1
            and setup.cell_w <= MAX_BITS_CELL_W
            and m % 8 == 0  # the bit blit starts rows on a whole byte
            and not keep_pixels
            and ink is None
        )
        if self.direct:
            self.raw = np.empty((page_h, 1 + row_bytes(page_w, 1)), dtype=np.uint8)
            self.raw[:m, 0] = 0  # the top margin: paper rows, drawn once
            self.raw[:m, 1:] = 0xFF
        else:
            # padded to whole 64-bit words so low-bit packing works 8 pixels at a time;
            # the padding stays paper (deterministic bytes, ignored by PNG decoders)
            self.buf = np.full((page_h, -(-page_w // 8) * 8), 255, dtype=np.uint8)

    def draw(self, pl: PageLayout) -> tuple[int, int]:
        """Draw one page into the buffer (the pixel stage); return its (width, height) px."""
        m = self.margin
        used_h = m + pl.n_rows * self.setup.cell_h
        w, h = page_size(self.setup, pl.n_rows)
        if self.direct:
            blit_scanlines(pl, self.atlas, self.raw, y0=m, x0=m, kernels=self.kernels)
            if h > used_h:  # the bottom margin and the provider's size multiple: paper
                self.raw[used_h:h, 0] = 0
                self.raw[used_h:h, 1:] = 0xFF
        else:
            grid_ink = None
            strengths: tuple[float, ...] = ()
            if self.ink is not None and pl.src is not None:
                levels, strengths = self.ink
                grid_ink = page_ink(pl.src, pl.row_start, pl.n_rows, levels)
            blit(
                pl,
                self.atlas,
                self.buf,
                y0=m,
                x0=m,
                kernels=self.kernels,
                ink=grid_ink,
                strengths=strengths,
            )
            self.buf[used_h:h] = 255
        return w, h

    def encode(self, w: int, h: int) -> bytes:
        """Encode the page last drawn (``w`` x ``h`` px) as PNG bytes."""
        bits, level, limit = self.setup.bits, self.level, self.max_bytes
        if self.direct:
            return png_from_scanlines(self.raw[:h], width=w, bits=1, level=level, max_bytes=limit)
        return encode_png(
            self.buf,
            bits=bits,
            level=level,
            max_bytes=limit,
            height=h,
            width=w,
            kernels=self.kernels,
        )

    def page(self, pl: PageLayout) -> Page:
        """Draw and encode one laid-out page."""
        w, h = self.draw(pl)
        return self.finish(pl, w, h)

    def finish(self, pl: PageLayout, w: int, h: int) -> Page:
        """Encode the page ``pl`` last drawn (``w`` x ``h`` px) and describe it."""
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


# Threaded renders hand pages out PAGES_PER_TASK at a time (one hand-over and one
# wake-up per batch). At most PAGES_AHEAD batches per thread are in flight (memory:
# pages, ~100 kB of layout + the PNG each, not the text); when the helper threads
# already have HELPER_QUEUE batches each queued, the calling thread draws and
# encodes the next batch itself. So a 2-thread render runs 2 busy threads, not 3
# (the layout thread plus two page threads oversubscribed 2 cores: 1.5x of one
# thread; this: 1.7-1.8x, benchmarks/bench_threads.py).
PAGES_PER_TASK = 4
PAGES_AHEAD = 8
HELPER_QUEUE = 6


def render_pages(
    setup: Setup,
    atlas: Atlas,
    lay: Layout,
    *,
    level: int,
    max_bytes: int | None,
    keep_pixels: bool = False,
    ink: tuple[np.ndarray, tuple[float, ...]] | None = None,
    threads: int = 1,
) -> Iterator[Page]:
    """Yield the encoded pages of a prepared layout, in order (``ink``: see PageWriter).

    With ``threads`` > 1 this thread lays the pages out and ``threads - 1`` helper
    threads draw and encode them (one page buffer each), this thread taking a batch
    itself whenever the helpers are busy enough (see :data:`HELPER_QUEUE`): the
    kernels and deflate release the GIL, so the pages of a long text use every core.
    """

    def new_writer() -> PageWriter:
        return PageWriter(
            setup,
            atlas,
            level=level,
            max_bytes=max_bytes,
            keep_pixels=keep_pixels,
            kernels=lay.kernels,
            ink=ink,
        )

    if threads <= 1:
        writer = new_writer()
        for pl in lay.pages(reuse=not keep_pixels):
            yield writer.page(pl)
        return
    from concurrent.futures import ThreadPoolExecutor  # here: one thread needs no pool

    local = threading.local()
    mine = new_writer()

    def work(batch: list[PageLayout]) -> list[Page]:
        writer = getattr(local, "writer", None)
        if writer is None:
            writer = local.writer = new_writer()
        return [writer.page(pl) for pl in batch]

    # in page order: a helper's batch (Future) or one this thread did (list)
    window: deque[Future[list[Page]] | list[Page]] = deque()

    def ready() -> bool:
        head = window[0]
        return isinstance(head, list) or head.done()

    def take() -> list[Page]:
        head = window.popleft()
        if isinstance(head, list):
            return head
        del batches[head]
        return head.result()

    batches: dict[Future[list[Page]], list[PageLayout]] = {}

    helpers = threads - 1
    batch: list[PageLayout] = []
    with ThreadPoolExecutor(helpers, thread_name_prefix="glyphfold-page") as pool:
        try:
            # each page owns its arrays (helpers hold them)
            for pl in lay.pages():
                batch.append(pl)
                if len(batch) < PAGES_PER_TASK:
                    continue
                queued = sum(1 for f in window if not isinstance(f, list) and not f.done())
                if queued >= HELPER_QUEUE * helpers:
                    window.append([mine.page(b) for b in batch])
                else:
                    f = pool.submit(work, batch)
                    batches[f] = batch
                    window.append(f)
                batch = []
                while window and ready():
                    yield from take()
                if len(window) >= PAGES_AHEAD * threads:
                    yield from take()
            if batch:
                window.append([mine.page(b) for b in batch])
            # the layout is done: this thread takes back the batches no helper started
            for i, item in enumerate(window):
                if not isinstance(item, list) and item.cancel():
                    window[i] = [mine.page(b) for b in batches[item]]
            while window:
                yield from take()
        finally:
            for item in window:  # a consumer that stops early: drop what is queued
                if not isinstance(item, list):
                    item.cancel()
