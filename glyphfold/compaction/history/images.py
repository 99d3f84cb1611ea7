"""Images as the history holds them: type and size from the file header, base64 and ``data:``
URLs, and the placeholder that replaces an image.

One magic-byte table and one base64 header decoder for the whole project. Only the first
bytes of PNG, JPEG, GIF and WebP data are read (no decoder, no Pillow import on the hot
path): the image-stripping rung needs the size to say what was removed:
``[image removed: 1280x800 PNG screenshot from browser_screenshot]``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the model imports this module
    from glyphfold.compaction.history.model import Image

__all__ = [
    "ImageInfo",
    "b64_image_size",
    "decode_image_data",
    "describe_image",
    "image_format",
    "image_info",
    "image_placeholder",
    "image_size",
    "parse_data_url",
]

# magic bytes, their offset, the format name
_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "PNG"),
    (b"\xff\xd8", 0, "JPEG"),
    (b"GIF87a", 0, "GIF"),
    (b"GIF89a", 0, "GIF"),
    (b"WEBP", 8, "WEBP"),
)

# JPEG frame headers usually sit within the first few KB (after EXIF); decode no more.
HEADER_B64_CHARS = 64 * 1024


def image_format(data: bytes) -> str | None:
    """ "PNG", "JPEG", "GIF" or "WEBP" from the magic bytes, or None."""
    for magic, at, name in _MAGIC:
        if data[at : at + len(magic)] == magic:
            return name
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    if kind == b"VP8 ":
        return (
            int.from_bytes(data[26:28], "little") & 0x3FFF,
            int.from_bytes(data[28:30], "little") & 0x3FFF,
        )
    if kind == b"VP8L" and len(data) >= 25:
        b = data[21:25]
        w = 1 + (((b[1] & 0x3F) << 8) | b[0])
        h = 1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
        return w, h
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    n = len(data)
    while i + 9 < n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        seg_len = int.from_bytes(data[i + 2 : i + 4], "big")
        # SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h = int.from_bytes(data[i + 5 : i + 7], "big")
            w = int.from_bytes(data[i + 7 : i + 9], "big")
            return w, h
        i += 2 + seg_len
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """Return (width, height) read from a PNG, JPEG, GIF or WebP header, or None."""
    fmt = image_format(data)
    if fmt == "PNG" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if fmt == "GIF" and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if fmt == "WEBP" and data[:4] == b"RIFF" and len(data) >= 30:
        return _webp_size(data)
    if fmt == "JPEG":
        return _jpeg_size(data)
    return None


def parse_data_url(url: str) -> tuple[str | None, str | None]:
    """Split a ``data:`` URL into (media_type, base64 data); (None, None) if not one."""
    if not url.startswith("data:"):
        return None, None
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        return None, None
    return header[5:-7] or None, payload


def decode_image_data(data: str | bytes, *, max_chars: int = HEADER_B64_CHARS) -> bytes:
    """The leading bytes of an image given as bytes, base64 text or a ``data:`` URL.

    Only the header is needed, so at most ``max_chars`` base64 characters (a multiple
    of 4) are decoded; b"" when the text is not base64.
    """
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    s = data.partition(",")[2] if data.startswith("data:") else data
    head = s[:max_chars]
    head = head[: len(head) - len(head) % 4]
    try:
        return base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return b""


def b64_image_size(data: str) -> tuple[int, int] | None:
    """(width, height) of a base64-encoded image, read from its header, or None."""
    return image_size(decode_image_data(data))


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What a placeholder says of an image."""

    width: int | None  # None when the header could not be read
    height: int | None
    format: str  # "PNG", "JPEG", "GIF", "WEBP" or "image"
    nbytes: int


def image_info(
    data: bytes, *, nbytes: int | None = None, media_type: str | None = None
) -> ImageInfo:
    """Read width, height and format from an image header."""
    n = len(data) if nbytes is None else nbytes
    fmt = image_format(data) or (
        (media_type or "").rpartition("/")[2].upper().replace("JPG", "JPEG") or "image"
    )
    size = image_size(data)
    return ImageInfo(size[0] if size else None, size[1] if size else None, fmt, n)


def image_placeholder(info: ImageInfo, *, origin: str | None, kind: str = "image") -> str:
    """``[image removed: 1280x800 PNG screenshot from browser_screenshot]``."""
    size = f"{info.width}x{info.height} " if info.width and info.height else ""
    src = f" from {origin}" if origin else ""
    return f"[image removed: {size}{info.format} {kind}{src}]"


def describe_image(img: Image) -> ImageInfo:
    """Size and format of a canonical image block (header bytes when inline, else its fields)."""
    if img.data is not None:
        raw = decode_image_data(img.data)
        info = image_info(raw, nbytes=len(img.data) * 3 // 4, media_type=img.media_type)
        if info.width is None and img.width:
            info = dataclasses.replace(info, width=img.width, height=img.height)
        return info
    fmt = (img.media_type or "").rpartition("/")[2].upper() or "image"
    return ImageInfo(img.width, img.height, fmt, 0)
