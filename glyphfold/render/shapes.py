"""Named glyph shapes: cell size, glyph box, line pitch, font and bit depth.

A shape is the geometry a page is drawn with. Each one carries the reason it
exists, taken from public measurements of how vision models read glyph pages:

* readers with strong vision read ~5x8 px glyphs reliably;
* Claude Opus-class readers were measured best on 8x13 glyphs in an 11x16 cell
  for tool output (code, JSON, ids), where one wrong character costs most;
* weaker readers need ~9x16 glyphs;
* a line pitch under 9 px fails for every reader measured (lines merge), so a
  shape with ``line_pitch < 9`` is rejected;
* a page only reads if the provider does not downscale it: Claude's standard
  tier keeps images inside 1568 px on the long edge (1568x728 is the widest
  page that stays under its ~1.15 Mpx budget), OpenAI patch models 1600x1600,
  Gemini 3 bills a flat budget per image. Page geometry lives in
  ``glyphfold.render.profiles``; a shape only fixes the cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from glyphfold.errors import UnknownShapeError

MIN_LINE_PITCH_PX = 9
_VALID_BITS = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class Shape:
    """The geometry of one glyph cell and the font drawn into it."""

    name: str
    cell_w: int
    cell_h: int
    glyph_w: int
    glyph_h: int
    font: str
    bits: int = 1
    reason: str = ""
    line_pitch: int = field(default=0)

    def __post_init__(self) -> None:
        if not self.name:
            msg = "shape name must be a non-empty string, got ''"
            raise ValueError(msg)
        if self.line_pitch == 0:
            object.__setattr__(self, "line_pitch", self.cell_h)
        for label, value in (("cell_w", self.cell_w), ("cell_h", self.cell_h)):
            if not isinstance(value, int) or value < 1:
                msg = f"shape {self.name!r}: {label} must be a positive int (px), got {value!r}"
                raise ValueError(msg)
        if not 1 <= self.glyph_w <= self.cell_w:
            msg = (
                f"shape {self.name!r}: glyph_w must be in 1..cell_w={self.cell_w}, "
                f"got {self.glyph_w}; widen the cell or narrow the glyph"
            )
            raise ValueError(msg)
        if not 1 <= self.glyph_h <= self.cell_h:
            msg = (
                f"shape {self.name!r}: glyph_h must be in 1..cell_h={self.cell_h}, "
                f"got {self.glyph_h}; heighten the cell or shorten the glyph"
            )
            raise ValueError(msg)
        if self.line_pitch != self.cell_h:
            msg = (
                f"shape {self.name!r}: line_pitch must equal cell_h={self.cell_h}, "
                f"got {self.line_pitch}; set cell_h to the pitch you want"
            )
            raise ValueError(msg)
        if self.line_pitch < MIN_LINE_PITCH_PX:
            msg = (
                f"shape {self.name!r}: line pitch must be >= {MIN_LINE_PITCH_PX} px "
                f"(lines merge for every reader below it), got {self.line_pitch}"
            )
            raise ValueError(msg)
        if self.bits not in _VALID_BITS:
            msg = f"shape {self.name!r}: bits must be one of {_VALID_BITS}, got {self.bits!r}"
            raise ValueError(msg)
        if not self.font:
            msg = f"shape {self.name!r}: font must name a bundled font or a path, got ''"
            raise ValueError(msg)

    def cells_per_page(self, width_px: int, height_px: int) -> tuple[int, int]:
        """Return (columns, rows) of whole cells that fit a page of that size."""
        return width_px // self.cell_w, height_px // self.line_pitch

    def chars_per_page(self, width_px: int, height_px: int) -> int:
        """Return how many cells (one char each) a page of that size holds."""
        cols, rows = self.cells_per_page(width_px, height_px)
        return cols * rows


SHAPES: dict[str, Shape] = {
    "dense": Shape(
        name="dense",
        cell_w=6,
        cell_h=10,
        glyph_w=5,
        glyph_h=9,
        font="glyphfold-dense",
        bits=1,
        reason=(
            "Readers with strong vision read ~5x8 px glyphs: 5-px-wide glyphs with a 7-px cap "
            "height and 2-px descenders in a 6x10 cell. 10 px pitch clears the 9 px floor; "
            "a full Anthropic page (1564x726 inside the 1568x728 box, 8-px margins) holds "
            "258x71 = 18,318 cells. Use for prose, logs and ids read by strong readers where "
            "density matters: whole-page OCR reads 95-100% of generated ids exactly and "
            "European text under 3% CER (the regular shape stays the safer default). Wide "
            "(CJK) glyphs are drawn 12 px tall over two rows (an ideograph needs them)."
        ),
    ),
    "regular": Shape(
        name="regular",
        cell_w=8,
        cell_h=16,
        glyph_w=7,
        glyph_h=13,
        font="glyphfold-regular",
        bits=1,
        reason=(
            "The general default: 7x13 glyphs (10-px caps, 7-px x-height, 3-px descenders) "
            "in an 8x16 cell keep serifs on I/l/1, a slashed zero and distinct 5/S, 8/B "
            "legible for mid-strength readers; a full Anthropic page (1568x720) holds "
            "194x44 = 8,536 cells."
        ),
    ),
    "large": Shape(
        name="large",
        cell_w=11,
        cell_h=16,
        glyph_w=8,
        glyph_h=13,
        font="glyphfold-large",
        bits=1,
        reason=(
            "Claude Opus-class readers were measured best on 8x13 glyphs in an 11x16 cell "
            "for tool output (code, JSON, hex ids): the 3-px gutter keeps neighbours from "
            "fusing. glyphfold-large is the regular font's drawings emboldened to 8x13 and "
            "centred in the 11x16 cell, with box drawing, blocks and the em dash drawn for "
            "the full cell so tables stay joined; a full Anthropic page (1567x720) holds "
            "141x44 = 6,204 cells."
        ),
    ),
}


def get_shape(name: str | Shape) -> Shape:
    """Return the shape called ``name`` (a Shape passes through unchanged)."""
    if isinstance(name, Shape):
        return name
    try:
        return SHAPES[name]
    except (KeyError, TypeError):
        msg = f"unknown shape {name!r}; valid shapes: {', '.join(shape_names())}"
        raise UnknownShapeError(msg) from None


def shape_names() -> list[str]:
    """Return the names of the registered shapes, densest first."""
    return list(SHAPES)
