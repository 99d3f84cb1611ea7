"""``render_text`` and ``plan_text``: validate the options, then dispatch to the page loop."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from glyphfold.checks import check_int
from glyphfold.errors import InputError
from glyphfold.fonts.resolve import install_hint, pip_hint
from glyphfold.render import backend
from glyphfold.render.config import Setup, page_size, resolve_setup
from glyphfold.render.encode import DEFAULT_LEVEL, row_bytes
from glyphfold.render.ink import InkSpans, ink_levels
from glyphfold.render.layout import Layout, TextFeed
from glyphfold.render.options import RenderOptions, options_of
from glyphfold.render.page import Page, prepare, render_pages

if TYPE_CHECKING:
    from glyphfold.render.profiles import Profile
    from glyphfold.render.shapes import Shape

__all__ = [
    "PageStream",
    "RenderResult",
    "TextPlan",
    "describe",
    "iter_pages",
    "plan_text",
    "render_text",
]


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
    # each page's (width, height) and the PNG bytes of all: kept also when the pages
    # were streamed (``iter_pages``) and ``pages`` is empty
    page_sizes: tuple[tuple[int, int], ...] = ()
    png_bytes: int = 0

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
    # False when ``max_pages`` stopped the plan: the text has more pages than listed
    complete: bool = True

    @property
    def image_tokens(self) -> int:
        """The price of every page together."""
        return sum(self.page_tokens)


def plan_text(
    text: str,
    *,
    options: RenderOptions | None = None,
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
    max_pages: int | None = None,
    max_tokens: int | None = None,
) -> TextPlan:
    """Plan the pages of ``text`` as :func:`render_text` with the same options would.

    ``max_pages``: plan no further than that many pages (``complete`` says whether the
    text has more): a caller that only needs to know a text overflows a page limit
    lays out the limit, not the text. ``max_tokens`` likewise stops before the page
    that would take the pages' price over it: a caller comparing prices lays out no
    more than the price it must beat.

    Laying out is a fraction of rendering: callers that try many candidate texts
    (the snapshot rung) plan them and render once. ``ink`` only matters for the
    bit depth it implies (light ink: 2 bpp), hence ``max_png_bytes``. ``options``
    gives the options as one :class:`RenderOptions` (keywords override it).
    """
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
        ink=ink,
    )
    if not isinstance(text, str):
        msg = f"text must be str, got {type(text).__name__}"
        raise InputError(msg)
    if max_pages is not None:
        check_int("max_pages (or None)", max_pages, minimum=1, error=InputError)
    if max_tokens is not None:
        check_int("max_tokens (or None)", max_tokens, minimum=0, error=InputError)
    o = dataclasses.replace(o, bits=_ink_bits(o.ink, len(text), o.bits)[1])
    return plan_resolved(text, resolve_setup(o), max_pages=max_pages, max_tokens=max_tokens)


def plan_resolved(
    text: str, setup: Setup, *, max_pages: int | None = None, max_tokens: int | None = None
) -> TextPlan:
    """:func:`plan_text` with its options already resolved (``config.resolve_setup`` of
    them, the bit depth their ink implies included): a caller that plans many texts with
    the same options (the snapshot planner, dozens of candidate texts per compaction)
    resolves them once. No argument is checked again here."""
    starts: list[int] = []
    tokens: list[int] = []
    sizes: list[tuple[int, int]] = []
    # laying out costs about an eighth of rendering: it counts so towards the kernels' budget
    kernels = backend.use_kernels(len(text) // 8)
    complete = True
    total = 0
    for pl in Layout(text, setup.config, kernels=kernels).pages():
        if max_pages is not None and len(starts) >= max_pages:
            complete = False
            break
        w, h = page_size(setup, pl.n_rows)
        cost = setup.profile.cost(w, h)
        if max_tokens is not None and total + cost > max_tokens:
            complete = False
            break
        total += cost
        starts.append(pl.span[0])
        tokens.append(cost)
        sizes.append((w, h))
    return TextPlan(tuple(starts), tuple(tokens), tuple(sizes), max_png_bytes(setup), complete)


def max_png_bytes(setup: Setup) -> int:
    """A bound of one encoded page of ``setup`` (a :class:`TextPlan`'s ``max_png_bytes``):
    the uncompressed size of a full page bounds its PNG (deflate never loses much on
    glyph pages)."""
    full_w, full_h = page_size(setup, setup.config.rows)
    return full_h * (1 + row_bytes(full_w, setup.bits)) + 1024


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


class PageStream:
    """The pages of one render, produced one at a time (:func:`iter_pages`).

    Iterate it once: each page is drawn and encoded when asked for, so memory is
    bounded by a page and a layout chunk, not by the text. While it runs,
    ``pages_done``, ``chars_done`` and :attr:`fraction` say how far it got; once
    exhausted, :meth:`result` gives the :class:`RenderResult` (its ``pages`` are
    those the stream kept: none unless ``keep=True``).
    """

    def __init__(self, text: str | TextFeed, options: RenderOptions, *, keep: bool = False) -> None:
        if not isinstance(text, (str, TextFeed)):
            msg = f"text must be str (or a TextFeed), got {type(text).__name__}"
            raise InputError(msg)
        if isinstance(text, TextFeed) and options.ink:
            msg = "ink spans need the whole text: pass a str, not a TextFeed"
            raise InputError(msg)
        self._t0 = time.perf_counter()
        n = len(text) if isinstance(text, str) else text.size_hint
        (levels, strengths), bits = _ink_bits(options.ink, n, options.bits)
        self.options = dataclasses.replace(options, bits=bits)
        self.setup = setup = resolve_setup(self.options)
        limit = options.max_image_bytes
        self._limit = setup.profile.max_image_bytes if limit is None else limit
        self._chars = n
        self._missing: dict[int, int] = {}
        self.atlas, self.layout = prepare(
            setup, text, with_src=levels is not None, missing=self._missing
        )
        self._ink = None if levels is None else (levels, strengths)
        self._keep = keep
        self.kept: list[Page] = []
        self.pages_done = 0
        self.image_tokens = 0
        self.png_bytes = 0
        self.page_sizes: list[tuple[int, int]] = []
        self._done = False
        self._started = False

    @property
    def chars(self) -> int:
        """Characters of the text (of a feed: its size hint until the last page)."""
        return self.layout.n_source if self._done else self._chars

    @property
    def chars_done(self) -> int:
        """Source characters on the pages produced so far."""
        return self.layout.laid_out

    @property
    def fraction(self) -> float:
        """The share of the text on the pages produced so far (0..1)."""
        if self._done:
            return 1.0
        return 0.0 if not self.chars else min(1.0, self.layout.laid_out / self.chars)

    def __iter__(self) -> Iterator[Page]:
        if self._started:
            msg = "a PageStream is iterated once; call iter_pages again for another pass"
            raise InputError(msg)
        self._started = True
        o = self.options
        for page in render_pages(
            self.setup,
            self.atlas,
            self.layout,
            level=o.level,
            max_bytes=self._limit,
            keep_pixels=o.keep_pixels,
            ink=self._ink,
            threads=self._threads(),
        ):
            self.pages_done += 1
            self.image_tokens += page.image_tokens
            self.png_bytes += len(page.png)
            self.page_sizes.append((page.width, page.height))
            if self._keep:
                self.kept.append(page)
            yield page
        self._done = True

    def _threads(self) -> int:
        """Worker threads for this render (``RenderOptions.threads``; see there)."""
        n = self.options.threads
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
            msg = f"threads must be an int in 1..64, got {n!r}"
            raise InputError(msg)
        return n

    def result(self) -> RenderResult:
        """What the render produced and cost (after the last page)."""
        if not self._done:
            msg = "the stream has pages left: iterate it to the end before result()"
            raise InputError(msg)
        setup = self.setup
        page_w, page_h = page_size(setup, setup.config.rows)
        missing = dict(sorted(self._missing.items()))
        return RenderResult(
            pages=tuple(self.kept),
            chars=self.chars,
            image_tokens=self.image_tokens,
            missing_glyphs=missing,
            elapsed_ms=(time.perf_counter() - self._t0) * 1000.0,
            dropped=self.layout.dropped,
            hints=_hints(missing),
            width=page_w,
            height=page_h,
            cell=(setup.cell_w, setup.cell_h),
            bits=setup.bits,
            profile=setup.profile.name,
            shape=setup.shape.name,
            fonts=tuple(str(p) for p in setup.chain),
            margin=setup.margin,
            page_sizes=tuple(self.page_sizes),
            png_bytes=self.png_bytes,
        )


def iter_pages(
    text: str | TextFeed,
    options: RenderOptions | None = None,
    /,
    **kwargs: Any,
) -> PageStream:
    """Render ``text`` page by page: a :class:`PageStream` of :class:`Page`.

    Takes the options of :func:`render_text` (as ``options`` and/or keywords). The
    pages come out in order, each drawn and encoded when the loop asks for it;
    nothing holds the earlier ones, and the per-character layout arrays are built
    per chunk (``glyphfold.render.layout.CHUNK_CHARS``), so a render of any length
    runs in the memory of a page. ``text`` may be a
    :class:`~glyphfold.render.layout.TextFeed` (the text in pieces, e.g. a file read
    block by block): then not even the text is held. ``stream.result()`` after the
    loop gives the totals (dropped characters, missing glyphs, image tokens).
    """
    return PageStream(text, options_of(options, **kwargs))


def render_text(
    text: str,
    *,
    options: RenderOptions | None = None,
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
    threads: int = 1,
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
    :mod:`glyphfold.render.ink`). ``options`` gives them all as one
    :class:`RenderOptions` (keywords override it). ``threads`` draw and encode
    pages in parallel while the layout runs ahead (default 1).
    Every page is kept in the result: :func:`iter_pages` renders in the memory of
    one page.
    """
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
        level=level,
        max_image_bytes=max_image_bytes,
        keep_pixels=keep_pixels,
        margin=margin,
        collapse=collapse,
        ink=ink,
        threads=threads,
    )
    stream = PageStream(text, o, keep=True)
    for _ in stream:
        pass
    return stream.result()


def describe(result: RenderResult) -> dict[str, Any]:
    """A JSON-ready summary of a render (what ``glyphfold render --json`` prints)."""
    sizes = result.page_sizes or tuple((p.width, p.height) for p in result.pages)
    first = sizes[0] if sizes else (0, 0)
    return {
        "pages": len(sizes),
        "chars": result.chars,
        "width": first[0],
        "height": first[1],
        "page_sizes": [list(s) for s in sizes],
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
        "png_bytes": result.png_bytes or sum(len(p.png) for p in result.pages),
        "elapsed_ms": round(result.elapsed_ms, 3),
        "fonts": list(result.fonts),
    }
