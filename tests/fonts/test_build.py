"""The generator: sources parse, BDF files are current, valid BDF 2.1, composition rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from glyphfold.fonts.pixel import build, bundled_fonts

from .conftest import BuiltFont


def test_committed_bdf_files_match_their_sources(tmp_path: Path) -> None:
    """A source edit without a rebuild fails here (the BDF is what ships)."""
    assert build.main(["--out", str(tmp_path)]) == 0
    for name, path in bundled_fonts().items():
        fresh = tmp_path / f"{name}.bdf"
        assert fresh.read_bytes() == path.read_bytes(), f"{name}: run the generator"
    assert build.main(["--check"]) == 0


def test_build_is_deterministic() -> None:
    for src in build.source_paths():
        assert build.build_font(src)[1] == build.build_font(src)[1]


def test_check_reports_a_stale_font(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "glyphfold-dense.bdf").write_text("STARTFONT 2.1\nENDFONT\n")
    assert build.main(["--check", "--out", str(tmp_path)]) == 1
    assert "stale" in capsys.readouterr().out


def _parse_bdf(text: str) -> dict:
    """Minimal strict BDF 2.1 reader: returns header fields and glyphs, asserting structure."""
    lines = text.splitlines()
    assert lines[0] == "STARTFONT 2.1"
    assert lines[-1] == "ENDFONT"
    header: dict[str, list[str]] = {}
    i = 1
    while not lines[i].startswith("STARTPROPERTIES"):
        key, *vals = lines[i].split()
        header[key] = vals
        i += 1
    n_props = int(lines[i].split()[1])
    props = lines[i + 1 : i + 1 + n_props]
    assert lines[i + 1 + n_props] == "ENDPROPERTIES"
    i += 2 + n_props
    key, count = lines[i].split()
    assert key == "CHARS"
    i += 1
    glyphs: dict[int, dict] = {}
    while lines[i] != "ENDFONT":
        assert lines[i].startswith("STARTCHAR ")
        enc = int(lines[i + 1].split()[1])
        assert lines[i + 1].startswith("ENCODING ")
        assert lines[i + 2].startswith("SWIDTH ")
        dwidth = [int(v) for v in lines[i + 3].split()[1:]]
        assert lines[i + 3].startswith("DWIDTH ")
        w, h, xoff, yoff = (int(v) for v in lines[i + 4].split()[1:])
        assert lines[i + 4].startswith("BBX ")
        assert lines[i + 5] == "BITMAP"
        rows = lines[i + 6 : i + 6 + h]
        hex_len = 2 * ((w + 7) // 8)
        for row in rows:
            assert re.fullmatch(rf"[0-9A-F]{{{hex_len}}}", row), row
            # bits right of the glyph width must be zero padding
            assert int(row, 16) & ((1 << (hex_len * 4 - w)) - 1) == 0
        assert lines[i + 6 + h] == "ENDCHAR"
        assert enc not in glyphs, f"duplicate ENCODING {enc}"
        glyphs[enc] = {"dwidth": dwidth, "bbx": (w, h, xoff, yoff), "rows": rows}
        i += 7 + h
    assert len(glyphs) == int(count)
    return {"header": header, "props": props, "glyphs": glyphs}


def test_bdf_is_valid_bdf_2_1(font: BuiltFont) -> None:
    bdf = _parse_bdf(font.bdf.read_text(encoding="ascii"))
    cw, ch, desc = font.source.cell_w, font.source.cell_h, font.source.descent
    assert bdf["header"]["FONTBOUNDINGBOX"] == [str(cw), str(ch), "0", str(-desc)]
    assert bdf["header"]["SIZE"][0] == str(ch)
    props = dict(p.split(" ", 1) for p in bdf["props"])
    assert props["SPACING"] == '"C"'  # character-cell: every glyph advances one cell
    assert int(props["FONT_ASCENT"]) + int(props["FONT_DESCENT"]) == ch
    assert props["CHARSET_REGISTRY"] == '"ISO10646"'
    assert int(props["DEFAULT_CHAR"]) == 0xFFFD
    for enc, g in bdf["glyphs"].items():
        assert g["dwidth"] == [cw, 0], hex(enc)
        assert g["bbx"] == (cw, ch, 0, -desc), hex(enc)
    assert set(bdf["glyphs"]) == set(font.glyphs)


SMALL_FONT = """\
font test-small
cell 6 10
ascent 8
cap_height 7
x_height 5
glyph_width 5
max_squash 1
box 2 5 2 1

char U+0045 E
.....
#####
#....
#....
####.
#....
#....
#####
.....
.....

char U+005A Z
.....
#####
....#
...#.
..#..
.#...
#....
#####
.....
.....

char U+0065 e
.....
.....
.....
.###.
#...#
#####
#....
.###.
.....
.....

mark acute above
....#
...#.

mark ogonek below
...#.
...##

mark bar overlay
.....
.....
.....
.###.
.....
.....
.....
.....
.....
.....

