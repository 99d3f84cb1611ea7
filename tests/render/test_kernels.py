"""Blit and pack kernels and the numpy path against the naive references.

Every drawing test runs on both paths (``kernels`` True: numba, False: numpy);
the suite also runs with ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glyphfold.render import _kernels as K
from glyphfold.render import vector
from glyphfold.render.atlas import Atlas
from glyphfold.render.layout import layout_text, to_codepoints
from glyphfold.render.page import blit
from tests.naive import naive_blit, naive_pack

PATHS = pytest.mark.parametrize("kernels", [True, False], ids=["numba", "numpy"])


@pytest.fixture(scope="module")
def atlas(dejavu, unifont) -> Atlas:
    return Atlas((dejavu, unifont), cell_w=8, cell_h=16, bits=2)


def _prepared(atlas: Atlas, text: str):
    pages, _ = layout_text(text, cols=16, rows=4)
    from glyphfold.render.layout import class_table

    cps = to_codepoints(text)
    atlas.prepare(cps, class_table(cps), (0x21AA, 0x21B5, 0x2590))
    return pages


@pytest.mark.parametrize(
    "text",
    ["Hello, world!", "wide 国语 and ｱ kana\nnext line that wraps around the edge", "\t✓ done\n"],
)
@PATHS
def test_blit_matches_naive(atlas, text, kernels):
    """blit_page copies exactly the atlas cells the naive loop does, wide halves included."""
    for page in _prepared(atlas, text):
        got = blit(page, atlas, kernels=kernels)
        want = naive_blit(page.grid[: page.n_rows].tolist(), atlas.table, atlas.cells)
        assert got.shape == (page.n_rows * 16, 16 * 8)
        np.testing.assert_array_equal(got, want)


@PATHS
def test_blit_reuses_a_preallocated_page(atlas, kernels):
    """A buffer passed in is drawn into (no allocation) and a short page hugs its rows."""
    (page,) = _prepared(atlas, "one row")
    buf = np.zeros((4 * 16, 16 * 8), dtype=np.uint8)
    got = blit(page, atlas, buf, kernels=kernels)
    assert got.shape == (16, 128)
    assert np.shares_memory(got, buf)


@settings(max_examples=60, deadline=None)
@given(
    bits=st.sampled_from([1, 2, 4, 8]),
    h=st.integers(1, 5),
    w=st.integers(1, 21),
    seed=st.integers(0, 2**32 - 1),
)
def test_pack_rows_matches_naive(bits, h, w, seed):
    """Packing quantised pixels to 1/2/4/8 bpp scanlines equals the bit-string reference."""
    levels = (1 << bits) - 1
    rng = np.random.default_rng(seed)
    pixels = (rng.integers(0, levels + 1, size=(h, w)) * (255 // levels)).astype(np.uint8)
    out = np.empty((h, 1 + (w * bits + 7) // 8), dtype=np.uint8)
    K.pack_rows(pixels, h, bits, out)
    assert out.tobytes() == naive_pack(pixels, bits)
    vector.pack_rows(pixels, h, bits, out)
    assert out.tobytes() == naive_pack(pixels, bits)


@settings(max_examples=40, deadline=None)
@given(
    bits=st.sampled_from([1, 2]),
    h=st.integers(1, 4),
    words=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_u64_packers_match_naive(bits, h, words, seed):
    """The multiply-gather packers equal the bit-string reference on quantised pixels."""
    levels = (1 << bits) - 1
    rng = np.random.default_rng(seed)
    pixels = (rng.integers(0, levels + 1, size=(h, words * 8)) * (255 // levels)).astype(np.uint8)
    out = np.empty((h, 1 + words * bits), dtype=np.uint8)
    kernel = K.pack_rows_1bit_u64 if bits == 1 else K.pack_rows_2bit_u64
    kernel(pixels.view(np.uint64), h, out)
    assert out.tobytes() == naive_pack(pixels, bits)
    vector.pack_rows(pixels, h, bits, out)
    assert out.tobytes() == naive_pack(pixels, bits)


@PATHS
@pytest.mark.parametrize("wide_rows", [1, 2])
@pytest.mark.parametrize(("cw", "ch"), [(6, 10), (7, 14), (11, 16), (12, 16), (17, 20)])
def test_word_stream_blit_matches_naive(dejavu, unifont, cw, ch, kernels, wide_rows):
    """Any cell width: the 64-bit word-stream blit draws what the naive loop draws."""
    from glyphfold.render.layout import class_table

    atlas = Atlas((dejavu, unifont), cell_w=cw, cell_h=ch, bits=8, wide_rows=wide_rows)
    text = "wide 国语 and ｱ kana\nrow two\twith a tab and ✓ a label, then more text"
    pages, _ = layout_text(text, cols=13, rows=3, wide_rows=wide_rows)
    cps = to_codepoints(text)
    atlas.prepare(cps, class_table(cps), (0x21AA, 0x21B5, 0x2590, *map(ord, "[OK]")))
    for page in pages:
        buf = np.full((3 * ch, -(-13 * cw // 8) * 8), 7, dtype=np.uint8)
        got = blit(page, atlas, buf, kernels=kernels)
        want = naive_blit(page.grid[: page.n_rows].tolist(), atlas.table, atlas.cells)
        np.testing.assert_array_equal(got, want)
        assert (buf[page.n_rows * ch :] == 7).all(), "rows below the page are untouched"


@PATHS
@pytest.mark.parametrize("wide_rows", [1, 2])
@pytest.mark.parametrize(("cw", "ch"), [(6, 10), (8, 16), (11, 16), (17, 20)])
def test_bit_blit_matches_naive_blit_then_pack(dejavu, unifont, cw, ch, kernels, wide_rows):
    """blit_bits writes exactly the naive page packed at 1 bpp (padding bits are paper)."""
    from glyphfold.render.layout import class_table
    from glyphfold.render.page import blit_scanlines

    atlas = Atlas((dejavu, unifont), cell_w=cw, cell_h=ch, bits=1, wide_rows=wide_rows)
    text = "wide 国语 and ｱ kana\nrow two\twith a tab and ✓ a label, then more text"
    pages, _ = layout_text(text, cols=13, rows=3, wide_rows=wide_rows)
    cps = to_codepoints(text)
    atlas.prepare(cps, class_table(cps), (0x21AA, 0x21B5, 0x2590, *map(ord, "[OK]")))
    for page in pages:
        out = np.empty((3 * ch, 1 + (13 * cw + 7) // 8), dtype=np.uint8)
        got = blit_scanlines(page, atlas, out, kernels=kernels)
        pixels = naive_blit(page.grid[: page.n_rows].tolist(), atlas.table, atlas.cells)
        padded = np.full((pixels.shape[0], -(-pixels.shape[1] // 8) * 8), 255, np.uint8)
        padded[:, : pixels.shape[1]] = pixels
        assert got.tobytes() == naive_pack(padded, 1)


@PATHS
def test_unaligned_page_uses_the_reference_blit(atlas, kernels):
    """A page view whose rows are not whole 64-bit words is drawn by blit_page, identically."""
    pages = _prepared(atlas, "odd buffer 国语 ✓")
    for page in pages:
        buf = np.zeros((4 * 16, 16 * 8 + 3), dtype=np.uint8)  # 131 px: not a word multiple
        got = blit(page, atlas, buf, kernels=kernels)
        want = naive_blit(page.grid[: page.n_rows].tolist(), atlas.table, atlas.cells)
        np.testing.assert_array_equal(got, want)
        assert not buf[:, 128:].any(), "columns past the page are untouched"


@settings(max_examples=60, deadline=None)
@given(cps=st.lists(st.integers(0, 0x10FFFF) | st.integers(0, 300), max_size=6000))
def test_distinct_code_points_match_naive(cps):
    """``mark_seen`` (one pass, a byte per code point) and the layout's ``distinct`` on
    both paths give the naive distinct code points (issue 22: a chunk's class and atlas
    checks run on these, not on every character)."""
    from glyphfold.render.layout import Layout, LayoutConfig, frozen
    from tests.naive import naive_distinct

    # read-only, as every code point array reaching the kernels (one specialisation)
    arr = frozen(np.array(cps, dtype=np.uint32))
    seen = np.zeros(0x110000, dtype=np.uint8)
    out = np.empty(max(1, len(cps)), dtype=np.uint32)
    new = K.mark_seen(arr, seen, out)
    assert new == len(set(cps))
    assert np.flatnonzero(seen).tolist() == naive_distinct(cps)
    assert sorted(out[:new].tolist()) == naive_distinct(cps)  # each once, first sight first
    assert out[:new].tolist() == list(dict.fromkeys(cps))
    for kernels in (True, False):
        lay = Layout("x", LayoutConfig(cols=16, rows=2), kernels=kernels)
        big = frozen(np.tile(arr, 5)) if arr.shape[0] else arr  # past the small-array path
        assert lay.distinct(big).tolist() == naive_distinct(cps)
