"""The layout's marks: which code points, and a stand-in drawing when no font has them."""

from __future__ import annotations

import numpy as np

from glyphfold.fonts.pixel import CONTINUATION_CODEPOINT, NEWLINE_CODEPOINT
from glyphfold.render.atlas import Atlas, mark_stand_in
from glyphfold.render.layout import DEFAULT_CONTINUATION, DEFAULT_NEWLINE
from glyphfold.render.shapes import SHAPES
from tests.render.conftest import write_bdf


def test_layout_and_fonts_name_the_same_marks():
    """One choice: the layout's defaults are the pixel fonts' mark code points."""
    assert (DEFAULT_NEWLINE, DEFAULT_CONTINUATION) == (NEWLINE_CODEPOINT, CONTINUATION_CODEPOINT)
    assert NEWLINE_CODEPOINT == 0x258C and CONTINUATION_CODEPOINT == 0x21AA


def test_every_bundled_font_draws_both_marks():
    """The bundled fonts cover the marks (no stand-in needed for the default shapes)."""
    from glyphfold.fonts.raster import Rasterizer
    from glyphfold.fonts.resolve import bundled

    for shape in SHAPES.values():
        raster = Rasterizer((bundled()[shape.font],), cell_w=shape.cell_w, cell_h=shape.cell_h,
                            mono=True)  # fmt: skip
        for cp in (NEWLINE_CODEPOINT, CONTINUATION_CODEPOINT):
            assert raster.font_for(cp) is not None, (shape.name, hex(cp))


def test_a_font_without_the_marks_gets_the_pixel_fonts_drawings(tmp_path):
    """Issue 21 item 13: a chain lacking the marks draws them from the bundled pixel font."""
    from glyphfold.fonts.resolve import bundled

    font = write_bdf(tmp_path / "tiny.bdf", {ord("a"): ["######"] * 10})
    atlas = Atlas((font,), cell_w=6, cell_h=10, bits=1)
    pixel = Atlas((bundled()["glyphfold-dense"],), cell_w=6, cell_h=10, bits=1)
    marks = [NEWLINE_CODEPOINT, CONTINUATION_CODEPOINT, 0xE05B]
    atlas.ensure(marks, [False] * 3)
    pixel.ensure(marks, [False] * 3)
    assert not atlas.missing
    for cp in marks:
        np.testing.assert_array_equal(atlas.cells[atlas.table[cp]], pixel.cells[pixel.table[cp]])


def test_a_font_without_the_marks_gets_the_stand_ins(tmp_path, monkeypatch):
    """With no pixel font to draw them, the layout marks get stand-ins (never a box)."""
    from glyphfold.render import atlas as atlas_mod

    monkeypatch.setattr(atlas_mod, "marks_font", lambda *a, **k: None)
    font = write_bdf(tmp_path / "tiny.bdf", {ord("a"): ["######"] * 10})
    atlas = Atlas((font,), cell_w=6, cell_h=10, bits=1)
    atlas.ensure([NEWLINE_CODEPOINT, CONTINUATION_CODEPOINT], [False, False])
    assert not atlas.missing
    for cp in (NEWLINE_CODEPOINT, CONTINUATION_CODEPOINT):
        cell = atlas.cells[atlas.table[cp]]
        want = 255 - mark_stand_in(cp, 6, 10)
        np.testing.assert_array_equal(cell, want)
        assert (cell == 0).sum() >= 5, "a visible mark"
    half = atlas.cells[atlas.table[NEWLINE_CODEPOINT]]
    assert (half[:, :3] == 0).all() and (half[:, 3:] == 255).all(), "the left half block"
