"""PNG encoding of grayscale pages (1/2/4/8 bpp), base64 and data-URL helpers.

The PNG is written chunk by chunk here (signature, IHDR, one IDAT, IEND):
scanlines use filter type 0 (None). Glyph pages are mostly runs of paper with
short ink runs, which deflate already finds; the Sub/Up/Paeth filters cost a
pass over the pixels for no gain on 1-2 bit data (measured in benchmarks/README.md).

The deflate backend is chosen in :data:`DEFLATE` only: ``isal.isal_zlib`` (several
times faster) when importable, else the standard library's ``zlib``.

Per-image byte ceiling: a page whose PNG exceeds ``max_bytes`` raises
:class:`~glyphfold.errors.EncodeError` naming both sizes. The renderer does not
silently split: the caller picks a smaller page or a lower bit depth.
"""

from __future__ import annotations

import base64
import struct
import sys
import types
import zlib

import numpy as np

from glyphfold.checks import check_choice
from glyphfold.errors import EncodeError
from glyphfold.render import backend, vector

DEFLATE: types.ModuleType
_LEVELS: tuple[int, ...]
try:  # the one place the deflate backend is chosen
    from isal import isal_zlib as DEFLATE

    DEFLATE_NAME = "isal"
    # isal has levels 0..3; map zlib's 0..9 onto them
    _LEVELS = (0, 1, 1, 1, 2, 2, 2, 3, 3, 3)
except ImportError:  # pragma: no cover - exercised where isal is absent
    DEFLATE = zlib
    DEFLATE_NAME = "zlib"
    _LEVELS = tuple(range(10))

BIT_DEPTHS = (1, 2, 4, 8)
DEFAULT_LEVEL = 6
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_LITTLE_ENDIAN = sys.byteorder == "little"  # the 1-bit gather trick reads u64 little-endian


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def row_bytes(width: int, bits: int) -> int:
    """Bytes in one packed scanline (without the filter byte)."""
    return (width * bits + 7) // 8


def scanlines(
    pixels: np.ndarray,
    *,
    bits: int,
    height: int | None = None,
    width: int | None = None,
    kernels: bool | None = None,
) -> np.ndarray:
    """Pack ``pixels[:height, :width]`` (uint8, quantised) into PNG scanlines with filter bytes.

    ``pixels`` may be wider than ``width`` (a page buffer padded to a multiple of
    8 px): then 1- and 2-bit rows are packed 8 pixels per 64-bit word. ``kernels``
    picks the numba kernels or the numpy path (same bytes; default: the backend's
    choice).
    """
    check_choice("bits", bits, BIT_DEPTHS, error=EncodeError)
    h = pixels.shape[0] if height is None else height
    w = pixels.shape[1] if width is None else width
    rb = row_bytes(w, bits)
    padded_w = pixels.shape[1]
    use_kernels = backend.use_kernels(0) if kernels is None else kernels
    if bits <= 2 and padded_w % 8 == 0 and pixels.flags.c_contiguous and _LITTLE_ENDIAN:
        # whole padded rows are packed (their padding is paper), then cut to the image
        out = np.empty((h, 1 + padded_w * bits // 8), dtype=np.uint8)
        if use_kernels:
            K = backend.kernels()
            kernel = K.pack_rows_1bit_u64 if bits == 1 else K.pack_rows_2bit_u64
            kernel(pixels.view(np.uint64), h, out)
        else:
            vector.pack_rows(pixels, h, bits, out)
        if out.shape[1] != 1 + rb:
            out = np.ascontiguousarray(out[:, : 1 + rb])
        return out
    out = np.empty((h, 1 + rb), dtype=np.uint8)
    pack = backend.kernels().pack_rows if use_kernels else vector.pack_rows
    # always C-contiguous: a strided view would be a second kernel specialisation
    pack(np.ascontiguousarray(pixels[:h, :w]), h, bits, out)
    return out


def encode_png(
    pixels: np.ndarray,
    *,
    bits: int = 8,
    level: int = DEFAULT_LEVEL,
    max_bytes: int | None = None,
    height: int | None = None,
    width: int | None = None,
    kernels: bool | None = None,
) -> bytes:
    """Encode grayscale ``pixels`` (H, W) uint8 as a PNG of ``bits`` per pixel.

    Pixel values must already be quantised to 2**bits levels (the atlas does
    that); each is stored as its top ``bits`` bits, so decoding gives them back.
    ``height`` / ``width`` encode only the first rows / columns (a last page that
    hugs its text; a page buffer padded to a multiple of 8 px).
    """
    if not 0 <= level <= 9:
        msg = f"deflate level must be in 0..9, got {level}"
        raise EncodeError(msg)
    if pixels.ndim != 2 or pixels.dtype != np.uint8:
        msg = f"pixels must be a 2-D uint8 array, got {pixels.ndim}-D {pixels.dtype}"
        raise EncodeError(msg)
    h = pixels.shape[0] if height is None else height
    w = pixels.shape[1] if width is None else width
    if h < 1 or w < 1 or w > pixels.shape[1] or h > pixels.shape[0]:
        msg = f"cannot encode a {w}x{h} image from a {pixels.shape[1]}x{pixels.shape[0]} array"
        raise EncodeError(msg)
    raw = scanlines(pixels, bits=bits, height=h, width=w, kernels=kernels)
    return png_from_scanlines(raw, width=w, bits=bits, level=level, max_bytes=max_bytes)


def png_from_scanlines(
    raw: np.ndarray,
    *,
    width: int,
    bits: int,
    level: int = DEFAULT_LEVEL,
    max_bytes: int | None = None,
) -> bytes:
    """Wrap ready PNG scanlines (H, 1 + row_bytes), filter bytes included, into a PNG."""
    if not 0 <= level <= 9:
        msg = f"deflate level must be in 0..9, got {level}"
        raise EncodeError(msg)
    w, h = width, raw.shape[0]
    if raw.shape[1] != 1 + row_bytes(w, bits) or not raw.flags.c_contiguous:
        msg = f"scanlines of shape {raw.shape} do not fit a {w}-px row at {bits} bpp"
        raise EncodeError(msg)
    idat = DEFLATE.compress(raw.data, _LEVELS[level])
    ihdr = struct.pack(">IIBBBBB", w, h, bits, 0, 0, 0, 0)
    png = b"".join((_SIGNATURE, _chunk(b"IHDR", ihdr), _chunk(b"IDAT", idat), _chunk(b"IEND", b"")))
    if max_bytes is not None and len(png) > max_bytes:
        msg = (
            f"a {w}x{h} page at {bits} bpp encodes to {len(png)} bytes, over the "
            f"{max_bytes}-byte ceiling; use a smaller page or fewer bits"
        )
        raise EncodeError(msg)
    return png


def to_base64(png: bytes) -> str:
    """Return the PNG bytes as base64 text (what provider APIs expect)."""
    return base64.b64encode(png).decode("ascii")


def to_data_url(png: bytes) -> str:
    """Return a ``data:image/png;base64,...`` URL for the PNG bytes."""
    return "data:image/png;base64," + to_base64(png)
