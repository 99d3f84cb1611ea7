"""Wide (CJK) glyphs two rows tall in rows too short for an ideograph (issue 20, SPEC §5.4).

Dense rows are 10 px: an ideograph squeezed into one (8 px of ink) read back at 22% CER on
whole pages. A row holding a wide glyph is now followed by a row that shows the glyphs'
lower halves, and the glyph is drawn 12 px tall over both. These tests look at the page's
pixels, and check that the planner prices the extra rows exactly as they are rendered.
"""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from PIL import Image

from glyphfold.fonts.raster import Rasterizer, wide_rows
from glyphfold.render import codes as K
from glyphfold.render.api import plan_text, render_text
from glyphfold.render.atlas import quantize
from glyphfold.render.config import resolve_setup
from glyphfold.render.layout import Layout


def _pixels(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as img:
        return np.asarray(img.convert("L"))


def _ink_rows(block: np.ndarray) -> np.ndarray:
    return np.flatnonzero((block < 128).any(axis=1))


def test_rows_under_13_px_draw_wide_glyphs_two_rows_tall():
    """The dense shape's 10-px rows take two rows per wide glyph; 16-px rows one."""
    assert wide_rows(10) == 2 and wide_rows(12) == 2 and wide_rows(13) == 1
    assert resolve_setup(shape="dense").config.wide_rows == 2
    assert resolve_setup(shape="regular").config.wide_rows == 1


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_dense_ideograph_is_drawn_over_two_rows(backend, monkeypatch):
    """Pixels: 国 on a dense page is the 12-px Noto glyph drawn across its row and the row
    under it (the text after it starts one row further down); before, 8 px in one row."""
    monkeypatch.setenv("GLYPHFOLD_RENDER_BACKEND", backend)
    setup = resolve_setup(shape="dense")
    m, ch, cw = setup.margin, setup.cell_h, setup.cell_w
    result = render_text("国x\nab", shape="dense")
    page = _pixels(result.pages[0].png)
    assert page.shape[0] == 2 * m + 3 * ch  # 国's row, its lower half, then "ab"
    glyph = page[m : m + 2 * ch, m : m + 2 * cw]
    rows = _ink_rows(glyph)
    assert rows.min() < ch <= rows.max() and rows.max() - rows.min() + 1 >= 11
    # exactly the rasteriser's drawing of the glyph for a 6x20 cell, top 1 px down
    chain = setup.chain
    want = Rasterizer(chain, cell_w=cw, cell_h=2 * ch, mono=True, top=1).render(
        ord("国"), width_cells=2
    )
    np.testing.assert_array_equal(glyph, quantize(want, 1))
    # "ab" starts on the third row; nothing of the ideograph reaches it
    third = page[m + 2 * ch : m + 3 * ch, m : m + 2 * cw]
    assert (third < 128).any()
    assert not (page[m + ch : m + 2 * ch, m + 2 * cw :] < 128).any()  # x's row has no half


def test_plan_prices_the_rows_of_lower_halves():
    """plan == render on dense CJK pages: the planner lays out the extra rows, so page
    starts, sizes and image tokens are the rendered ones. A line of CJK now costs on a
    dense page about what it costs on a regular one: two 10-px rows against one 16-px
    row, a quarter more for lines shorter than a row, ~6% less for long paragraphs
    (129 ideographs per 20 px against 97 per 16 px)."""
    line = "服务在高峰期出现了延迟，连接池已经用完 pool=db-main size=50。\n"
    text = line * 90 + "end\n"
    for shape in ("dense", "regular"):
        plan = plan_text(text, shape=shape)
        result = render_text(text, shape=shape)
        assert plan.page_tokens == tuple(p.image_tokens for p in result.pages)
        assert plan.page_sizes == result.page_sizes
        assert plan.page_starts == tuple(p.source_span[0] for p in result.pages)
    dense = render_text(text, shape="dense")
    regular = render_text(text, shape="regular")
    assert len(dense.pages) >= 2  # 182 rows: a page holds 71
    assert 1.1 <= dense.image_tokens / regular.image_tokens <= 1.3  # short lines (3,877/3,146)


@pytest.mark.parametrize("kernels", [True, False], ids=["numba", "numpy"])
def test_pages_of_tall_rows_tile_the_source(kernels):
    """Spans tile the text; a page never ends on a row of wide glyphs without the row of
    their lower halves (such a row starts the next page whole)."""
    setup = resolve_setup(shape="dense")
    text = ("ascii line\n" + "混合 text 行\n" * 3) * 40
    pages = list(Layout(text, setup.config, kernels=kernels).pages())
    assert len(pages) >= 3
    assert pages[0].span[0] == 0 and pages[-1].span[1] == len(text)
    assert all(a.span[1] == b.span[0] for a, b in itertools.pairwise(pages))
    for p in pages:
        last = p.grid[p.n_rows - 1]
        assert not (last == K.WIDE_CONT).any() or (last == K.WIDE_BELOW).any()
        # the rows of ideographs are rows of two: 71 rows hold 17 groups of 4 + 3
        assert p.n_rows <= setup.config.rows
