"""Bundled pixel font benchmarks: what a cold process pays before its first page.

Run: ``python -m pytest benchmarks/bench_fonts.py --benchmark-enable -p no:cacheprovider``

Groups: ``fonts-load`` (FreeType opens the BDF and selects its one size),
``fonts-raster`` (every glyph of the font rendered in mono, the worst case for an
atlas that is built eagerly), ``fonts-build`` (the generator, a developer-time
cost: sources -> BDF text).
"""

from __future__ import annotations

import freetype
import pytest

from glyphfold.fonts.pixel import build, bundled_fonts

MONO = freetype.FT_LOAD_RENDER | freetype.FT_LOAD_TARGET_MONO
FONTS = sorted(bundled_fonts())


def _load(path: str) -> freetype.Face:
    face = freetype.Face(path)
    face.select_size(0)
    return face


@pytest.mark.benchmark(group="fonts-load")
@pytest.mark.parametrize("name", FONTS)
def test_load_face(benchmark, name: str) -> None:
    path = str(bundled_fonts()[name])
    _load(path)  # warm the OS page cache and freetype-py's import
    face = benchmark(_load, path)
    benchmark.extra_info["glyphs"] = face.num_glyphs
    benchmark.extra_info["bdf_bytes"] = bundled_fonts()[name].stat().st_size
    assert face.num_fixed_sizes == 1


@pytest.mark.benchmark(group="fonts-raster")
@pytest.mark.parametrize("name", FONTS)
def test_raster_every_glyph(benchmark, name: str) -> None:
    face = _load(str(bundled_fonts()[name]))
    codepoints = [cp for cp, _ in face.get_chars()]

    def raster_all() -> int:
        ink = 0
        for cp in codepoints:
            face.load_char(cp, MONO)
            ink += face.glyph.bitmap.rows
        return ink

    raster_all()
    rows = benchmark(raster_all)
    benchmark.extra_info["glyphs"] = len(codepoints)
    assert rows > 0


@pytest.mark.benchmark(group="fonts-build")
@pytest.mark.parametrize("source", build.source_paths(), ids=lambda p: p.name)
def test_build_font(benchmark, source) -> None:
    font, text = benchmark(build.build_font, source)
    benchmark.extra_info["glyphs"] = text.count("STARTCHAR")
    benchmark.extra_info["bdf_bytes"] = len(text)
    assert font.name
