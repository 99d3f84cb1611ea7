"""What the bundled fonts cover, and the engine's codepoints for newline/continuation/missing."""

from __future__ import annotations

import tomllib
import unicodedata
from pathlib import Path

import numpy as np
import pytest

import glyphfold.fonts.pixel as pixel
from glyphfold.errors import FontNotFoundError
from glyphfold.fonts.pixel import build, bundled_font, bundled_fonts

from .conftest import BuiltFont

ASCII = range(0x20, 0x7F)
LATIN_1 = range(0xA0, 0x100)
LATIN_EXT_A = range(0x100, 0x180)
PUNCTUATION = [
    0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2015, 0x2016, 0x2018, 0x2019, 0x201A,
    0x201C, 0x201D, 0x201E, 0x2020, 0x2021, 0x2022, 0x2023, 0x2026, 0x2030, 0x2032,
    0x2033, 0x2039, 0x203A, 0x203E, 0x2044, 0x20AC, 0x2122, 0x2212,
]  # fmt: skip
ARROWS = [0x2190, 0x2191, 0x2192, 0x2193, 0x2194, 0x2195, 0x21A9, 0x21AA, 0x21B5, 0x21D0,
          0x21D2, 0x21D4]  # fmt: skip
BOX_REQUIRED = "─━│┃┌┐└┘┏┓┗┛├┤┬┴┼┣┫┳┻╋═║╔╗╚╝╠╣╦╩╬╭╮╯╰╱╲╳┄┆"
GREEK = [
    *range(0x391, 0x3A2), *range(0x3A3, 0x3AA), *range(0x3B1, 0x3CA),  # letters
    0x386, 0x388, 0x389, 0x38A, 0x38C, 0x38E, 0x38F,  # capitals with tonos
    *range(0x3AA, 0x3B0), *range(0x3CA, 0x3CF),  # tonos / dialytika
]  # fmt: skip
CYRILLIC = [*range(0x410, 0x450), 0x401, 0x451, 0x404, 0x454, 0x406, 0x456, 0x407, 0x457,
            0x40E, 0x45E, 0x490, 0x491]  # Russian, Ukrainian, Belarusian  # fmt: skip
SPACES = [0x20, 0xA0, *range(0x2000, 0x200B), 0x202F, 0x205F]


def test_bundled_fonts_are_files_next_to_their_sources() -> None:
    fonts = bundled_fonts()
    assert set(fonts) == {"glyphfold-dense", "glyphfold-regular", "glyphfold-large"}
    for name, path in fonts.items():
        assert path.is_file() and path.suffix == ".bdf"
        assert path.with_name(f"{name}{build.SOURCE_SUFFIX}").is_file()
        assert bundled_font(name) == path


def test_unknown_bundled_font_names_the_choices() -> None:
    with pytest.raises(FontNotFoundError, match="glyphfold-dense"):
        bundled_font("glyphfold-huge")


