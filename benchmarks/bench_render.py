"""Render engine benchmarks by stage: layout, blit, encode, end_to_end.

Run: ``pytest benchmarks/bench_render.py --benchmark-enable -p no:xdist``.
Every benchmark warms the JIT first and records chars / pages / pixels in
``extra_info``. The stages time the numba kernels (loaded up front, as a warm
harness has them); ``test_end_to_end_numpy_path`` times the numpy path a fresh
process starts on. Numbers measured on the project machine are in benchmarks/README.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from glyphfold.render.api import render_text
from glyphfold.render.config import resolve_setup
from glyphfold.render.encode import DEFAULT_LEVEL, encode_png
from glyphfold.render.layout import Layout
from glyphfold.render.page import PageWriter, prepare

ROUNDS = 5


@pytest.fixture(scope="module", autouse=True)
def _kernels_loaded():
    """Load the kernels first: once loaded, every render in the process uses them."""
    from glyphfold.render import backend

    backend.kernels()


def warm(fn, *args, **kwargs):
    """Call ``fn`` once so JIT compilation / cache loading is never timed."""
    return fn(*args, **kwargs)


@pytest.fixture(scope="module", params=["regular", "dense", "large"])
def prepared(request, mixed_text):
    """Setup, atlas (filled), layout and the laid-out pages of the mixed transcript per shape.

    Built by the renderer's own ``prepare``; the blit benchmarks draw through its
    ``PageWriter`` (the 8-bit page path and the 1-bpp scanline path).
    """
    setup = resolve_setup(shape=request.param)
    atlas, lay = prepare(setup, mixed_text)
    pages = list(lay.pages())
    return request.param, setup, atlas, lay, pages


def _writer(setup, atlas, *, scanlines: bool) -> PageWriter:
    # keep_pixels forces the 8-bit page; without it 1-bpp pages go straight to scanlines
    return PageWriter(setup, atlas, level=DEFAULT_LEVEL, max_bytes=None, keep_pixels=not scanlines)


def _info(benchmark, prepared, **extra):
    shape, setup, _, lay, pages = prepared
    benchmark.extra_info.update(
        shape=shape,
        chars=int(lay.cps.shape[0]),
        pages=len(pages),
        page_px=setup.config.cols * setup.cell_w * setup.config.rows * setup.cell_h,
        pixels=setup.config.cols * setup.cell_w * setup.config.rows * setup.cell_h * len(pages),
        cell=f"{setup.cell_w}x{setup.cell_h}",
        **extra,
    )


@pytest.mark.benchmark(group="layout")
def test_layout(benchmark, prepared):
    """Text -> cell grids for the whole transcript (buffers reused, as the renderer does)."""
    _, setup, _, lay, _ = prepared

    def run():
        n = 0
        for _ in Layout(lay.cps, setup.config).pages(reuse=True):
            n += 1
        return n

    warm(run)
    n = benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1)
    _info(benchmark, prepared, pages_laid_out=n)


@pytest.mark.benchmark(group="blit")
def test_blit(benchmark, prepared):
    """Cell grids -> 8-bit page pixels for every page, into one reused buffer."""
    _, setup, atlas, _, pages = prepared
    writer = _writer(setup, atlas, scanlines=False)

    def run():
        for pl in pages:
            writer.draw(pl)

    warm(run)
    benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1)
    _info(benchmark, prepared)


@pytest.mark.benchmark(group="blit")
def test_blit_bits(benchmark, prepared):
    """Cell grids -> 1-bpp PNG scanlines directly (the renderer's path at 1 bit)."""
    _, setup, atlas, _, pages = prepared
    writer = _writer(setup, atlas, scanlines=True)

    def run():
        for pl in pages:
            writer.draw(pl)

    warm(run)
    benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1)
    _info(benchmark, prepared, scanline_bytes=int(writer.raw.size))


@pytest.mark.benchmark(group="blit")
def test_memset_floor(benchmark, prepared):
    """The floor for the blit: filling the same page bytes once per page."""
    _, setup, atlas, _, pages = prepared
    buf = _writer(setup, atlas, scanlines=False).buf

    def run():
        for _ in pages:
            buf.fill(255)

    benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1)
    _info(benchmark, prepared)


@pytest.mark.benchmark(group="encode")
@pytest.mark.parametrize("bits", [1, 2, 8])
def test_encode(benchmark, prepared, bits):
    """Page pixels -> PNG bytes (pack + deflate + chunks), for every page."""
    _, setup, atlas, _, pages = prepared
    writer = _writer(setup, atlas, scanlines=False)
    full = [pl for pl in pages if pl.n_rows == pages[0].n_rows]
    w, h = writer.draw(full[len(full) // 2])
    buf = writer.buf
    levels = (1 << bits) - 1
    # re-quantise the 1-bit page to the tested depth (same content, same size)
    padded = ((buf.astype(np.int32) * levels + 127) // 255 * (255 // levels)).astype(np.uint8)

    def run():
        total = 0
        for _ in pages:
            total += len(encode_png(padded, bits=bits, height=h, width=w))
        return total

    warm(run)
    total = benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1)
    _info(benchmark, prepared, bits=bits, png_bytes_per_page=total // len(pages))


@pytest.mark.benchmark(group="end_to_end")
def test_end_to_end(benchmark, prepared, mixed_text):
    """render_text on the whole transcript: text -> PNG bytes for every page."""
    shape = prepared[0]
    warm(render_text, mixed_text[:20_000], shape=shape)
    res = benchmark.pedantic(
        lambda: render_text(mixed_text, shape=shape), rounds=ROUNDS, warmup_rounds=1
    )
    _info(
        benchmark,
        prepared,
        image_tokens=res.image_tokens,
        png_bytes=sum(len(p.png) for p in res.pages),
    )


@pytest.mark.benchmark(group="end_to_end")
@pytest.mark.parametrize("n_chars", [200, 2_000, 20_000])
def test_small_render_latency(benchmark, mixed_text, n_chars):
    """render_text on one tool-result-sized text: the per-call latency a harness pays."""
    text = mixed_text[:n_chars]
    warm(render_text, text)
    res = benchmark.pedantic(lambda: render_text(text), rounds=50, warmup_rounds=2)
    benchmark.extra_info.update(chars=n_chars, pages=len(res.pages), shape="regular")


@pytest.mark.benchmark(group="end_to_end")
def test_end_to_end_numpy_path(benchmark, mixed_text, monkeypatch):
    """render_text on the whole transcript on the numpy path (no numba), regular shape."""
    from glyphfold.render import backend

    monkeypatch.setenv(backend.ENV_VAR, "numpy")
    warm(render_text, mixed_text[:20_000])
    res = benchmark.pedantic(lambda: render_text(mixed_text), rounds=3, warmup_rounds=1)
    benchmark.extra_info.update(chars=len(mixed_text), pages=len(res.pages), shape="regular")
