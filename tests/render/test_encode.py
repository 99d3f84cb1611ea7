"""PNG encoding: exact round trip through Pillow at every bit depth, limits, helpers."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from glyphfold.errors import EncodeError
from glyphfold.render.atlas import quantize
from glyphfold.render.encode import DEFLATE_NAME, encode_png, to_base64, to_data_url


def _decode(png: bytes) -> np.ndarray:
    im = Image.open(io.BytesIO(png))
    im.load()
    return np.asarray(im.convert("L"))


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
@pytest.mark.parametrize(("h", "w"), [(1, 1), (7, 13), (32, 64)])
def test_png_decodes_to_exactly_the_page_pixels(bits, h, w):
    """Pillow reads back the very pixels we encoded (quantised to 2**bits levels)."""
    rng = np.random.default_rng(h * 100 + w + bits)
    pixels = quantize(rng.integers(0, 256, size=(h, w), dtype=np.uint8), bits)
    png = encode_png(pixels, bits=bits)
    im = Image.open(io.BytesIO(png))
    assert im.size == (w, h)
    np.testing.assert_array_equal(_decode(png), pixels)


def test_height_encodes_only_the_printed_rows():
    """``height`` encodes a prefix of the buffer (the last page hugs its text)."""
    pixels = np.full((20, 10), 255, dtype=np.uint8)
    pixels[:5, :3] = 0
    out = _decode(encode_png(pixels, bits=1, height=5))
    assert out.shape == (5, 10)
    np.testing.assert_array_equal(out, pixels[:5])


def test_levels_trade_size_for_speed():
    """Level 0 stores, higher levels compress; all decode to the same pixels."""
    pixels = np.tile(quantize(np.arange(256, dtype=np.uint8).reshape(16, 16), 8), (8, 8))
    stored = encode_png(pixels, bits=8, level=0)
    packed = encode_png(pixels, bits=8, level=9)
    assert len(packed) < len(stored)
    np.testing.assert_array_equal(_decode(stored), _decode(packed))
    assert DEFLATE_NAME in ("isal", "zlib")


def test_byte_ceiling_raises_with_both_numbers():
    """Over the per-image ceiling: EncodeError naming size and ceiling (no silent split)."""
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, size=(64, 64), dtype=np.uint8)
    with pytest.raises(EncodeError, match=r"\d+ bytes, over the 1000-byte ceiling"):
        encode_png(pixels, bits=8, max_bytes=1000)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [({"bits": 3}, "bits must be one of"), ({"level": 10}, "level must be in 0..9")],
)
def test_bad_options_raise(kwargs, pattern):
    """Invalid bit depth or level raise EncodeError (a ValueError) naming the value."""
    with pytest.raises(ValueError, match=pattern):
        encode_png(np.zeros((2, 2), dtype=np.uint8), **kwargs)


def test_base64_and_data_url_round_trip():
    """to_base64 / to_data_url wrap the exact PNG bytes."""
    png = encode_png(np.zeros((3, 3), dtype=np.uint8), bits=1)
    assert base64.b64decode(to_base64(png)) == png
    url = to_data_url(png)
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
@pytest.mark.parametrize("w", [8, 13, 62, 66])
def test_padded_buffer_encodes_only_the_page_width(bits, w):
    """A page buffer padded to whole 64-bit words encodes to exactly the page columns."""
    rng = np.random.default_rng(w * 10 + bits)
    buf = np.full((9, -(-w // 8) * 8), 255, dtype=np.uint8)
    buf[:, :w] = quantize(rng.integers(0, 256, size=(9, w), dtype=np.uint8), bits)
    got = _decode(encode_png(buf, bits=bits, height=7, width=w))
    np.testing.assert_array_equal(got, buf[:7, :w])
