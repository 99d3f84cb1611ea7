"""Draw sample text with a bundled pixel font through FreeType, for looking at glyphs.

``python -m glyphfold.fonts.pixel.preview glyphfold-dense out.png --scale 4 "text"``
renders each line of text into fixed cells (the way the engine does, but with
no engine), so a glyph can be judged at 1x and enlarged before it ships.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def render_cells(font_path: Path, text: str):  # -> numpy uint8 array, 0 ink / 255 paper
    """Render text (one cell per char, lines on '\\n') with FreeType in mono mode."""
    import freetype
    import numpy as np

    face = freetype.Face(str(font_path))
    face.select_size(0)
    size = face.available_sizes[0]
    cell_h = size.height
    cell_w = face.size.max_advance // 64 or size.width
    ascent = face.size.ascender // 64
    lines = text.split("\n")
    cols = max((len(line) for line in lines), default=0)
    img = np.full((cell_h * len(lines), max(cols, 1) * cell_w), 255, dtype=np.uint8)
    flags = freetype.FT_LOAD_RENDER | freetype.FT_LOAD_TARGET_MONO
    for row, line in enumerate(lines):
        for col, ch in enumerate(line):
            if face.get_char_index(ord(ch)) == 0:
                continue
            face.load_char(ch, flags)
            bmp = face.glyph.bitmap
            bits = glyph_bits(bmp)
            top = row * cell_h + ascent - face.glyph.bitmap_top
            left = col * cell_w + face.glyph.bitmap_left
            h, w = bits.shape
            img[top : top + h, left : left + w][bits.astype(bool)] = 0
    return img


def glyph_bits(bmp):  # -> numpy uint8 array of 0/1, rows x width
    """Unpack a FreeType mono bitmap into a 0/1 array."""
    import numpy as np

    if bmp.rows == 0 or bmp.width == 0:
        return np.zeros((bmp.rows, bmp.width), dtype=np.uint8)
    raw = np.array(bmp.buffer, dtype=np.uint8).reshape(bmp.rows, bmp.pitch)
    return np.unpackbits(raw, axis=1)[:, : bmp.width]


def main(argv: list[str] | None = None) -> int:
    """Write a PNG of the text drawn with one bundled font."""
    from PIL import Image

    from glyphfold.fonts.pixel import bundled_font

    parser = argparse.ArgumentParser(prog="python -m glyphfold.fonts.pixel.preview")
    parser.add_argument("font", help="bundled font name or BDF path")
    parser.add_argument("out", type=Path)
    parser.add_argument("text", nargs="?", help="text; default: read stdin")
    parser.add_argument("--scale", type=int, default=1, help="nearest-neighbour enlargement")
    args = parser.parse_args(argv)
    path = Path(args.font) if args.font.endswith(".bdf") else bundled_font(args.font)
    text = args.text if args.text is not None else sys.stdin.read()
    img = Image.fromarray(render_cells(path, text.replace("\\n", "\n")))
    if args.scale > 1:
        size = (img.width * args.scale, img.height * args.scale)
        img = img.resize(size, Image.Resampling.NEAREST)
    img.save(args.out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
