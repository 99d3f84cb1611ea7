"""Shared fixtures of the render tests: fonts found on this machine, small setups."""

from __future__ import annotations

from pathlib import Path

import pytest

DEJAVU_MONO = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
UNIFONT = Path("/usr/share/fonts/opentype/unifont/unifont.otf")
NOTO_CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")


@pytest.fixture(scope="session")
def dejavu() -> Path:
    """DejaVu Sans Mono (Debian fonts-dejavu-core), installed by .ci/run."""
    assert DEJAVU_MONO.is_file(), "install fonts-dejavu-core (see .ci/run)"
    return DEJAVU_MONO


@pytest.fixture(scope="session")
def unifont() -> Path:
    """GNU Unifont (Debian fonts-unifont), installed by .ci/run."""
    assert UNIFONT.is_file(), "install fonts-unifont (see .ci/run)"
    return UNIFONT


def write_bdf(path: Path, glyphs: dict[int, list[str]], *, w: int = 6, h: int = 10) -> Path:
    """Write a tiny BDF font whose glyphs are '#'/'.' rows of a w x h cell."""
    ascent = h - 2
    lines = [
        "STARTFONT 2.1",
        "FONT -test-tiny-medium-r-normal--10-100-75-75-c-60-iso10646-1",
        f"SIZE {h} 75 75",
        f"FONTBOUNDINGBOX {w} {h} 0 -2",
        "STARTPROPERTIES 3",
        f"FONT_ASCENT {ascent}",
        "FONT_DESCENT 2",
        'SPACING "C"',
        "ENDPROPERTIES",
        f"CHARS {len(glyphs)}",
    ]
    for cp, rows in sorted(glyphs.items()):
        assert len(rows) == h and all(len(r) == w for r in rows)
        lines += [
            f"STARTCHAR U+{cp:04X}",
            f"ENCODING {cp}",
            f"SWIDTH {w * 100} 0",
            f"DWIDTH {w} 0",
            f"BBX {w} {h} 0 -2",
            "BITMAP",
        ]
        for r in rows:
            bits = int(r.replace("#", "1").replace(".", "0"), 2) << (8 - w % 8 if w % 8 else 0)
            nbytes = (w + 7) // 8
            lines.append(f"{bits:0{nbytes * 2}X}")
        lines.append("ENDCHAR")
    lines.append("ENDFONT")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path