def test_package_data_ships_fonts_and_sources() -> None:
    """pip install must carry the BDFs (the default fonts) and their sources."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["glyphfold.fonts.pixel"]
    shipped = {p.name for g in globs for p in Path(pixel.__file__).parent.glob(g)}
    for name, path in bundled_fonts().items():
        assert path.name in shipped
        assert f"{name}{build.SOURCE_SUFFIX}" in shipped


@pytest.mark.parametrize(
    "block",
    [ASCII, LATIN_1, LATIN_EXT_A, PUNCTUATION, ARROWS, GREEK, CYRILLIC],
    ids=["ascii", "latin-1", "latin-ext-a", "punctuation", "arrows", "greek", "cyrillic"],
)
def test_block_is_covered(font: BuiltFont, block) -> None:
    missing = [f"U+{cp:04X}" for cp in block if cp not in font.glyphs]
    assert not missing, missing


def test_box_drawing_and_blocks_are_covered(font: BuiltFont) -> None:
    missing = [c for c in BOX_REQUIRED if ord(c) not in font.glyphs]
    assert not missing
    assert all(cp in font.glyphs for cp in range(0x2500, 0x25A0))


def test_engine_codepoints_have_visible_glyphs(font: BuiltFont) -> None:
    for cp in (pixel.NEWLINE_CODEPOINT, pixel.CONTINUATION_CODEPOINT, pixel.REPLACEMENT_CODEPOINT):
        assert font.glyphs[cp].sum() >= 5, f"U+{cp:04X} should be plainly visible"
    assert not np.array_equal(
        font.glyphs[pixel.NEWLINE_CODEPOINT], font.glyphs[pixel.CONTINUATION_CODEPOINT]
    )


def test_spaces_are_blank_and_everything_else_has_ink(font: BuiltFont) -> None:
    for cp, bm in font.glyphs.items():
        if cp in SPACES:
            assert bm.sum() == 0, f"U+{cp:04X}"
        else:
            assert bm.sum() > 0, f"U+{cp:04X} draws nothing"


def test_text_glyphs_leave_the_gap_column_clear(font: BuiltFont) -> None:
    """Letters and digits stay inside the glyph box so neighbours never touch."""
    x0, x1 = font.source.glyph_x, font.source.glyph_x + font.source.glyph_w
    # ď: the caron is an apostrophe right of a stem that already fills the glyph box
    allowed = {0x10F}
    for cp, bm in font.glyphs.items():
        if unicodedata.category(chr(cp))[0] in "LN" and cp not in allowed:
            outside = bm[:, :x0].sum() + bm[:, x1:].sum()
            assert outside == 0, f"U+{cp:04X} inks the gap between cells"


def test_accented_letters_are_their_base_plus_a_mark(font: BuiltFont) -> None:
    composed = [cp for cp, how in font.how.items() if how.startswith("composed")]
    assert len(composed) > 150  # Latin-1 + Extended-A letters come from composition
    assert not [cp for cp in composed if "overlaps" in font.how[cp]]
    for cp in composed:
        base = (
            int(unicodedata.decomposition(chr(cp)).split()[0], 16)
            if unicodedata.decomposition(chr(cp))
            else None
        )
        if base is not None and base in font.glyphs:
            assert not np.array_equal(font.glyphs[cp], font.glyphs[base]), f"U+{cp:04X}"


def test_accented_capitals_stay_taller_than_lowercase(font: BuiltFont) -> None:
    """A capital that made room for its mark still rises above the x-height."""
    src = font.source
    x_top = src.ascent - src.x_height
    for cp in range(0xC0, 0x17F):
        ch = chr(cp)
        if not ch.isupper() or cp not in font.glyphs or ch in "ĲŁŀ":
            continue
        base = unicodedata.normalize("NFD", ch)[0]
        if base == ch:
            continue
        bm = font.glyphs[cp]
        # the base part: rows between the mark and the baseline
        ink_rows = np.flatnonzero(bm[: src.ascent].any(axis=1))
        gaps = np.flatnonzero(np.diff(ink_rows) > 1)
        body_top = ink_rows[gaps[-1] + 1] if len(gaps) else ink_rows[0]
        assert body_top < x_top, f"{ch} is no taller than a lowercase letter"


@pytest.mark.parametrize(
    ("char", "left", "right", "up", "down"),
    [("─", 1, 1, 0, 0), ("│", 0, 0, 1, 1), ("┼", 1, 1, 1, 1), ("┌", 0, 1, 0, 1),
     ("┘", 1, 0, 1, 0), ("├", 0, 1, 1, 1), ("┴", 1, 1, 1, 0), ("═", 2, 2, 0, 0),
     ("║", 0, 0, 2, 2), ("╬", 2, 2, 2, 2), ("╔", 0, 2, 0, 2), ("━", 2, 2, 0, 0)],
)  # fmt: skip
def test_box_drawing_reaches_the_cell_edges(font: BuiltFont, char, left, right, up, down) -> None:
    """Lines touch the cell edge on every arm, so neighbouring cells join into one line."""
    bm = font.glyphs[ord(char)]
    assert int(bm[:, 0].sum()) == left
    assert int(bm[:, -1].sum()) == right
    assert int(bm[0, :].sum()) == up
    assert int(bm[-1, :].sum()) == down


def test_horizontal_lines_join_across_cells(font: BuiltFont) -> None:
    for a, b in ("──", "─┼", "┼─", "═╬", "━╋", "┌┐", "└┘"):
        left, right = font.glyphs[ord(a)], font.glyphs[ord(b)]
        rows_a = set(np.flatnonzero(left[:, -1]))
        rows_b = set(np.flatnonzero(right[:, 0]))
        assert rows_a == rows_b, f"{a}{b}"


def test_large_is_regular_emboldened_and_centred_in_the_wider_cell() -> None:
    from .conftest import built

    regular, large = built("glyphfold-regular"), built("glyphfold-large")
    assert large.source.cell_w == 11 and large.source.glyph_x == 2
    assert large.source.glyph_w == regular.source.glyph_w + 1 == 8
    for ch in "Ag0@":
        reg = regular.source.glyphs[ord(ch)]
        bold = build._embolden_rows(tuple("." * 2 + r + "." for r in reg))
        expected = np.array([[c == "#" for c in r] for r in bold], dtype=np.uint8)
        assert np.array_equal(large.glyphs[ord(ch)], expected), ch
        # every stroke of the regular drawing is still there, one px wider
        assert (large.glyphs[ord(ch)][:, 2:10] >= regular.glyphs[ord(ch)]).all()
        assert large.glyphs[ord(ch)][:, [0, 1, 10]].sum() == 0
    # what joins across cells reaches both edges of the wider cell
    for ch in "—_─═":
        bm = large.glyphs[ord(ch)]
        assert bm[:, 0].any() and bm[:, -1].any(), ch


def test_embolden_keeps_one_pixel_gaps_open() -> None:
    assert build._embolden_rows(("#.....#.", "#..#..#.", ".#.#.#..")) == (
        "##....##",
        "##.##.##",
        ".#.#.##.",
    )
