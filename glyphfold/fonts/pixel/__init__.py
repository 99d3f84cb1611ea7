"""The project's own pixel fonts: readable glyph sources and the BDF files built from them.

``bundled_fonts()`` maps each font name to its BDF file, which ships as package
data so ``pip install glyphfold`` renders ASCII and European text with no
system fonts at all. The sources (``*.glyphs.txt``) sit beside the BDF files;
``python -m glyphfold.fonts.pixel.build`` regenerates the BDFs from them.
"""

from __future__ import annotations

from pathlib import Path

# The render engine draws these two marks with the glyphs at these codepoints,
# which every bundled font covers (glyphfold.render.atlas draws a stand-in when a
# font chain has no glyph for them). Chosen by whole-page OCR (docs/rendering.md,
# "Marks"): a reader must take neither for a letter.
NEWLINE_CODEPOINT = 0x258C  # ▌ LEFT HALF BLOCK: a line break folded into the text (reflow)
CONTINUATION_CODEPOINT = 0x21AA  # ↪ RIGHTWARDS ARROW WITH HOOK: a wrapped line goes on
# ▐ RIGHT HALF BLOCK, a row's last cell: its last token goes on at the next row's start.
# Whole-page OCR reads it as nothing (a hook arrow there was read as 's' at every split).
JOIN_CODEPOINT = 0x2590
REPLACEMENT_CODEPOINT = 0xFFFD  # � drawn as a box: no font covers the character
# U+E000 + c (c in U+0021..U+007E, Private Use Area) is c drawn in reverse video in every
# bundled font: structural marks no user text can produce (the transcript strips the range).
# No reversed space: it would be a full block, which text can draw.
REVERSE_VIDEO_OFFSET = 0xE000
REVERSE_VIDEO_RANGE = (0x21, 0x7E)

_HERE = Path(__file__).resolve().parent

# font name -> BDF file name (explicit: a font ships because it is listed here)
_FONT_FILES: dict[str, str] = {
    "glyphfold-dense": "glyphfold-dense.bdf",
    "glyphfold-regular": "glyphfold-regular.bdf",
    "glyphfold-large": "glyphfold-large.bdf",
}


def bundled_fonts() -> dict[str, Path]:
    """Return the bundled pixel fonts as name -> path of the BDF file."""
    return {name: _HERE / file_name for name, file_name in _FONT_FILES.items()}


def bundled_font(name: str) -> Path:
    """Return the BDF path of one bundled font, or raise FontNotFoundError naming the choices."""
    from glyphfold.errors import FontNotFoundError

    try:
        return _HERE / _FONT_FILES[name]
    except KeyError:
        msg = f"no bundled font {name!r}; bundled fonts: {', '.join(_FONT_FILES)}"
        raise FontNotFoundError(msg) from None


__all__ = [
    "CONTINUATION_CODEPOINT",
    "JOIN_CODEPOINT",
    "NEWLINE_CODEPOINT",
    "REPLACEMENT_CODEPOINT",
    "REVERSE_VIDEO_OFFSET",
    "REVERSE_VIDEO_RANGE",
    "bundled_font",
    "bundled_fonts",
]
