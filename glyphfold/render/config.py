"""One render's configuration: profile, shape and options resolved into a ``Setup``.

Also the page geometry (:func:`page_size`), the one place the size of a page is
computed, so that planning and rendering agree to the pixel.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from glyphfold.checks import check_choice, check_int
from glyphfold.errors import InputError, LayoutError
from glyphfold.fonts.pixel import CONTINUATION_CODEPOINT, JOIN_CODEPOINT, NEWLINE_CODEPOINT
from glyphfold.fonts.raster import wide_rows
from glyphfold.fonts.resolve import fallback_chain, resolve_font
from glyphfold.render.encode import BIT_DEPTHS
from glyphfold.render.layout import MIN_COLS, LayoutConfig
from glyphfold.render.options import RenderOptions, options_of

if TYPE_CHECKING:
    from glyphfold.render.profiles import Profile
    from glyphfold.render.shapes import Shape

_SIZE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
MAX_CELL_PX = 256
MAX_PAGE_PX = 16384
# Paper around the text on every side (px). A reader that finds the lines itself
# (OCR, a vision encoder) loses or misreads the first glyph of a line that touches
# the image edge; see docs/rendering.md ("Margins") for the measurement.
DEFAULT_MARGIN_PX = 8
MAX_MARGIN_PX = 256


@dataclass(frozen=True)
class Setup:
    """Everything a render needs, resolved from profile, shape and explicit options."""

    profile: Profile
    shape: Shape
    cell_w: int
    cell_h: int
    page_w: int
    page_h: int
    bits: int
    chain: tuple[Path, ...]
    config: LayoutConfig
    multiple: int = 1  # image sides are padded with paper to a multiple of this (px)
    margin: int = 0  # paper around the cells on every side (px)


def parse_size(value: str | Sequence[int], *, what: str) -> tuple[int, int]:
    """Parse ``"WxH"`` or a (w, h) pair into two positive ints."""
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m is None:
            msg = f"{what} must look like WxH (e.g. 8x16), got {value!r}"
            raise LayoutError(msg)
        w, h = int(m.group(1)), int(m.group(2))
    else:
        try:
            w, h = (int(v) for v in value)
        except (TypeError, ValueError):
            msg = f"{what} must be a (width, height) pair of ints, got {value!r}"
            raise LayoutError(msg) from None
    if w < 1 or h < 1:
        msg = f"{what} must be positive, got {w}x{h}"
        raise LayoutError(msg)
    return w, h


def resolve_setup(
    options: RenderOptions | None = None,
    *,
    profile: str | Profile = "anthropic",
    shape: str | Shape | None = None,
    font: str | os.PathLike[str] | None = None,
    cell: str | Sequence[int] | None = None,
    page: str | Sequence[int] | None = None,
    bits: int | None = None,
    reflow: bool = False,
    tab_size: int = 8,
    margin: int | None = None,
    collapse: bool = False,
) -> Setup:
    """Resolve profile defaults, the shape and explicit overrides into one ``Setup``.

    Precedence: explicit argument > shape (cell, font, bits) > profile defaults
    (page, shape, bits). ``GLYPHFOLD_FONT`` overrides the shape's font but not an
    explicit ``font``. ``margin`` (px of paper on every side, default
    :data:`DEFAULT_MARGIN_PX`) is taken from the page: the image never grows.
    ``options`` gives them all as one :class:`RenderOptions` (keywords set to a
    non-default value override it).
    """
    from glyphfold.render.profiles import get_profile
    from glyphfold.render.shapes import get_shape

    o = options_of(
        options,
        profile=profile,
        shape=shape,
        font=font,
        cell=cell,
        page=page,
        bits=bits,
        reflow=reflow,
        tab_size=tab_size,
        margin=margin,
        collapse=collapse,
    )
    profile, shape, font, cell, page, bits = o.profile, o.shape, o.font, o.cell, o.page, o.bits
    reflow, tab_size, margin, collapse = o.reflow, o.tab_size, o.margin, o.collapse

    prof = get_profile(profile)
    if not prof.vision:
        msg = f"profile {prof.name!r} has no vision: it cannot read rendered pages"
        raise InputError(msg)
    shp = get_shape(shape if shape is not None else prof.default_shape)
    cell_w, cell_h = parse_size(cell, what="cell") if cell is not None else (shp.cell_w, shp.cell_h)
    if cell_w > MAX_CELL_PX or cell_h > MAX_CELL_PX or cell_h < 4 or cell_w < 2:
        msg = f"cell must be 2..{MAX_CELL_PX} x 4..{MAX_CELL_PX} px, got {cell_w}x{cell_h}"
        raise LayoutError(msg)
    page_w, page_h = parse_size(page, what="page") if page is not None else prof.default_page
    if page_w > MAX_PAGE_PX or page_h > MAX_PAGE_PX:
        msg = f"page must be at most {MAX_PAGE_PX}x{MAX_PAGE_PX} px, got {page_w}x{page_h}"
        raise LayoutError(msg)
    if bits is None:
        bits = shp.bits if shape is not None else prof.default_bits
    check_choice("bits", bits, BIT_DEPTHS)
    margin = DEFAULT_MARGIN_PX if margin is None else margin
    check_int("margin", margin, minimum=0, maximum=MAX_MARGIN_PX, unit="px", error=LayoutError)
    primary = resolve_font(font, preferred=shp.font)
    chain = fallback_chain(primary, cell_h=cell_h)
    # the marks are the glyphs the bundled pixel fonts promise to cover
    cont, nl = CONTINUATION_CODEPOINT, NEWLINE_CODEPOINT
    cols, rows = (page_w - 2 * margin) // cell_w, (page_h - 2 * margin) // cell_h
    if rows < 1 or cols < MIN_COLS:
        msg = (
            f"a {page_w}x{page_h} page with {margin}-px margins holds {max(cols, 0)}x"
            f"{max(rows, 0)} cells of {cell_w}x{cell_h} px; "
            f"it needs at least {MIN_COLS} columns and 1 row"
        )
        raise LayoutError(msg)
    multiple = max(1, int(getattr(prof, "page_multiple_px", 1)))
    img_w, img_h = padded(cols * cell_w + 2 * margin, rows * cell_h + 2 * margin, multiple)
    if not prof.fits(img_w, img_h):
        # a downscaled glyph page is unreadable whatever the font: refuse up front
        rw, rh = prof.resized(img_w, img_h)
        msg = (
            f"a {img_w}x{img_h} page would be downscaled to {rw}x{rh} by {prof.name!r}; "
            f"use a page inside its no-downscale box (default {prof.default_page[0]}x"
            f"{prof.default_page[1]})"
        )
        raise LayoutError(msg)
    config = LayoutConfig(
        cols=cols,
        rows=rows,
        tab_size=tab_size,
        reflow=reflow,
        continuation=cont,
        newline=nl,
        collapse=bool(collapse),
        join=JOIN_CODEPOINT,
        wide_rows=wide_rows(cell_h) if rows > 1 else 1,
    )
    return Setup(
        profile=prof,
        shape=shp,
        cell_w=cell_w,
        cell_h=cell_h,
        page_w=page_w,
        page_h=page_h,
        bits=bits,
        chain=chain,
        config=config,
        multiple=multiple,
        margin=margin,
    )


def padded(width: int, height: int, multiple: int) -> tuple[int, int]:
    """Image size with each side rounded up to ``multiple`` px (paper margin right/bottom).

    Providers that resize to a grid (Qwen-VL: multiples of 28 px) keep such an
    image as it is, so glyphs are never resampled.
    """
    return -(-width // multiple) * multiple, -(-height // multiple) * multiple


def page_size(setup: Setup, n_rows: int) -> tuple[int, int]:
    """Width and height in px of a page of ``n_rows`` text rows, as rendered and billed.

    The one place page geometry is computed: :func:`render_text` draws pages of
    this size and :func:`plan_text` prices them by it, so a plan costs what the
    render will. The cells sit ``setup.margin`` px in from the left and top; the
    right and bottom get the same margin, then paper up to the provider's multiple.
    """
    m = setup.margin
    w = setup.config.cols * setup.cell_w + 2 * m
    return padded(w, n_rows * setup.cell_h + 2 * m, setup.multiple)
