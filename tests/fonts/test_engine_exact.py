"""End to end: the render engine draws the bundled glyphs pixel for pixel, in every shape."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from glyphfold.render.shapes import SHAPES

from .conftest import built

TEXT = "Hg0Il1é┼─—_↵"


@pytest.mark.parametrize("shape_name", list(SHAPES))
def test_render_text_reproduces_font_bitmaps(shape_name: str) -> None:
    from glyphfold.render.api import render_text

    shape = SHAPES[shape_name]
    font = built(shape.font)
    result = render_text(TEXT, shape=shape_name, margin=0)  # cells from the corner
    assert result.missing_glyphs == {}
    page = np.array(Image.open(io.BytesIO(result.pages[0].png)).convert("L")) < 128
    for i, ch in enumerate(TEXT):
        cell = page[: shape.cell_h, i * shape.cell_w : (i + 1) * shape.cell_w]
        expected = font.glyphs[ord(ch)].astype(bool)
        assert cell.shape == expected.shape, "shape cell and font cell must agree"
        assert np.array_equal(cell, expected), f"{shape_name}: {ch!r} drawn differently"
