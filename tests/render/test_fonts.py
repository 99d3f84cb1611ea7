"""Font resolution order, fallback chains, and rasterisation (outline AA, bitmap exact)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glyphfold.errors import FontNotFoundError
from glyphfold.fonts import resolve
from glyphfold.fonts.raster import FontFace, Rasterizer
from tests.render.conftest import write_bdf

GLYPH_A = [
    "......",
    "..##..",
    ".#..#.",
    ".#..#.",
    ".####.",
    ".#..#.",
    ".#..#.",
    ".#..#.",
    "......",
    "......",
]
GLYPH_Q = [
    "......",
    ".###..",
    "#...#.",
    "#...#.",
    "#...#.",
    "#.#.#.",
    "#..#..",
    ".##.#.",
    "....#.",
    "......",
]


@pytest.fixture()
def tiny_bdf(tmp_path) -> Path:
    return write_bdf(tmp_path / "tiny.bdf", {0x41: GLYPH_A, 0x51: GLYPH_Q, 0x20: ["......"] * 10})


def _bits(rows: list[str]) -> np.ndarray:
    return np.array([[255 if ch == "#" else 0 for ch in r] for r in rows], dtype=np.uint8)


def test_explicit_path_wins_over_env(monkeypatch, tiny_bdf, dejavu):
    """Order step 1: an explicit font beats GLYPHFOLD_FONT."""
    monkeypatch.setenv("GLYPHFOLD_FONT", str(dejavu))
    assert resolve.resolve_font(tiny_bdf) == tiny_bdf.resolve()


def test_env_var_beats_shape_font_and_bundled(monkeypatch, tiny_bdf, dejavu):
    """Order step 2: GLYPHFOLD_FONT beats the shape's (preferred) font and bundled fonts."""
    monkeypatch.setenv("GLYPHFOLD_FONT", str(tiny_bdf))
    monkeypatch.setattr(resolve, "bundled", lambda: {"glyphfold-regular": dejavu})
    assert resolve.resolve_font(preferred="glyphfold-regular") == tiny_bdf.resolve()


def test_bundled_fonts_are_the_default(monkeypatch, tiny_bdf):
    """Order step 3: with no argument and no env var, a bundled font is used."""
    monkeypatch.delenv("GLYPHFOLD_FONT", raising=False)
    monkeypatch.setattr(resolve, "bundled", lambda: {"glyphfold-regular": tiny_bdf})
    assert resolve.resolve_font() == tiny_bdf
    assert resolve.resolve_font("glyphfold-regular") == tiny_bdf


def test_system_font_when_nothing_is_bundled(monkeypatch):
    """Order step 4: fontconfig's monospace (DejaVu Sans Mono on Debian)."""
    monkeypatch.delenv("GLYPHFOLD_FONT", raising=False)
    monkeypatch.setattr(resolve, "bundled", dict)
    got = resolve.resolve_font()
    assert got.is_file() and got.suffix.lower() in (".ttf", ".otf", ".ttc", ".bdf", ".pcf")


def test_well_known_dirs_when_fontconfig_is_absent(monkeypatch, dejavu):
    """Without fc-match, the well-known directories are searched."""
    monkeypatch.delenv("GLYPHFOLD_FONT", raising=False)
    monkeypatch.setattr(resolve, "bundled", dict)
    monkeypatch.setattr(resolve, "fc_match", lambda family: None)
    assert resolve.resolve_font() == dejavu


def test_nothing_found_names_the_package(monkeypatch):
    """Order step 5: FontNotFoundError (an OSError) naming what to install."""
    monkeypatch.delenv("GLYPHFOLD_FONT", raising=False)
    monkeypatch.setattr(resolve, "bundled", dict)
    monkeypatch.setattr(resolve, "fc_match", lambda family: None)
    monkeypatch.setattr(resolve, "WELL_KNOWN", {"DejaVu Sans Mono": ()})
    with pytest.raises(FontNotFoundError, match="apt-get install fonts-dejavu-core") as info:
        resolve.resolve_font()
    assert isinstance(info.value, OSError)


@pytest.mark.parametrize("origin", ["explicit", "env"])
def test_bad_font_names_are_errors(monkeypatch, tmp_path, origin):
    """A missing path, explicit or from the env var, is an error naming it."""
    bad = str(tmp_path / "nope.ttf")
    if origin == "env":
        monkeypatch.setenv("GLYPHFOLD_FONT", bad)
        call = resolve.resolve_font
    else:

        def call():
            return resolve.resolve_font(bad)

    with pytest.raises(FontNotFoundError, match=r"nope\.ttf"):
        call()


def test_missing_preferred_font_falls_through(monkeypatch, dejavu):
    """A shape's font that is not installed is skipped, unlike an explicit one."""
    monkeypatch.delenv("GLYPHFOLD_FONT", raising=False)
    monkeypatch.setattr(resolve, "bundled", dict)
    monkeypatch.setattr(resolve, "fc_match", lambda family: None)
    assert resolve.resolve_font(preferred="glyphfold-missing") == dejavu


