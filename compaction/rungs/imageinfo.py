"""Image size and type from the file header, and the placeholder that replaces an image.

Reads only the first bytes of PNG, JPEG, GIF and WebP data (no decoder, no
Pillow import on the hot path): the image-stripping rung needs the size to say
what was removed: ``[image removed: 1280x800 PNG screenshot from browser_screenshot]``.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ImageInfo:
    width: int | None  # None when the header could not be read
    height: int | None
    format: str  # "PNG", "JPEG", "GIF", "WEBP" or "image"
    nbytes: int


def decode_image_data(data: str | bytes) -> bytes:
    """Raw bytes from raw bytes, base64 text, or a ``data:`` URL; b"" if undecodable."""
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    s = data
    if s.startswith("data:"):
        s = s.partition(",")[2]
    try:
        # only the header is needed: decode a prefix (a multiple of 4 chars)
        return base64.b64decode(s[:65536], validate=False)
    except (binascii.Error, ValueError):
        return b""


def image_info(
    data: bytes, *, nbytes: int | None = None, media_type: str | None = None
) -> ImageInfo:
    """Read width, height and format from an image header."""
    n = len(data) if nbytes is None else nbytes
    fmt_hint = (media_type or "").rpartition("/")[2].upper().replace("JPG", "JPEG") or "image"
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return ImageInfo(w, h, "PNG", n)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return ImageInfo(w, h, "GIF", n)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = 1 + int.from_bytes(data[24:27], "little")
            h = 1 + int.from_bytes(data[27:30], "little")
            return ImageInfo(w, h, "WEBP", n)
        if chunk == b"VP8L":
            b = int.from_bytes(data[21:25], "little")
            return ImageInfo((b & 0x3FFF) + 1, ((b >> 14) & 0x3FFF) + 1, "WEBP", n)
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return ImageInfo(w & 0x3FFF, h & 0x3FFF, "WEBP", n)
    if data[:2] == b"\xff\xd8":
        size = _jpeg_size(data)
        if size is not None:
            return ImageInfo(size[0], size[1], "JPEG", n)
        return ImageInfo(None, None, "JPEG", n)
    return ImageInfo(None, None, fmt_hint, n)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    sof = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        seg_len = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker in sof:
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + seg_len
    return None


def image_placeholder(info: ImageInfo, *, origin: str | None, kind: str = "image") -> str:
    """``[image removed: 1280x800 PNG screenshot from browser_screenshot]``."""
    size = f"{info.width}x{info.height} " if info.width and info.height else ""
    src = f" from {origin}" if origin else ""
    return f"[image removed: {size}{info.format} {kind}{src}]"
