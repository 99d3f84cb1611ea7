"""``render_text``: text in, dense PNG glyph pages out (the public render entry point)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from glyphfold.fonts.pixel import CONTINUATION_CODEPOINT, NEWLINE_CODEPOINT
from glyphfold.fonts.resolve import fallback_chain, install_hint, resolve_font
from glyphfold.render.atlas import Atlas, get_atlas
from glyphfold.render.encode import (
    BIT_DEPTHS,
    DEFAULT_LEVEL,
    encode_png,
    png_from_scanlines,
    row_bytes,
)
from glyphfold.render.layout import (
    FOLD_CHARS,
    MIN_COLS,
    Layout,
    LayoutConfig,
    to_codepoints,
)
from glyphfold.render.page import MAX_BITS_CELL_W, Page, blit, blit_scanlines

from glyphfold.errors import InputError, LayoutError

if TYPE_CHECKING:
    from glyphfold.render.profiles import Profile
    from glyphfold.render.shapes import Shape

__all__ = [
    "Page",
    "RenderResult",
    "Setup",
    "TextPlan",
    "page_size",
    "plan_text",
    "render_text",
    "resolve_setup",
]

_SIZE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
MAX_CELL_PX = 256
MAX_PAGE_PX = 16384


@dataclass(frozen=True)
class RenderResult:
    """The pages of one render and what it cost."""

    pages: tuple[Page, ...]
    chars: int
    image_tokens: int
    missing_glyphs: dict[int, int]
    elapsed_ms: float
    dropped: dict[str, int] = field(default_factory=dict)
    hints: tuple[str, ...] = ()
    width: int = 0
    height: int = 0
    cell: tuple[int, int] = (0, 0)
    bits: int = 8
    profile: str = ""
    shape: str = ""
    fonts: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # a summary: the dataclass repr would inline every page's PNG bytes
        size = f", the first {self.pages[0].width}x{self.pages[0].height}" if self.pages else ""
        return (
            f"<RenderResult {len(self.pages):,} page(s){size}, {self.chars:,} chars, "
            f"{self.image_tokens:,} image tokens, profile {self.profile!r}, "
            f"shape {self.shape!r}, {self.elapsed_ms:,.1f} ms>"
        )

    @property
    def text_tokens_estimate(self) -> int:
        """Tokens the same text would cost as text (the chars/4 heuristic)."""
        return (self.chars + 3) // 4

    @property
    def chars_per_image_token(self) -> float:
        """Source characters carried per image token (higher is denser)."""
        return self.chars / self.image_tokens if self.image_tokens else 0.0


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
    *,
    profile: str | Profile = "anthropic",
    shape: str | Shape | None = None,
    font: str | os.PathLike[str] | None = None,
    cell: str | Sequence[int] | None = None,
    page: str | Sequence[int] | None = None,
    bits: int | None = None,
    reflow: bool = False,
    tab_size: int = 8,
) -> Setup:
    """Resolve profile defaults, the shape and explicit overrides into one ``Setup``.

    Precedence: explicit argument > shape (cell, font, bits) > profile defaults
    (page, shape, bits). ``GLYPHFOLD_FONT`` overrides the shape's font but not an
    explicit ``font``.
    """
    from glyphfold.render.profiles import get_profile
    from glyphfold.render.shapes import get_shape

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
    if bits not in BIT_DEPTHS:
        msg = f"bits must be one of {BIT_DEPTHS}, got {bits!r}"
        raise InputError(msg)
    primary = resolve_font(font, preferred=shp.font)
    chain = fallback_chain(primary, cell_h=cell_h)
    # the marks are the glyphs the bundled pixel fonts promise to cover
    cont, nl = CONTINUATION_CODEPOINT, NEWLINE_CODEPOINT
    cols, rows = page_w // cell_w, page_h // cell_h
    if rows < 1 or cols < MIN_COLS:
        msg = (
            f"a {page_w}x{page_h} page holds {cols}x{rows} cells of {cell_w}x{cell_h} px; "
            f"it needs at least {MIN_COLS} columns and 1 row"
        )
        raise LayoutError(msg)
    multiple = max(1, int(getattr(prof, "page_multiple_px", 1)))
    img_w, img_h = _padded(cols * cell_w, rows * cell_h, multiple)
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
        cols=cols, rows=rows, tab_size=tab_size, reflow=reflow, continuation=cont, newline=nl
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
    )


def _padded(width: int, height: int, multiple: int) -> tuple[int, int]:
    """Image size with each side rounded up to ``multiple`` px (paper margin right/bottom).

    Providers that resize to a grid (Qwen-VL: multiples of 28 px) keep such an
    image as it is, so glyphs are never resampled.
    """
    return -(-width // multiple) * multiple, -(-height // multiple) * multiple


def page_size(setup: Setup, n_rows: int) -> tuple[int, int]:
    """Width and height in px of a page of ``n_rows`` text rows, as rendered and billed.

    The one place page geometry is computed: :func:`render_text` draws pages of
    this size and :func:`plan_text` prices them by it, so a plan costs what the
    render will.
    """
    return _padded(setup.config.cols * setup.cell_w, n_rows * setup.cell_h, setup.multiple)


@dataclass(frozen=True, slots=True)
class TextPlan:
    """How ``text`` would be paged, from the layout alone (no pixels drawn).

    ``page_starts[i]`` is the source offset of page i, ``page_tokens[i]`` its
    image-token price (identical to the rendered page's), ``max_png_bytes`` an upper
    bound of one encoded page.
    """

    page_starts: tuple[int, ...]
    page_tokens: tuple[int, ...]
    page_sizes: tuple[tuple[int, int], ...]
    max_png_bytes: int

    @property
    def image_tokens(self) -> int:
        """The price of every page together."""
        return sum(self.page_tokens)


def plan_text(
    text: str,
    *,
    profile: str | Profile = "anthropic",
    shape: str | Shape | None = None,
    font: str | os.PathLike[str] | None = None,
    cell: str | Sequence[int] | None = None,
    page: str | Sequence[int] | None = None,
    bits: int | None = None,
    reflow: bool = False,
    tab_size: int = 8,
) -> TextPlan:
    """Plan the pages of ``text`` as :func:`render_text` with the same options would.

    Laying out is a fraction of rendering: callers that try many candidate texts
    (the snapshot rung) plan them and render once.
    """
    if not isinstance(text, str):
        msg = f"text must be str, got {type(text).__name__}"
        raise InputError(msg)
    setup = resolve_setup(
        profile=profile,
        shape=shape,
        font=font,
        cell=cell,
        page=page,
        bits=bits,
        reflow=reflow,
        tab_size=tab_size,
    )
    starts: list[int] = []
    tokens: list[int] = []
    sizes: list[tuple[int, int]] = []
    for pl in Layout(to_codepoints(text), setup.config).pages():
        w, h = page_size(setup, pl.n_rows)
        starts.append(pl.span[0])
        tokens.append(setup.profile.cost(w, h))
        sizes.append((w, h))
    full_w, full_h = page_size(setup, setup.config.rows)
    # uncompressed size bounds the PNG (deflate never loses much on glyph pages)
    nbytes = full_h * (1 + row_bytes(full_w, setup.bits)) + 1024
    return TextPlan(tuple(starts), tuple(tokens), tuple(sizes), nbytes)


def atlas_for(setup: Setup) -> Atlas:
    """Return the cached atlas of a setup."""
    return get_atlas(setup.chain, cell_w=setup.cell_w, cell_h=setup.cell_h, bits=setup.bits)


def _count_missing(cps: np.ndarray, missing: set[int]) -> dict[int, int]:
    if not missing:
        return {}
    arr = np.fromiter(missing, dtype=np.uint32, count=len(missing))
    hit = cps[np.isin(cps, arr)]
    if not hit.size:
        return {}
    vals, counts = np.unique(hit, return_counts=True)
    return {int(v): int(c) for v, c in zip(vals, counts, strict=True)}


def _hints(missing: dict[int, int]) -> tuple[str, ...]:
    by_pkg: dict[str, list[int]] = {}
    for cp in sorted(missing):
        by_pkg.setdefault(install_hint(cp), []).append(cp)
    out = []
    for pkg, cps in sorted(by_pkg.items()):
        sample = ", ".join(f"U+{c:04X}" for c in cps[:5]) + (" ..." if len(cps) > 5 else "")
        out.append(f"no font has {sample}; install one, e.g. `apt-get install {pkg}`")
    return tuple(out)


def render_text(
    text: str,
    *,
    profile: str | Profile = "anthropic",
    shape: str | Shape | None = None,
    font: str | os.PathLike[str] | None = None,
    cell: str | Sequence[int] | None = None,
    page: str | Sequence[int] | None = None,
    bits: int | None = None,
    reflow: bool = False,
    tab_size: int = 8,
    level: int = DEFAULT_LEVEL,
    max_image_bytes: int | None = None,
    keep_pixels: bool = False,
) -> RenderResult:
    """Render ``text`` into PNG pages of glyphs sized for ``profile``.

    ``shape`` picks a named cell/font/bit-depth; ``font`` (path or bundled name),
    ``cell`` and ``page`` (``"WxH"`` or pairs, px) and ``bits`` (1, 2, 4, 8)
    override it. ``reflow`` folds line breaks into a newline glyph. Every page
    records the source span it shows and its image-token price. Pages larger
    than ``max_image_bytes`` (default: the profile's per-image limit) raise
    :class:`~glyphfold.errors.EncodeError`. ``keep_pixels`` keeps each page's
    uint8 pixels on ``Page.pixels``.
    """
    t0 = time.perf_counter()
    if not isinstance(text, str):
        msg = f"text must be str, got {type(text).__name__}"
        raise InputError(msg)
    setup = resolve_setup(
        profile=profile,
        shape=shape,
        font=font,
        cell=cell,
        page=page,
        bits=bits,
        reflow=reflow,
        tab_size=tab_size,
    )
    limit = setup.profile.max_image_bytes if max_image_bytes is None else max_image_bytes
    atlas = atlas_for(setup)
    cps = to_codepoints(text)
    lay = Layout(cps, setup.config)
    extra = (setup.config.continuation, setup.config.newline, *set(FOLD_CHARS.tolist()))
    atlas.prepare(cps, lay.cls, extra)
    page_w, page_h = page_size(setup, setup.config.rows)
    # 1 bpp (every profile's default): rows go straight into PNG scanlines
    direct = setup.bits == 1 and setup.cell_w <= MAX_BITS_CELL_W and not keep_pixels
    if direct:
        raw = np.empty((page_h, 1 + row_bytes(page_w, 1)), dtype=np.uint8)
    else:
        # padded to whole 64-bit words so low-bit packing works 8 pixels at a time;
        # the padding stays paper (deterministic bytes, ignored by PNG decoders)
        buf = np.full((page_h, -(-page_w // 8) * 8), 255, dtype=np.uint8)
    pages: list[Page] = []
    pixels = None
    for pl in lay.pages(reuse=not keep_pixels):
        used_h = pl.n_rows * setup.cell_h
        w, h = page_size(setup, pl.n_rows)
        if direct:
            blit_scanlines(pl, atlas, raw)
            if h > used_h:  # rows added to reach the provider's size multiple: paper
                raw[used_h:h, 0] = 0
                raw[used_h:h, 1:] = 0xFF
            png = png_from_scanlines(raw[:h], width=w, bits=1, level=level, max_bytes=limit)
        else:
            blit(pl, atlas, buf)
            buf[used_h:h] = 255
            png = encode_png(buf, bits=setup.bits, level=level, max_bytes=limit, height=h, width=w)
            if keep_pixels:
                pixels = buf[:h, :w].copy()
        pages.append(
            Page(
                png=png,
                width=w,
                height=h,
                source_span=pl.span,
                image_tokens=setup.profile.cost(w, h),
                rows=pl.n_rows,
                row_spans=tuple(pl.row_spans()),
                pixels=pixels if keep_pixels else None,
            )
        )
    missing = _count_missing(cps, atlas.missing)
    return RenderResult(
        pages=tuple(pages),
        chars=len(text),
        image_tokens=sum(p.image_tokens for p in pages),
        missing_glyphs=missing,
        elapsed_ms=(time.perf_counter() - t0) * 1000.0,
        dropped=lay.dropped,
        hints=_hints(missing),
        width=page_w,
        height=page_h,
        cell=(setup.cell_w, setup.cell_h),
        bits=setup.bits,
        profile=setup.profile.name,
        shape=setup.shape.name,
        fonts=tuple(str(p) for p in setup.chain),
    )


def describe(result: RenderResult) -> dict[str, Any]:
    """A JSON-ready summary of a render (what ``glyphfold render --json`` prints)."""
    first = result.pages[0] if result.pages else None
    return {
        "pages": len(result.pages),
        "chars": result.chars,
        "width": first.width if first else 0,
        "height": first.height if first else 0,
        "page_sizes": [[p.width, p.height] for p in result.pages],
        "cell": list(result.cell),
        "bits": result.bits,
        "profile": result.profile,
        "shape": result.shape,
        "image_tokens": result.image_tokens,
        "text_tokens_estimate": result.text_tokens_estimate,
        "chars_per_image_token": round(result.chars_per_image_token, 3),
        "missing_glyphs": {f"U+{cp:04X}": n for cp, n in sorted(result.missing_glyphs.items())},
        "dropped": result.dropped,
        "hints": list(result.hints),
        "png_bytes": sum(len(p.png) for p in result.pages),
        "elapsed_ms": round(result.elapsed_ms, 3),
        "fonts": list(result.fonts),
    }