compose U+0100 U+0045 bar
alias U+0110 U+0045
"""


def _small() -> tuple[build.FontSource, dict[int, list[list[int]]], dict[int, str]]:
    src = build.parse_source(SMALL_FONT, path="small.glyphs.txt")
    glyphs, how = build.build_glyphs(src)
    return src, glyphs, how


def _rows(bm: list[list[int]]) -> list[str]:
    return ["".join("#" if b else "." for b in row) for row in bm]


def test_lowercase_mark_sits_over_a_clear_row() -> None:
    _, glyphs, how = _small()
    assert how[0xE9] == "composed"  # é from e + U+0301 via Unicode's decomposition
    rows = _rows(glyphs[0xE9])
    assert rows[:4] == ["....#.", "...#..", "......", ".###.."]


def test_capital_drops_one_duplicated_row_and_the_mark_touches() -> None:
    _, glyphs, _ = _small()
    rows = _rows(glyphs[0xC9])  # É
    assert rows[0:2] == ["....#.", "...#.."]
    # one of E's repeated stem rows went; the baseline row stays put
    assert rows[2:8] == ["#####.", "#.....", "####..", "#.....", "#.....", "#####."]


def test_capital_without_duplicate_rows_is_reported_as_overlapping() -> None:
    _, glyphs, how = _small()
    assert how[0x179] == "composed, mark overlaps"  # Ź: Z has no row to spare
    assert _rows(glyphs[0x179])[0] != "......"


def test_below_mark_and_overlay_and_alias() -> None:
    src, glyphs, how = _small()
    assert _rows(glyphs[0x118])[8:10] == ["...#..", "...##."]  # Ę ogonek under the baseline
    assert _rows(glyphs[0x100])[3] == "####.."  # overlay OR-ed onto E's stem
    assert how[0x110] == "alias of U+0045"
    assert glyphs[0x110] == glyphs[0x45]
    assert glyphs[0x110] is not glyphs[0x45]
    assert src.glyphs[0x45][1] == "#####."  # sources are left as parsed


def test_box_drawing_is_generated_from_unicode_names() -> None:
    _, glyphs, how = _small()
    assert how[0x2500] == "generated"
    assert _rows(glyphs[0x2500])[5] == "######"  # ─ spans the cell on the box row
    assert [r[2] for r in _rows(glyphs[0x2502])] == ["#"] * 10  # │ spans it vertically


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (("char U+0045 E\n.....\n#####", "char U+0045 E\n......#\n#####"), "small.glyphs.txt:"),
        (("mark bar overlay", "mark bar sideways"), "expected 'mark NAME"),
        (("alias U+0110 U+0045", "alias U+0110 U+0046"), "has no glyph"),
        (("alias U+0110 U+0045", "frobnicate 3"), "unknown directive 'frobnicate'"),
        (("compose U+0100 U+0045 bar", "compose U+0100 U+0045 nope"), "unknown mark 'nope'"),
        (("char U+005A Z", "char U+0045 Z"), "drawn twice"),
        (("char U+005A Z", "char 005A Z"), "expected a codepoint"),
        (("cell 6 10", "cell 6"), "'cell' needs 2 argument(s)"),
        (("ascent 8", "ascent eight"), "'ascent' takes integers"),
    ],
)
def test_source_errors_name_the_problem(patch: tuple[str, str], message: str) -> None:
    text = SMALL_FONT.replace(*patch, 1)
    assert text != SMALL_FONT
    with pytest.raises(build.SourceError, match=re.escape(message)):
        src = build.parse_source(text, path="small.glyphs.txt")
        build.build_glyphs(src)


def test_short_glyph_is_rejected_with_its_line() -> None:
    text = SMALL_FONT.replace(".....\n.....\n\nchar U+005A", "\nchar U+005A", 1)
    with pytest.raises(build.SourceError, match=r"small.glyphs.txt:\d+: expected 10 rows"):
        build.parse_source(text, path="small.glyphs.txt")


def test_source_error_is_a_value_error() -> None:
    assert issubclass(build.SourceError, ValueError)


def test_derived_font_widens_emboldens_and_may_redraw(tmp_path: Path) -> None:
    (tmp_path / "small.glyphs.txt").write_text(SMALL_FONT)
    derived = (
        "derive small.glyphs.txt\nfont test-wide\nwiden 9 2\nembolden\nbox 4 5 2 1\n"
        "char U+005A Z\n" + "\n".join(["........."] * 9 + ["#########"]) + "\n"
    )
    (tmp_path / "wide.glyphs.txt").write_text(derived)
    font, bdf = build.build_font(tmp_path / "wide.glyphs.txt")
    assert (font.name, font.cell_w, font.glyph_x, font.glyph_w) == ("test-wide", 9, 2, 6)
    assert font.glyphs[0x45][1] == "..######."  # E's top bar, moved and one px wider
    assert font.glyphs[0x5A][-1] == "#########"  # the redrawn Z replaces the inherited one
    glyphs, _ = build.build_glyphs(font)
    assert _rows(glyphs[0x2500])[5] == "#########"  # box drawing spans the wider cell
    assert "FONTBOUNDINGBOX 9 10 0 -2" in bdf
    with pytest.raises(build.SourceError, match="drawn twice"):
        build.parse_source(derived + derived[derived.index("char") :], base_dir=tmp_path)
