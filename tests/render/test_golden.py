"""Golden images: fixed strings and fonts render like the reviewed images, within tolerance."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.render.goldens import CASES, GOLDEN_DIR, render_case

# Mean absolute difference per pixel (0..255) allowed: absorbs hinting changes
# across FreeType versions, fails on any misplaced or missing glyph.
MAX_MEAN_DIFF = 2.0


def _gray(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.int16)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_golden(name):
    """The page matches tests/render/golden/<name>.png (regenerate: goldens.py)."""
    want = _gray((GOLDEN_DIR / f"{name}.png").read_bytes())
    got = _gray(render_case(name))
    assert got.shape == want.shape
    diff = np.abs(got - want).mean()
    assert diff <= MAX_MEAN_DIFF, f"{name}: mean pixel difference {diff:.2f}"
    assert (got < 128).sum() > 50, "a golden page must have ink"
