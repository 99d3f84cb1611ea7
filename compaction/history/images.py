"""Image size and type from the file header, and the placeholder that replaces an image.

Reads only the first bytes of PNG, JPEG, GIF and WebP data (no decoder, no
Pillow import on the hot path): the image-stripping rung needs the size to say
what was removed: ``[image removed: 1280x800 PNG screenshot from browser_screenshot]``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from glyphfold.compaction.history.messages import image_size


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


_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "PNG"),
    (b"\xff\xd8", 0, "JPEG"),
    (b"GIF87a", 0, "GIF"),
    (b"GIF89a", 0, "GIF"),
    (b"WEBP", 8, "WEBP"),
)


def image_info(
    data: bytes, *, nbytes: int | None = None, media_type: str | None = None
) -> ImageInfo:
    """Read width, height and format from an image header (sizes: core's ``image_size``)."""
    n = len(data) if nbytes is None else nbytes
    fmt = (media_type or "").rpartition("/")[2].upper().replace("JPG", "JPEG") or "image"
    for magic, at, name in _MAGIC:
        if data[at : at + len(magic)] == magic:
            fmt = name
            break
    size = image_size(data)
    return ImageInfo(size[0] if size else None, size[1] if size else None, fmt, n)


def image_placeholder(info: ImageInfo, *, origin: str | None, kind: str = "image") -> str:
    """``[image removed: 1280x800 PNG screenshot from browser_screenshot]``."""
    size = f"{info.width}x{info.height} " if info.width and info.height else ""
    src = f" from {origin}" if origin else ""
    return f"[image removed: {size}{info.format} {kind}{src}]"
