"""Baseline (a) of ``glyphfold bench``: what a Python user would write with Pillow.

Lines are wrapped at the page's column count (tabs expanded), drawn one
``ImageDraw.text`` call per line onto a white image of the same page geometry,
and saved with Pillow's PNG encoder at its default level. Mode ``"1"`` is used
for 1-bit pages (Pillow then draws without anti-aliasing, like glyphfold), ``"L"``
otherwise. No layout rules beyond wrapping: it does less work than glyphfold.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from PIL import Image, ImageDraw, ImageFont


def wrapped_lines(text: str, cols: int) -> Iterator[str]:
    """Yield the text's lines cut to ``cols`` characters (tabs expanded)."""
    for line in text.expandtabs(8).splitlines():
        if not line:
            yield ""
            continue
        for i in range(0, len(line), cols):
            yield line[i : i + cols]


def render_pillow(
    text: str,
    *,
    font_path: str,
    font_px: int,
    cols: int,
    rows: int,
    cell_w: int,
    cell_h: int,
    bits: int = 1,
    max_pages: int | None = None,
) -> list[bytes]:
    """Render ``text`` into PNG pages with Pillow, line by line."""
    font = ImageFont.truetype(font_path, font_px)
    mode = "1" if bits == 1 else "L"
    width, height = cols * cell_w, rows * cell_h
    pages: list[bytes] = []
    lines = list(wrapped_lines(text, cols))
    for p0 in range(0, len(lines), rows):
        if max_pages is not None and len(pages) >= max_pages:
            break
        chunk = lines[p0 : p0 + rows]
        im = Image.new(
            mode,
            (width, len(chunk) * cell_h if p0 + rows >= len(lines) else height),
            1 if mode == "1" else 255,
        )
        draw = ImageDraw.Draw(im)
        for i, line in enumerate(chunk):
            draw.text((0, i * cell_h), line, font=font, fill=0)
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        pages.append(buf.getvalue())
    return pages


def count_pages(text: str, *, cols: int, rows: int) -> int:
    """How many pages the baseline produces for ``text``."""
    n = sum(1 for _ in wrapped_lines(text, cols))
    return -(-n // rows)
