"""render_text: the public contract (pages, spans, prices, missing glyphs) (SPEC §5.2-§5.4)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import glyphfold
from glyphfold.errors import EncodeError, InputError, LayoutError, UnknownProfileError
from glyphfold.render.api import render_text
from glyphfold.render.profiles import get_profile


def _render(text, **kw):
    # margin 0: these tests count cells against the page size
    opts = {"font": kw.pop("font"), "cell": "8x16", "page": "160x64", "bits": 8, "margin": 0}
    opts.update(kw)
    return render_text(text, **opts)


def _decode(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))


def test_public_names_resolve_lazily():
    """glyphfold.render_text / RenderResult come from glyphfold.render.api."""
    assert glyphfold.render_text is render_text
    assert glyphfold.RenderResult.__name__ == "RenderResult"


def test_pages_tile_the_text_and_are_priced(dejavu):
    """Spans tile the source; each page costs the profile's price for its size."""
    text = "\n".join(f"row {i:02d} " + "x" * (i % 30) for i in range(30))
    res = _render(text, font=dejavu, keep_pixels=True)
    assert res.chars == len(text)
    # 20 cols: a line of L > 20 chars takes 1 + ceil((L - 20) / 19) rows; 4 rows a page
    rows = sum(1 + max(0, -(-(len(line) - 20) // 19)) for line in text.split("\n"))
    assert len(res.pages) == -(-rows // 4) == 12
    assert res.pages[0].source_span[0] == 0 and res.pages[-1].source_span[1] == len(text)
    for a, b in zip(res.pages, res.pages[1:], strict=False):
        assert a.source_span[1] == b.source_span[0]
    prof = get_profile("anthropic")
    for p in res.pages:
        assert p.width == 160 and p.height in (16, 32, 48, 64)
        assert p.image_tokens == prof.cost(p.width, p.height)
        np.testing.assert_array_equal(_decode(p.png), p.pixels)
    assert res.image_tokens == sum(p.image_tokens for p in res.pages)
    assert res.text_tokens_estimate == (len(text) + 3) // 4


def test_last_page_hugs_its_rows(dejavu):
    """A short text gives one page exactly as tall as its printed rows."""
    res = _render("one\ntwo", font=dejavu)
    (page,) = res.pages
    assert (page.width, page.height) == (160, 32)
    assert Image.open(io.BytesIO(page.png)).size == (160, 32)


def test_rendering_is_deterministic(dejavu):
    """The same input gives byte-identical PNGs."""
    text = "déjà vu 国语 ✓ \t tab"
    a = _render(text, font=dejavu)
    b = _render(text, font=dejavu)
    assert [p.png for p in a.pages] == [p.png for p in b.pages]


def test_folded_emoji_draw_as_their_label(dejavu):
    """✓ renders exactly like the text [OK]."""
    a = _render("done ✓", font=dejavu, keep_pixels=True)
    b = _render("done [OK]", font=dejavu, keep_pixels=True)
    np.testing.assert_array_equal(a.pages[0].pixels, b.pages[0].pixels)


def test_missing_glyphs_are_boxed_counted_and_hinted(dejavu):
    """A code point no font has becomes a visible box, counted, with a package hint."""
    res = _render("a\U00013000b\U00013000", font=dejavu, keep_pixels=True)
    assert res.missing_glyphs == {0x13000: 2}
    assert any("fonts-noto" in h and "U+13000" in h for h in res.hints)
    cell = res.pages[0].pixels[:16, 8:16]
    assert (cell < 128).sum() >= 10, "the replacement box must be visible"


def test_wide_glyph_spans_two_grid_cells(dejavu):
    """A CJK glyph is drawn inside its two cells, aligned to the primary grid."""
    res = _render("a国b", font=dejavu, keep_pixels=True)
    px = res.pages[0].pixels
    ink_cols = np.flatnonzero((px < 128).any(axis=0))
    wide = ink_cols[(ink_cols >= 8) & (ink_cols < 24)]
    assert wide.size > 8
    b_cols = ink_cols[ink_cols >= 24]
    assert b_cols.min() >= 24 and b_cols.max() < 32


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_bit_depths_round_trip(dejavu, bits):
    """Every bit depth decodes to the page pixels, with at most 2**bits gray levels."""
    res = _render("Grayscale AA glyphs: gjpqy", font=dejavu, bits=bits, keep_pixels=True)
    px = res.pages[0].pixels
    np.testing.assert_array_equal(_decode(res.pages[0].png), px)
    assert len(np.unique(px)) <= 2**bits


def test_profile_defaults_apply_without_overrides():
    """With no options the anthropic profile picks page, shape and bits."""
    res = render_text("hello from the default profile")
    prof = get_profile("anthropic")
    assert res.profile == "anthropic" and res.bits == prof.default_bits
    assert res.width <= prof.max_page_width and res.pages[0].height <= prof.max_page_height


def test_errors_are_typed(dejavu):
    """Bad inputs raise glyphfold errors that are also builtin ValueErrors."""
    with pytest.raises(UnknownProfileError):
        render_text("x", profile="nope")
    with pytest.raises(InputError, match="no vision"):
        render_text("x", profile="text-only")
    with pytest.raises(LayoutError, match="at least 12 columns"):
        render_text("x", font=dejavu, cell="8x16", page="80x64")
    with pytest.raises(LayoutError, match="downscaled"):
        render_text("x", font=dejavu, cell="8x16", page="3000x3000")
    with pytest.raises(LayoutError, match="WxH"):
        render_text("x", font=dejavu, cell="eight")
    with pytest.raises(InputError, match="must be str"):
        render_text(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match="ceiling"):
        _render("x" * 40, font=dejavu, max_image_bytes=50)


def test_empty_text_gives_no_pages(dejavu):
    """Nothing to show: zero pages, zero tokens (the CLI refuses empty input instead)."""
    res = _render("", font=dejavu)
    assert res.pages == () and res.image_tokens == 0


@pytest.mark.parametrize("cell", ["6x10", "7x14", "8x16", "11x16", "13x20"])
def test_direct_1bit_path_gives_the_same_png(dejavu, cell):
    """1 bpp pages drawn straight into scanlines equal the 8-bit page + pack path, byte for byte."""
    text = "mixed 国语 ✓ text\twith tabs and a line long enough to wrap around " * 3
    kw = {"font": dejavu, "cell": cell, "page": "400x120", "bits": 1}
    fast = render_text(text, **kw)
    slow = render_text(text, keep_pixels=True, **kw)
    assert [p.png for p in fast.pages] == [p.png for p in slow.pages]
    for p in slow.pages:
        np.testing.assert_array_equal(_decode(p.png), p.pixels)


def test_concurrent_renders_match_sequential(dejavu):
    """Threads sharing one atlas (kernels release the GIL) give the sequential bytes."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [
        f"thread {i}: " + "".join(chr(0x4E00 + 37 * i + k) for k in range(60)) for i in range(6)
    ]
    kw = {"font": dejavu, "cell": "9x18", "page": "300x90", "bits": 1}
    with ThreadPoolExecutor(max_workers=3) as pool:
        parallel = list(pool.map(lambda t: render_text(t, **kw), texts))
    for text, res in zip(texts, parallel, strict=True):
        assert [p.png for p in res.pages] == [p.png for p in render_text(text, **kw).pages]


def test_warm_up_fills_the_atlas_and_can_run_in_background():
    """warm_up renders once (inline or on a daemon thread) so later renders find glyphs ready."""
    from glyphfold.render.config import resolve_setup
    from glyphfold.render.page import atlas_for

    thread = glyphfold.warm_up(background=True)
    assert thread is not None and thread.daemon
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert glyphfold.warm_up() is None
    atlas = atlas_for(resolve_setup())
    assert atlas.table[ord("é")] >= 0 and atlas.table[0x56FD] >= 0


@pytest.mark.parametrize("keep", [False, True])
def test_pages_are_padded_to_the_providers_size_multiple(keep):
    """qwen-vl resizes to multiples of 28 px: pages get paper margins so none is resampled."""
    from glyphfold.render.config import resolve_setup

    prof = get_profile("qwen-vl")
    setup = resolve_setup(profile="qwen-vl")
    m, cw, ch = setup.margin, setup.cell_w, setup.cell_h
    text = "\n".join(f"line {i}: " + "abc " * (i % 50) for i in range(100))
    res = render_text(text, profile="qwen-vl", keep_pixels=keep)
    assert len(res.pages) > 1
    for p in res.pages:
        assert p.width % 28 == 0 and p.height % 28 == 0
        assert prof.fits(p.width, p.height)
        px = _decode(p.png)
        assert px.shape == (p.height, p.width)
        assert (px[:, m + setup.config.cols * cw :] == 255).all(), "right margin is paper"
        assert (px[m + p.rows * ch :] == 255).all(), "bottom margin is paper"
        assert (px[:m] == 255).all() and (px[:, :m] == 255).all(), "top and left margins"
        if keep:
            np.testing.assert_array_equal(px, p.pixels)
    a = render_text(text, profile="qwen-vl")
    b = render_text(text, profile="qwen-vl", keep_pixels=True)
    assert [p.png for p in a.pages] == [p.png for p in b.pages]


@pytest.mark.parametrize("margin", [0, 5, 8, 24])
@pytest.mark.parametrize("bits", [1, 2, 8])
@pytest.mark.parametrize("backend_mode", ["numba", "numpy"])
def test_margins_are_paper_around_the_naive_page(monkeypatch, dejavu, margin, bits, backend_mode):
    """A page with an m-px margin is the naive page framed by m px of paper on every side,
    inside the same image size budget (the grid shrinks, the page does not grow)."""
    from glyphfold.render.config import resolve_setup
    from glyphfold.render.page import atlas_for
    from tests.naive import naive_blit, naive_layout

    monkeypatch.setenv("GLYPHFOLD_RENDER_BACKEND", backend_mode)
    kw = {"font": dejavu, "cell": "8x16", "page": "200x96", "bits": bits, "margin": margin}
    text = "margin test 国语 ✓\twith a line that wraps around the right edge\nnext"
    res = render_text(text, keep_pixels=bits != 1, **kw)
    setup = resolve_setup(**kw)
    cfg = setup.config
    assert cfg.cols == (200 - 2 * margin) // 8 and cfg.rows == (96 - 2 * margin) // 16
    want, _ = naive_layout(text, cols=cfg.cols, rows=cfg.rows)
    atlas = atlas_for(setup)
    for page, ref in zip(res.pages, want, strict=True):
        inner = naive_blit(ref["grid"], atlas.table, atlas.cells)
        framed = np.full((inner.shape[0] + 2 * margin, inner.shape[1] + 2 * margin), 255, np.uint8)
        framed[margin : margin + inner.shape[0], margin : margin + inner.shape[1]] = inner
        assert (page.width, page.height) == (framed.shape[1], framed.shape[0])
        np.testing.assert_array_equal(_decode(page.png), framed)


def test_bad_margins_are_rejected(dejavu):
    """A negative, fractional or page-eating margin is one LayoutError naming it."""
    for bad in (-1, 2.5, True, 300):
        with pytest.raises(LayoutError, match="margin"):
            render_text("x", font=dejavu, margin=bad)
    with pytest.raises(LayoutError, match="50-px margins"):
        render_text("x", font=dejavu, cell="8x16", page="160x64", margin=50)


_TEXTS = st.lists(
    st.sampled_from(
        [*"ab Z09-_.", "\t", "\n", "\r\n", "é", "Ж", "国", "ｱ", "✓", "🎉", "\x1b[1m", "\u200b"]
    ),
    max_size=80,
).map("".join)


@settings(max_examples=40, deadline=None)
@given(text=_TEXTS, bits=st.sampled_from([1, 2]), reflow=st.booleans())
def test_pages_equal_the_naive_pipeline(dejavu, text, bits, reflow):
    """Decoded pages equal naive layout + naive blit, page by page (spans included)."""
    from glyphfold.render.config import resolve_setup
    from glyphfold.render.page import atlas_for
    from tests.naive import naive_blit, naive_layout

    kw = {"font": dejavu, "cell": "8x16", "page": "128x48", "bits": bits, "reflow": reflow}
    kw["margin"] = 0  # naive_blit draws the cells alone (margins: the test above)
    res = render_text(text, **kw)
    setup = resolve_setup(**kw)
    atlas = atlas_for(setup)
    cfg = setup.config
    want, _ = naive_layout(
        text,
        cols=cfg.cols,
        rows=cfg.rows,
        reflow=reflow,
        continuation=cfg.continuation,
        newline=cfg.newline,
    )
    assert len(res.pages) == len(want)
    for page, ref in zip(res.pages, want, strict=True):
        assert page.source_span == ref["span"]
        np.testing.assert_array_equal(
            _decode(page.png), naive_blit(ref["grid"], atlas.table, atlas.cells)
        )


@pytest.mark.parametrize("name", [p for p in glyphfold.profile_names() if get_profile(p).vision])
@pytest.mark.parametrize("reflow", [False, True])
def test_plan_prices_pages_exactly_as_rendered(name, reflow):
    """plan_text and render_text share page geometry: same starts, sizes and token prices
    for every vision profile, padding included (Qwen-VL pads to 28 px) (SPEC §5.6)."""
    from glyphfold.render.api import plan_text

    text = "\n".join(f"line {i}: " + "lorem ipsum " * (i % 13) for i in range(400))
    plan = plan_text(text, profile=name, reflow=reflow)
    res = render_text(text, profile=name, reflow=reflow)
    assert plan.page_starts == tuple(p.source_span[0] for p in res.pages)
    assert plan.page_sizes == tuple((p.width, p.height) for p in res.pages)
    assert plan.page_tokens == tuple(p.image_tokens for p in res.pages)
    assert plan.image_tokens == res.image_tokens
    assert max(len(p.png) for p in res.pages) <= plan.max_png_bytes
    assert plan.complete


def test_plan_stops_at_max_pages():
    """``max_pages`` plans the first pages only, exactly as the whole plan has them, and
    says the text goes on (the snapshot planner lays out no further than its page cap;
    issue 22); a text that fits is complete. Bad values are named."""
    from glyphfold.render.api import plan_text

    text = "\n".join(f"line {i}: " + "lorem ipsum " * (i % 13) for i in range(3000))
    whole = plan_text(text, reflow=True)
    assert len(whole.page_tokens) > 3
    head = plan_text(text, reflow=True, max_pages=3)
    assert head.page_starts == whole.page_starts[:3]
    assert head.page_tokens == whole.page_tokens[:3]
    assert not head.complete
    exact = plan_text(text, reflow=True, max_pages=len(whole.page_tokens))
    assert exact == whole
    with pytest.raises(InputError, match="max_pages"):
        plan_text(text, max_pages=0)


def test_plan_stops_at_max_tokens():
    """``max_tokens`` plans the pages whose price stays within it, as the whole plan has
    them, and says the text goes on; the whole price fits exactly (the CLI's cheaper-
    option check lays out no more than the price to beat; issue 22). Bad values named."""
    from glyphfold.render.api import plan_text

    text = "\n".join(f"line {i}: " + "lorem ipsum " * (i % 13) for i in range(3000))
    whole = plan_text(text, reflow=True)
    assert len(whole.page_tokens) > 3
    cut = sum(whole.page_tokens[:2]) + whole.page_tokens[2] - 1  # the third page goes over
    head = plan_text(text, reflow=True, max_tokens=cut)
    assert head.page_starts == whole.page_starts[:2]
    assert head.page_tokens == whole.page_tokens[:2]
    assert not head.complete
    assert plan_text(text, reflow=True, max_tokens=whole.image_tokens) == whole
    assert not plan_text(text, reflow=True, max_tokens=0).page_tokens
    with pytest.raises(InputError, match="max_tokens"):
        plan_text(text, max_tokens=-1)
