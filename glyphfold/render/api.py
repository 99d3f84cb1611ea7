"""``render_text`` and ``plan_text``: validate the options, then dispatch to the page loop."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from glyphfold.errors import InputError
from glyphfold.fonts.resolve import install_hint, pip_hint
from glyphfold.render import backend
from glyphfold.render.config import page_size, resolve_setup
from glyphfold.render.encode import DEFAULT_LEVEL, row_bytes
from glyphfold.render.ink import InkSpans, ink_levels
from glyphfold.render.layout import Layout, to_codepoints
from glyphfold.render.page import Page, prepare, render_pages

if TYPE_CHECKING:
    from glyphfold.render.profiles import Profile
    from glyphfold.render.shapes import Shape

__all__ = ["RenderResult", "TextPlan", "describe", "plan_text", "render_text"]


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
    margin: int = 0  # px of paper around the cells on every side

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
    margin: int | None = None,
    collapse: bool = False,
    ink: InkSpans = (),
) -> TextPlan:
    """Plan the pages of ``text`` as :func:`render_text` with the same options would.

    Laying out is a fraction of rendering: callers that try many candidate texts
    (the snapshot rung) plan them and render once. ``ink`` only matters for the
    bit depth it implies (light ink: 2 bpp), hence ``max_png_bytes``.
    """
    if not isinstance(text, str):
        msg = f"text must be str, got {type(text).__name__}"
        raise InputError(msg)
    bits = _ink_bits(ink, len(text), bits)[1]
    setup = resolve_setup(
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
    starts: list[int] = []
    tokens: list[int] = []
    sizes: list[tuple[int, int]] = []
    cps = to_codepoints(text)
    # laying out costs about an eighth of rendering: it counts so towards the kernels' budget
    kernels = backend.use_kernels(len(text) // 8)
    for pl in Layout(cps, setup.config, kernels=kernels).pages():
        w, h = page_size(setup, pl.n_rows)
        starts.append(pl.span[0])
        tokens.append(setup.profile.cost(w, h))
        sizes.append((w, h))
    full_w, full_h = page_size(setup, setup.config.rows)
    # uncompressed size bounds the PNG (deflate never loses much on glyph pages)
    nbytes = full_h * (1 + row_bytes(full_w, setup.bits)) + 1024
    return TextPlan(tuple(starts), tuple(tokens), tuple(sizes), nbytes)


def _ink_bits(
    ink: InkSpans, n_chars: int, bits: int | None
) -> tuple[tuple[np.ndarray | None, tuple[float, ...]], int | None]:
    """Ink levels of the spans, and the bit depth they need (light ink: at least 2)."""
    levels = ink_levels(ink, n_chars)
    if levels[0] is not None:
        if bits == 1:
            msg = "lighter ink needs gray levels: pass bits=2 or more, or leave bits unset"
            raise InputError(msg)
        bits = 2 if bits is None else bits
    return levels, bits


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
        extra = pip_hint(cps[0])
        alt = f" or `pip install '{extra}'`" if extra else ""
        out.append(f"no font has {sample}; install one, e.g. `apt-get install {pkg}`{alt}")
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
    margin: int | None = None,
    collapse: bool = False,
    ink: InkSpans = (),
) -> RenderResult:
    """Render ``text`` into PNG pages of glyphs sized for ``profile``.

    ``shape`` picks a named cell/font/bit-depth; ``font`` (path or bundled name),
    ``cell`` and ``page`` (``"WxH"`` or pairs, px) and ``bits`` (1, 2, 4, 8)
    override it. ``reflow`` folds line breaks into a newline glyph. Every page
    records the source span it shows and its image-token price. Pages larger
    than ``max_image_bytes`` (default: the profile's per-image limit) raise
    :class:`~glyphfold.errors.EncodeError`. ``keep_pixels`` keeps each page's
    uint8 pixels on ``Page.pixels``. ``margin`` is the paper around the text in
    px (default 8), taken from the page size. ``collapse`` folds whitespace that
    carries no meaning (runs of spaces, trailing blanks, blank-line runs; code
    indentation halved), see :mod:`glyphfold.render.collapse`; folded characters
    are counted under ``dropped["whitespace"]``. ``ink`` marks source spans
    ``(start, end, strength)`` to print in lighter ink (strength in (0, 1], e.g.
    tool output at 0.5); such pages are 2 bpp at least (see
    :mod:`glyphfold.render.ink`).
    """
    t0 = time.perf_counter()
    if not isinstance(text, str):
        msg = f"text must be str, got {type(text).__name__}"
        raise InputError(msg)
    (levels, strengths), bits = _ink_bits(ink, len(text), bits)
    setup = resolve_setup(
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
    limit = setup.profile.max_image_bytes if max_image_bytes is None else max_image_bytes
    atlas, lay = prepare(setup, text, with_src=levels is not None)
    pages = list(
        render_pages(
            setup,
            atlas,
            lay,
            level=level,
            max_bytes=limit,
            keep_pixels=keep_pixels,
            ink=None if levels is None else (levels, strengths),
        )
    )
    page_w, page_h = page_size(setup, setup.config.rows)
    missing = _count_missing(lay.cps, atlas.missing)
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
        margin=setup.margin,
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
        "margin": result.margin,
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
