"""FreeType loads every bundled font and draws each glyph exactly as the source says."""

from __future__ import annotations

import freetype
import numpy as np

from glyphfold.fonts.pixel.preview import glyph_bits, render_cells

from .conftest import BuiltFont

MONO = freetype.FT_LOAD_RENDER | freetype.FT_LOAD_TARGET_MONO


def _face(font: BuiltFont) -> freetype.Face:
    face = freetype.Face(str(font.bdf))
    face.select_size(0)
    return face


def test_freetype_sees_one_fixed_cell_size(font: BuiltFont) -> None:
    face = _face(font)
    assert face.is_fixed_width
    assert face.num_fixed_sizes == 1
    size = face.available_sizes[0]
    assert size.height == font.source.cell_h
    assert face.family_name.decode() == font.name
    assert face.size.ascender // 64 == font.source.ascent
    assert face.size.max_advance // 64 == font.source.cell_w


def test_every_glyph_renders_in_mono_as_drawn(font: BuiltFont) -> None:
    """Load, select the size, render each glyph in mono and compare every bit to the build."""
    face = _face(font)
    cw, ch, ascent = font.source.cell_w, font.source.cell_h, font.source.ascent
    mismatched = []
    for cp, expected in font.glyphs.items():
        assert face.get_char_index(cp) != 0, f"U+{cp:04X} missing from the charmap"
        face.load_char(chr(cp), MONO)
        slot = face.glyph
        assert slot.advance.x // 64 == cw
        cell = np.zeros((ch, cw), dtype=np.uint8)
        bits = glyph_bits(slot.bitmap)
        top, left = ascent - slot.bitmap_top, slot.bitmap_left
        cell[top : top + bits.shape[0], left : left + bits.shape[1]] = bits
        if not np.array_equal(cell, expected):
            mismatched.append(f"U+{cp:04X}")
    assert not mismatched, mismatched


def test_source_rows_survive_the_round_trip(font: BuiltFont) -> None:
    """Hand-drawn glyphs come back from FreeType row for row as written in the source file."""
    face = _face(font)
    for cp in (ord("0"), ord("g"), ord("@"), 0x21B5, 0xFFFD):
        face.load_char(chr(cp), MONO)
        bits = glyph_bits(face.glyph.bitmap)
        drawn = font.source.glyphs[cp]
        got = ["".join("#" if b else "." for b in row) for row in bits]
        assert got == list(drawn)


def test_text_renders_into_fixed_cells(font: BuiltFont) -> None:
    img = render_cells(font.bdf, "Ab\n0é")
    cw, ch = font.source.cell_w, font.source.cell_h
    assert img.shape == (2 * ch, 2 * cw)
    ink = img == 0
    for row in range(2):
        for col in range(2):
            assert ink[row * ch : (row + 1) * ch, col * cw : (col + 1) * cw].any()
    # the É-cell equals the font's own bitmap for é, placed at its cell
    e_acute = font.glyphs[0xE9].astype(bool)
    assert np.array_equal(ink[ch : 2 * ch, cw : 2 * cw], e_acute)
