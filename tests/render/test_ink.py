"""Lighter ink for marked source spans (tool output), on 2-bit pages, both paths alike."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from glyphfold.errors import InputError
from glyphfold.render import backend
from glyphfold.render.api import plan_text, render_text
from glyphfold.render.ink import ink_levels

TEXT = (
    "[user] please look at the log\n"
    "[tool] " + "output line 12345 ok " * 12 + "\n"
    "[assistant] the log says ok\n"
)
A, B = TEXT.index("[tool]"), TEXT.index("[assistant]")


def _px(page) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(page.png)).convert("L"))


@pytest.mark.parametrize("mode", ["numba", "numpy"])
@pytest.mark.parametrize(("strength", "gray"), [(0.75, 85), (0.5, 85), (0.4, 170), (1.0, 0)])
def test_marked_spans_print_in_the_lighter_gray(monkeypatch, mode, strength, gray):
    """Narrative stays black; the marked rows use exactly one gray level; 2 bpp by default."""
    monkeypatch.setenv(backend.ENV_VAR, mode)
    res = render_text(TEXT, ink=[(A, B, strength)], keep_pixels=True)
    plain = render_text(TEXT, bits=2, keep_pixels=True)
    assert res.bits == 2 if strength < 1 else res.bits == 1
    px, ref = _px(res.pages[0]), _px(plain.pages[0])
    assert (px == 255).sum() == (ref == 255).sum(), "the same pixels are inked"
    m, ch = res.margin, res.cell[1]
    rows = res.pages[0].row_spans
    for r, (lo, _) in enumerate(rows):
        band = px[m + r * ch : m + (r + 1) * ch]
        inked = set(np.unique(band[band < 255]).tolist())
        want = {gray} if A <= lo < B else {0}
        assert inked == want, (r, inked)


def test_ink_changes_no_layout_and_both_paths_agree(monkeypatch):
    """Same spans and prices as without ink; numba and numpy give the same bytes."""
    spans = [(A, B, 0.5), (0, 6, 0.3)]
    out = []
    for mode in ("numba", "numpy"):
        monkeypatch.setenv(backend.ENV_VAR, mode)
        out.append(render_text(TEXT * 40, ink=spans, shape="dense"))
    assert [p.png for p in out[0].pages] == [p.png for p in out[1].pages]
    plan = plan_text(TEXT * 40, shape="dense", bits=2)
    assert plan.page_starts == tuple(p.source_span[0] for p in out[0].pages)
    assert plan.image_tokens == out[0].image_tokens
    inked_plan = plan_text(TEXT * 40, shape="dense", ink=spans)  # implies 2 bpp, as render
    assert inked_plan == plan
    assert max(len(p.png) for p in out[0].pages) <= inked_plan.max_png_bytes


def test_later_spans_win_and_full_ink_spans_cost_nothing():
    """Overlaps: the later span decides; strength 1 alone keeps the 1-bit page."""
    levels, strengths = ink_levels([(0, 10, 0.5), (5, 8, 1.0), (2, 3, 0.25)], 12)
    assert strengths == (0.5, 0.25)
    assert levels.tolist() == [1, 1, 2, 1, 1, 0, 0, 0, 1, 1, 0, 0]
    assert ink_levels([(0, 5, 1.0)], 5) == (None, ())


@pytest.mark.parametrize(
    ("spans", "kw", "match"),
    [
        ([(0, 5, 0.5)], {"bits": 1}, "bits=2"),
        ([(3, 2, 0.5)], {}, "start <= end"),
        ([(0, 10_000, 0.5)], {}, "end <="),
        ([(0, 5, 0)], {}, r"\(0, 1\]"),
        ([(0, 5, 1.5)], {}, r"\(0, 1\]"),
        ([(0, 5)], {}, "start, end, strength"),
        ([(0.0, 5, 0.5)], {}, "ints"),
    ],
)
def test_bad_ink_is_one_clear_error(spans, kw, match):
    """Every malformed span or an impossible bit depth is an InputError naming it."""
    with pytest.raises(InputError, match=match):
        render_text(TEXT, ink=spans, **kw)
