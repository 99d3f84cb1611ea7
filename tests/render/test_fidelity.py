"""What reaches the page is what the text says, whatever was rendered before (SPEC §5.4).

These tests compare decoded PIXELS, never code points: a layout that picks the
right letter is worthless if the atlas draws another.
"""

from __future__ import annotations

import io
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from glyphfold.render.api import render_text
from glyphfold.render.atlas import clear_atlases

NFD_TEXTS = [
    "nai\u0308ve cafe\u0301\n",
    "Zoe\u0308 Mu\u0308ller says the nai\u0308ve cafe\u0301 re\u0301sume\u0301\n",
    "A\u030angstro\u0308m, Ch\u00e2teau, n\u0303 in man\u0303ana, \u0179\u0301 o\u0328\u0301\n",
    "Ko\u0308ln \u2192 Mu\u0308nchen: U\u0308berfu\u0308hrung; \u304b\u3099\u304d\u3099\n",
]
# glyphs no NFD text above needs: they fill the atlas first in the "used atlas" runs
OTHER_TEXT = "".join(chr(c) for c in range(0x21, 0x17F) if chr(c).isprintable()) + " 国语 ✓"


def _pixels(res) -> list[np.ndarray]:
    return [np.asarray(Image.open(io.BytesIO(p.png)).convert("L")) for p in res.pages]


def _assert_same_pages(a, b) -> None:
    pa, pb = _pixels(a), _pixels(b)
    assert len(pa) == len(pb)
    for x, y in zip(pa, pb, strict=True):
        assert x.shape == y.shape
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("shape", ["dense", "regular", "large"])
@pytest.mark.parametrize("text", NFD_TEXTS)
def test_decomposed_and_precomposed_text_draw_the_same_page(text, shape):
    """NFD input (base + combining marks) draws exactly the NFC page, on a fresh atlas."""
    nfc = unicodedata.normalize("NFC", text)
    assert nfc != text
    clear_atlases()
    nfd_first = render_text(text, shape=shape)
    clear_atlases()
    nfc_first = render_text(nfc, shape=shape)
    _assert_same_pages(nfd_first, nfc_first)
    # and again with an atlas that already holds the precomposed letters
    _assert_same_pages(render_text(text, shape=shape), nfc_first)


@pytest.mark.parametrize("text", [*NFD_TEXTS, "plain ASCII, tabs\tand 国语 ✓ ⚠\n"])
def test_text_alone_equals_text_after_other_text(text):
    """A fresh atlas and one filled by earlier renders give the same pixels."""
    clear_atlases()
    alone = render_text(text, bits=2)
    clear_atlases()
    render_text(OTHER_TEXT, bits=2)
    after = render_text(text, bits=2)
    _assert_same_pages(alone, after)


@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_eight_threads_equal_serial(monkeypatch, mode):
    """Eight threads rendering NFD and other text on one fresh atlas equal serial renders."""
    monkeypatch.setenv("GLYPHFOLD_RENDER_BACKEND", mode)
    texts = [t * 3 for t in NFD_TEXTS] + [OTHER_TEXT, *(f"thread {i} 国{i}" for i in range(3))]
    clear_atlases()
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(render_text, texts * 2))
    clear_atlases()
    serial = [render_text(t) for t in texts * 2]
    for p, s in zip(parallel, serial, strict=True):
        _assert_same_pages(p, s)