def test_fallback_chain_puts_noto_cjk_before_unifont(dejavu):
    """Noto CJK (sized with paper between rows) precedes Unifont at every cell height."""
    for cell_h in (10, 16, 20):
        chain = resolve.fallback_chain(dejavu, cell_h=cell_h)
        assert chain[0] == dejavu and len(set(chain)) == len(chain)
        names = [p.name for p in chain]
        if "unifont.otf" in names and "NotoSansCJK-Regular.ttc" in names:
            assert names.index("NotoSansCJK-Regular.ttc") < names.index("unifont.otf")


@pytest.mark.parametrize(("cell_h", "gap"), [(10, 2), (16, 3), (20, 3)])
def test_wide_outline_glyphs_leave_paper_between_rows(cell_h, gap):
    """Issue 20: a CJK glyph from an outline font leaves ``wide_gap`` rows of paper."""
    from glyphfold.fonts.raster import FontFace, wide_gap

    noto = resolve.find_system_font("Noto Sans CJK SC") or resolve.find_packaged_font(
        "Noto Sans CJK SC"
    )
    if noto is None:
        pytest.skip("no Noto Sans CJK on this machine")
    assert wide_gap(cell_h) == gap
    face = FontFace(noto, cell_w=cell_h // 2, cell_h=cell_h, mono=True)
    inked_rows = 0
    for ch in "国永道書龍鬱":
        ink = face.render(ord(ch), width_cells=2)
        rows = np.flatnonzero(ink.any(axis=1))
        inked_rows = max(inked_rows, int(rows[-1] - rows[0] + 1))
    assert inked_rows <= cell_h - gap + 1  # hinting may round one row up


def test_install_hints_name_debian_packages():
    """Hints name the package that would cover the code point."""
    assert resolve.install_hint(0x56FD) == "fonts-noto-cjk"
    assert resolve.install_hint(0xAC00) == "fonts-noto-cjk"
    assert resolve.install_hint(0x0416) == "fonts-dejavu-core"
    assert resolve.install_hint(0x20000) == "fonts-hanazono"


def test_bitmap_font_renders_exact_bits(tiny_bdf):
    """A BDF strike is drawn bit for bit (no scaling, no anti-aliasing)."""
    face = FontFace(tiny_bdf, cell_w=6, cell_h=10, mono=False)
    assert face.bitmap and face.mono
    np.testing.assert_array_equal(face.render(0x41), _bits(GLYPH_A))
    np.testing.assert_array_equal(face.render(0x51), _bits(GLYPH_Q))


def test_bitmap_font_is_centred_in_a_larger_cell(tiny_bdf):
    """In an 8x14 cell the 6x10 strike sits centred on whole pixels."""
    face = FontFace(tiny_bdf, cell_w=8, cell_h=14, mono=False)
    out = face.render(0x41)
    assert out.shape == (14, 8)
    np.testing.assert_array_equal(out[2:12, 1:7], _bits(GLYPH_A))
    assert out.sum() == _bits(GLYPH_A).sum()


def test_outline_font_is_anti_aliased_unless_mono(dejavu):
    """Outline glyphs have gray levels in AA mode and only 0/255 in mono mode."""
    aa = FontFace(dejavu, cell_w=8, cell_h=16, mono=False).render(ord("g"))
    mono = FontFace(dejavu, cell_w=8, cell_h=16, mono=True).render(ord("g"))
    assert aa.shape == mono.shape == (16, 8)
    assert len(set(np.unique(aa).tolist()) - {0, 255}) > 0
    assert set(np.unique(mono).tolist()) <= {0, 255}
    assert mono.any() and aa.any()


def test_unifont_gives_exact_16px_cjk_in_two_cells(unifont, dejavu):
    """A CJK glyph from Unifont in 8x16 cells is a crisp 16x16 bitmap (two cells)."""
    chain = Rasterizer((dejavu, unifont), cell_w=8, cell_h=16, mono=False)
    assert chain.font_for(0x56FD).path == unifont
    ink = chain.render(0x56FD, width_cells=2)
    assert ink.shape == (16, 16)
    assert set(np.unique(ink).tolist()) == {0, 255}


def test_real_bundled_fonts_are_the_default(monkeypatch):
    """With nothing set, the bundled regular pixel font is the primary font."""
    from glyphfold.fonts.pixel import bundled_fonts

    monkeypatch.delenv("GLYPHFOLD_FONT", raising=False)
    fonts = bundled_fonts()
    assert resolve.resolve_font() == fonts["glyphfold-regular"]
    assert resolve.resolve_font("glyphfold-dense") == fonts["glyphfold-dense"]
    face = FontFace(fonts["glyphfold-dense"], cell_w=6, cell_h=10, mono=False)
    assert face.bitmap and face.mono
