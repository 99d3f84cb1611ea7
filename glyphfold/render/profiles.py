"""Provider image pricing and no-downscale page geometry.

A snapshot page is worth sending only if (a) the provider feeds it to the vision
encoder at its native resolution (a downscaled glyph page is unreadable whatever
the font) and (b) we know what it costs before sending. This module holds, per
provider profile, the exact image-token formula of a ``w x h`` image *including
the provider's own resize before pricing*, the largest page the provider does
not resize, the request limits, and the default page / glyph shape / bit depth.

Sources (provider documentation as read in November 2026; every number below
names its source; where a number is an assumption the comment says so):

- [A1] Anthropic, "Vision" guide, platform.claude.com/docs/en/build-with-claude/vision:
  ``tokens = width_px * height_px / 750``; an image whose long edge exceeds
  1568 px or that is over ~1,600 tokens is first scaled down preserving aspect
  ratio; "resize to no more than 1.15 megapixels (and within 1568 pixels in both
  dimensions)"; 100 images per request for 200k-context models, 600 for the
  others; 8000x8000 px maximum, 2000x2000 px when a request holds more than 20
  images; 32 MB request size limit on standard endpoints; 5 MB per image.
- [A2] Anthropic Claude Opus 4.7 release notes (April 2026) and measurements
  published with ``count_tokens``: the high-resolution tier reads images up to
  2576 px on the long edge, at most 4784 image tokens (~3.75 MP); same
  ``w*h/750`` price. The 4784-token cap is from third-party measurement, not
  from a formula in the docs: assumed.
- [O1] OpenAI, "Images and vision" guide, platform.openai.com/docs/guides/images-vision,
  "Calculating costs": patch models cover the image with 32x32 px patches; when
  the patch count exceeds the budget the image is shrunk by
  ``sqrt(32*32*budget / (w*h))`` then shrunk again so whole patches fit the
  width/height, and billed ``patches * multiplier``. Worked examples in the doc:
  1024x1024 -> 1024 patches; 1800x2400 -> 1452 patches. The "model sizing
  behaviour" section (gpt-5.4 and later) gives ``detail: high`` a budget of
  2,500 patches within 2048 px, and ``detail: original`` 10,000 patches within
  6000 px (the 10,000 figure is confirmed by openai/codex PR 19865; the 2048 /
  6000 px edge caps are as we read the docs: assumed). Multipliers are per
  model (gpt-4.1-mini 1.62, gpt-4.1-nano 2.46, o4-mini 1.72; community
  measurement in 2026 reports 1.2 for gpt-5-mini / gpt-5.4-mini); we assume 1.0
  for the default flagship model; price another with ``dataclasses.replace``.
- [O2] Same guide, tile models (gpt-4o, gpt-4.1, gpt-4.5): ``detail: high``
  scales to fit 2048x2048, then so that the shortest side is 768 px, counts
  512 px tiles, and bills ``85 + 170 * tiles`` (doc examples: 1024x1024 -> 765,
  2048x4096 -> 1105). Limits: 500 images and 50 MB per request; 20 MB per image
  (older wording of the same page: assumed still valid).
- [G1] Google, Gemini API "Understand and count tokens": Gemini 2.x images with
  both sides <= 384 px cost 258 tokens; larger ones are "cropped and scaled as
  needed into tiles of 768x768 pixels, each costing 258 tokens". We price
  ``ceil(w/768) * ceil(h/768) * 258``, the reading of the docs used by Google's
  own "Gemini by Example". Note: a different, undocumented crop-unit rule
  (unit = min(w, h)/1.5) has been reported; our default page (1536x1536) costs 4
  tiles under both readings. Vertex AI docs: images are scaled to fit 3072x3072;
  3,000 images per prompt; 7 MB per inline image; 20 MB per inline request.
- [G2] Google, Gemini API "Media resolution": Gemini 3 bills a flat per-image
  budget by ``media_resolution``: low 280, medium 560, high 1120 (the default
  for images), ultra_high 2240 tokens. Google does not publish the pixel size
  the budget corresponds to; we ASSUME ``high`` resolves detail up to a
  1536x1536 box (four 2.x tiles cost 1032 tokens, the same order as 1120).
- [Q1] Qwen2.5-VL (Alibaba): 14 px ViT patches merged 2x2, so one token per
  28x28 px; ``smart_resize`` rounds each side to a multiple of 28, then scales
  into [min_pixels, max_pixels]; plus 2 tokens (vision_start / vision_end).
  DashScope API defaults: min_pixels = 4*28*28, max_pixels = 1280*28*28
  (= 1,003,520; 16384*28*28 with ``vl_high_resolution_images``); 10 MB per
  image. No per-request image count or request byte limit is published: we
  assume 100 images and 20 MB.
- Context windows of the default models: claude-sonnet-4-5 200,000 [A1 models
  overview]; claude-opus-4-7 1,000,000 [A2]; gpt-5.4 272,000 standard input
  window (1M opt-in) [OpenAI gpt-5.4 model page]; gpt-4.1 1,047,576; Gemini 2.5 /
  3 Pro 1,048,576; qwen-vl-max 131,072.

Default shapes (defined in ``glyphfold.render.shapes``: ``dense`` 5x9 glyphs in
a 6x10 cell, ``regular`` 7x13 in 8x16, ``large`` 8x13 in 11x16), from the public
reading evidence: strong-vision readers read ~5x8
glyphs; Claude Opus-class readers were measured best on ~8x13 glyphs in an
~11x16 cell for tool output; weaker readers need ~9x16; a line pitch under 9 px
fails. Our own OCR check (``glyphfold legibility``, see benchmarks/README.md)
reads ``regular`` back at 0-0.7% CER on English, code and JSON. ``dense`` is
never a default: it is an opt-in after measuring with ``glyphfold legibility``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from glyphfold.checks import check_int
from glyphfold.errors import UnknownProfileError

__all__ = [
    "ALIASES",
    "PROFILES",
    "AreaPricing",
    "FlatPricing",
    "GeminiTilePricing",
    "NoImages",
    "PatchPricing",
    "Pricing",
    "Profile",
    "ProfileArg",
    "QwenPricing",
    "TilePricing",
    "cost",
    "get_profile",
    "profile_names",
]

_MiB = 1024 * 1024
_MB = 1000 * 1000
_VALID_BITS = (1, 2, 4, 8)


def _check_size(width: object, height: object) -> tuple[int, int]:
    """Return (width, height) as ints or raise ValueError naming the bad value."""
    return (
        check_int("image width", width, minimum=1, unit="px", error=ValueError),
        check_int("image height", height, minimum=1, unit="px", error=ValueError),
    )


def _scale(width: int, height: int, factor: float) -> tuple[int, int]:
    # Providers do not publish their rounding; floor (never above the cap) is the
    # conservative reading: it can only make us believe a page shrinks more.
    return max(1, math.floor(width * factor)), max(1, math.floor(height * factor))


class Pricing(Protocol):
    """How one provider resizes and prices an image (pure, integer pixels in)."""

    def resize(self, width: int, height: int) -> tuple[int, int]:
        """Return the size the provider feeds its vision encoder."""
        ...

    def tokens(self, width: int, height: int) -> int:
        """Return the image tokens billed for a ``width x height`` image."""
        ...


@dataclass(frozen=True)
class AreaPricing:
    """Anthropic: ``ceil(w*h / px_per_token)`` after fitting the long edge and area caps."""

    px_per_token: int = 750
    max_long_edge_px: int = 1568
    max_pixels: int = 1_150_000

    def __post_init__(self) -> None:
        for name in ("px_per_token", "max_long_edge_px", "max_pixels"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive, got {getattr(self, name)}"
                raise ValueError(msg)

    def resize(self, width: int, height: int) -> tuple[int, int]:
        long_edge = max(width, height)
        if long_edge <= self.max_long_edge_px and width * height <= self.max_pixels:
            return width, height
        factor = min(
            self.max_long_edge_px / long_edge, math.sqrt(self.max_pixels / (width * height))
        )
        return _scale(width, height, factor)

    def tokens(self, width: int, height: int) -> int:
        w, h = self.resize(width, height)
        # ceil: the docs give w*h/750 with no rounding rule; ceil never underestimates.
        return -(-(w * h) // self.px_per_token)


@dataclass(frozen=True)
class PatchPricing:
    """OpenAI patch models: ``ceil(patches * multiplier)`` of ``patch_px`` squares after resize."""

    patch_px: int = 32
    max_patches: int = 2500
    max_edge_px: int = 2048
    multiplier: float = 1.0

    def __post_init__(self) -> None:
        for name in ("patch_px", "max_patches", "max_edge_px"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive, got {getattr(self, name)}"
                raise ValueError(msg)
        if not self.multiplier > 0:
            msg = f"multiplier must be > 0, got {self.multiplier}"
            raise ValueError(msg)

    def _patches(self, width: int, height: int) -> int:
        p = self.patch_px
        return -(-width // p) * -(-height // p)

    def resize(self, width: int, height: int) -> tuple[int, int]:
        w, h = width, height
        if max(w, h) > self.max_edge_px:
            w, h = _scale(w, h, self.max_edge_px / max(w, h))
        if self._patches(w, h) <= self.max_patches:
            return w, h
        p = self.patch_px
        shrink = math.sqrt(p * p * self.max_patches / (w * h))
        # second shrink so that a whole number of patches spans the limiting side [O1]
        cols, rows = w * shrink / p, h * shrink / p
        shrink *= min(math.floor(cols) / cols, math.floor(rows) / rows)
        return _scale(w, h, shrink)

    def tokens(self, width: int, height: int) -> int:
        patches = self._patches(*self.resize(width, height))
        return math.ceil(patches * self.multiplier)


@dataclass(frozen=True)
class TilePricing:
    """OpenAI tile models: ``base + per_tile * tiles`` (``tile_px`` tiles) after fit and scale."""

    base_tokens: int = 85
    tile_tokens: int = 170
    tile_px: int = 512
    fit_px: int = 2048
    short_side_px: int = 768

    def __post_init__(self) -> None:
        for name in ("base_tokens", "tile_tokens", "tile_px", "fit_px", "short_side_px"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive, got {getattr(self, name)}"
                raise ValueError(msg)

    def resize(self, width: int, height: int) -> tuple[int, int]:
        w, h = width, height
        if max(w, h) > self.fit_px:
            w, h = _scale(w, h, self.fit_px / max(w, h))
        if min(w, h) > self.short_side_px:
            w, h = _scale(w, h, self.short_side_px / min(w, h))
        return w, h

    def tokens(self, width: int, height: int) -> int:
        w, h = self.resize(width, height)
        t = self.tile_px
        return self.base_tokens + self.tile_tokens * (-(-w // t)) * (-(-h // t))


@dataclass(frozen=True)
class GeminiTilePricing:
    """Gemini 2.x: 258 tokens up to 384x384, else 258 per 768 px tile after fitting 3072."""

    small_px: int = 384
    tile_px: int = 768
    tile_tokens: int = 258
    fit_px: int = 3072

    def __post_init__(self) -> None:
        for name in ("small_px", "tile_px", "tile_tokens", "fit_px"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive, got {getattr(self, name)}"
                raise ValueError(msg)

    def resize(self, width: int, height: int) -> tuple[int, int]:
        if max(width, height) <= self.fit_px:
            return width, height
        return _scale(width, height, self.fit_px / max(width, height))

    def tokens(self, width: int, height: int) -> int:
        w, h = self.resize(width, height)
        if w <= self.small_px and h <= self.small_px:
            return self.tile_tokens
        t = self.tile_px
        return self.tile_tokens * (-(-w // t)) * (-(-h // t))


@dataclass(frozen=True)
class FlatPricing:
    """Gemini 3: a flat per-image budget; the image is fitted into an (assumed) box."""

    flat_tokens: int = 1120
    fit_px: int = 1536

    def __post_init__(self) -> None:
        for name in ("flat_tokens", "fit_px"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive, got {getattr(self, name)}"
                raise ValueError(msg)

    def resize(self, width: int, height: int) -> tuple[int, int]:
        if max(width, height) <= self.fit_px:
            return width, height
        return _scale(width, height, self.fit_px / max(width, height))

    def tokens(self, width: int, height: int) -> int:
        return self.flat_tokens


@dataclass(frozen=True)
class QwenPricing:
    """Qwen2.5-VL: ``smart_resize`` to multiples of 28, one token per 28x28, plus 2 markers."""

    unit_px: int = 28
    min_pixels: int = 4 * 28 * 28
    max_pixels: int = 1280 * 28 * 28
    extra_tokens: int = 2

    def __post_init__(self) -> None:
        for name in ("unit_px", "min_pixels", "max_pixels"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive, got {getattr(self, name)}"
                raise ValueError(msg)
        if self.min_pixels > self.max_pixels:
            msg = f"min_pixels {self.min_pixels} exceeds max_pixels {self.max_pixels}"
            raise ValueError(msg)
        if self.extra_tokens < 0:
            msg = f"extra_tokens must be >= 0, got {self.extra_tokens}"
            raise ValueError(msg)

    def resize(self, width: int, height: int) -> tuple[int, int]:
        f = self.unit_px
        # Python's round() (banker's rounding) on purpose: it is what smart_resize uses.
        w = max(f, round(width / f) * f)
        h = max(f, round(height / f) * f)
        if w * h > self.max_pixels:
            beta = math.sqrt(width * height / self.max_pixels)
            w = max(f, math.floor(width / beta / f) * f)
            h = max(f, math.floor(height / beta / f) * f)
        elif w * h < self.min_pixels:
            beta = math.sqrt(self.min_pixels / (width * height))
            w = math.ceil(width * beta / f) * f
            h = math.ceil(height * beta / f) * f
        return w, h

    def tokens(self, width: int, height: int) -> int:
        w, h = self.resize(width, height)
        return (w // self.unit_px) * (h // self.unit_px) + self.extra_tokens


@dataclass(frozen=True)
class NoImages:
    """A text-only model: any image is an error, never a silent zero."""

    def resize(self, width: int, height: int) -> tuple[int, int]:
        msg = "this profile accepts no images (vision=False); check profile.vision first"
        raise ValueError(msg)

    def tokens(self, width: int, height: int) -> int:
        msg = "this profile accepts no images (vision=False); check profile.vision first"
        raise ValueError(msg)


@dataclass(frozen=True)
class Profile:
    """One provider/model family: image pricing, page geometry, limits, render defaults.

    ``max_page_width x max_page_height`` is the largest box inside which every
    page (whose sides are multiples of ``page_multiple_px``) reaches the vision
    encoder without resizing. ``max_image_bytes`` is the limit on the raw PNG
    file (already converted from base64 characters where a provider counts those).
    """

    name: str
    provider: str
    vision: bool
    model: str
    pricing: Pricing
    max_page_width: int
    max_page_height: int
    max_image_bytes: int
    max_images_per_request: int
    max_request_bytes: int
    default_page: tuple[int, int]
    default_shape: str
    default_bits: int
    context_window: int | None
    page_multiple_px: int = 1
    shape_reason: str = ""
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            msg = f"profile name must be a non-empty string, got {self.name!r}"
            raise ValueError(msg)
        if self.default_bits not in _VALID_BITS:
            msg = f"default_bits must be one of {_VALID_BITS}, got {self.default_bits}"
            raise ValueError(msg)
        if self.context_window is not None and self.context_window <= 0:
            msg = f"context_window must be positive or None, got {self.context_window}"
            raise ValueError(msg)
        if self.page_multiple_px <= 0:
            msg = f"page_multiple_px must be positive, got {self.page_multiple_px}"
            raise ValueError(msg)
        if not self.vision:
            if not isinstance(self.pricing, NoImages) or self.max_images_per_request != 0:
                msg = (
                    f"profile {self.name!r} has vision=False: use pricing=NoImages() and "
                    f"max_images_per_request=0, got {self.pricing!r}, "
                    f"{self.max_images_per_request}"
                )
                raise ValueError(msg)
            return
        for label in (
            "max_page_width",
            "max_page_height",
            "max_image_bytes",
            "max_images_per_request",
            "max_request_bytes",
        ):
            value = getattr(self, label)
            if value <= 0:
                msg = f"profile {self.name!r}: {label} must be positive, got {value}"
                raise ValueError(msg)
        width, height = self.default_page
        if not (0 < width <= self.max_page_width and 0 < height <= self.max_page_height):
            msg = (
                f"profile {self.name!r}: default_page {width}x{height} must lie inside the "
                f"no-downscale box {self.max_page_width}x{self.max_page_height}"
            )
            raise ValueError(msg)
        if not self.fits(width, height):
            msg = (
                f"profile {self.name!r}: default_page {width}x{height} would be resized to "
                f"{self.pricing.resize(width, height)}; pick a page the provider keeps as is"
            )
            raise ValueError(msg)

    def cost(self, width: int, height: int) -> int:
        """Return the image tokens billed for one ``width x height`` px image."""
        width, height = _check_size(width, height)
        return self.pricing.tokens(width, height)

    def resized(self, width: int, height: int) -> tuple[int, int]:
        """Return the size the provider feeds its encoder for a ``width x height`` image."""
        width, height = _check_size(width, height)
        return self.pricing.resize(width, height)

    def fits(self, width: int, height: int) -> bool:
        """Return True when the provider keeps a ``width x height`` image at native size."""
        return self.resized(width, height) == (width, height)

    @property
    def page_tokens(self) -> int:
        """Image tokens of one full default page (0 for a text-only profile)."""
        return self.cost(*self.default_page) if self.vision else 0


_ANTHROPIC_STANDARD = AreaPricing(px_per_token=750, max_long_edge_px=1568, max_pixels=1_150_000)
# 4784 tokens * 750 px/token = 3,588,000 px [A2]
_ANTHROPIC_HIRES = AreaPricing(px_per_token=750, max_long_edge_px=2576, max_pixels=4784 * 750)
# The 5 MB limit is checked on the base64 payload, so the PNG itself gets 3/4 of it.
_ANTHROPIC_IMAGE_BYTES = 5 * _MiB * 3 // 4

_REGULAR_OPUS = (
    "regular (7x13 glyphs, 8x16 cell): close to the ~8x13 glyphs Claude Opus-class "
    "readers were measured best on, in a tighter cell than the measured 11x16 ('large'), "
    "so 1.375x the characters per image token; OCR reads it back at <= 0.8% CER on "
    "prose, code and JSON. Pick 'large' for id-heavy tool output"
)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="anthropic",
            provider="anthropic",
            vision=True,
            model="claude-sonnet-4-5",
            pricing=_ANTHROPIC_STANDARD,
            # 1568 x 728 = 1,141,504 px <= 1.15 MP, long edge 1568 [A1]
            max_page_width=1568,
            max_page_height=728,
            max_image_bytes=_ANTHROPIC_IMAGE_BYTES,
            max_images_per_request=100,
            max_request_bytes=32 * _MB,
            default_page=(1568, 728),
            default_shape="regular",
            default_bits=1,
            context_window=200_000,
            shape_reason=_REGULAR_OPUS,
            notes="standard tier (every Claude model before Opus 4.7): 1523 tokens per page",
        ),
        Profile(
            name="anthropic-hires",
            provider="anthropic",
            vision=True,
            model="claude-opus-4-7",
            pricing=_ANTHROPIC_HIRES,
            # A request holding more than 20 images caps every image at 2000x2000 (it is
            # rejected, not resized) [A1], and a snapshot often has more than 20 pages,
            # so the box is the largest page legal in a request of any size:
            # 2000 x 1792 = 3,584,000 px <= 3,588,000 px [A2]. With at most 20 images,
            # 2576 x 1392 (3,585,792 px) is also kept at native size.
            max_page_width=2000,
            max_page_height=1792,
            max_image_bytes=_ANTHROPIC_IMAGE_BYTES,
            max_images_per_request=600,
            max_request_bytes=32 * _MB,
            default_page=(2000, 1792),
            default_shape="regular",
            default_bits=1,
            context_window=1_000_000,
            shape_reason=_REGULAR_OPUS + "; the extra pixels buy bigger pages, not smaller glyphs",
            notes="high-resolution tier (Opus 4.7 and later): 4779 tokens per default page",
        ),
        Profile(
            name="openai",
            provider="openai",
            vision=True,
            model="gpt-5.4",
            pricing=PatchPricing(patch_px=32, max_patches=2500, max_edge_px=2048),
            # 1600 / 32 = 50 patches a side, 2500 patches = the detail:high budget [O1]
            max_page_width=1600,
            max_page_height=1600,
            max_image_bytes=20 * _MB,
            max_images_per_request=500,
            max_request_bytes=50 * _MB,
            default_page=(1600, 1600),
            default_shape="regular",
            default_bits=1,
            context_window=272_000,
            shape_reason=(
                "regular: GPT-5.x patch models read small print well, but ~5x8 glyphs "
                "(dense) are proven only for the strongest readers; regular costs 1.6x "
                "the tokens of dense per character and is the safe default"
            ),
            notes="32-px patch models, detail: high (2500 patches)",
        ),
        Profile(
            name="openai-original",
            provider="openai",
            vision=True,
            model="gpt-5.4",
            pricing=PatchPricing(patch_px=32, max_patches=10_000, max_edge_px=6000),
            # 3200 / 32 = 100 patches a side = the 10,000-patch detail:original budget [O1]
            max_page_width=3200,
            max_page_height=3200,
            max_image_bytes=20 * _MB,
            max_images_per_request=500,
            max_request_bytes=50 * _MB,
            default_page=(3200, 3200),
            default_shape="regular",
            default_bits=1,
            context_window=272_000,
            shape_reason="regular: same reader as 'openai'; detail: original only adds pixels",
            notes="32-px patch models, detail: original (10,000 patches)",
        ),
        Profile(
            name="openai-tile",
            provider="openai",
            vision=True,
            model="gpt-4.1",
            pricing=TilePricing(),
            # short side <= 768 and long side <= 2048: neither resize step applies [O2]
            max_page_width=2048,
            max_page_height=768,
            max_image_bytes=20 * _MB,
            max_images_per_request=500,
            max_request_bytes=50 * _MB,
            default_page=(2048, 768),
            default_shape="large",
            default_bits=1,
            context_window=1_047_576,
            shape_reason=(
                "large (8x13 glyphs in an 11x16 cell): tile models see 512 px tiles of an "
                "image cut to a 768 px short side and are the weaker readers that need "
                "~9x16; large is the widest bundled cell (4 px gutter), 16 px pitch"
            ),
            notes="512-px tile models, detail: high; 1445 tokens per default page",
        ),
        Profile(
            name="gemini-2",
            provider="google",
            vision=True,
            model="gemini-2.5-flash",
            pricing=GeminiTilePricing(),
            max_page_width=3072,
            max_page_height=3072,
            max_image_bytes=7 * _MB,
            max_images_per_request=3000,
            max_request_bytes=20 * _MB,
            # 2 x 2 tiles of 768 = 1032 tokens, the same under either tiling reading [G1]
            default_page=(1536, 1536),
            default_shape="large",
            default_bits=1,
            context_window=1_048_576,
            shape_reason=(
                "large (8x13 glyphs in an 11x16 cell): Gemini 2.x reads small print less "
                "reliably than Claude or GPT-5 (a weaker reader, ~9x16 needed); its tiles "
                "are cheap (258 tokens per 768x768), so the wide cell costs little"
            ),
            notes="Gemini 2.x tile pricing",
        ),
        Profile(
            name="gemini-3",
            provider="google",
            vision=True,
            model="gemini-3-pro",
            pricing=FlatPricing(flat_tokens=1120, fit_px=1536),
            max_page_width=1536,
            max_page_height=1536,
            max_image_bytes=7 * _MB,
            max_images_per_request=3000,
            max_request_bytes=20 * _MB,
            default_page=(1536, 1536),
            default_shape="regular",
            default_bits=1,
            context_window=1_048_576,
            shape_reason=(
                "regular: a flat budget rewards big pages, but the pixel size behind "
                "media_resolution=high is unpublished (assumed 1536 box); regular keeps a "
                "margin if the encoder sees fewer pixels than assumed"
            ),
            notes="Gemini 3 flat budget, media_resolution=high (1120 tokens per image)",
        ),
        Profile(
            name="qwen-vl",
            provider="alibaba",
            vision=True,
            model="qwen-vl-max",
            pricing=QwenPricing(),
            # 56 x 22 units of 28 px = 1232 tokens; 1568 x 616 = 965,888 px <= 1,003,520 [Q1]
            max_page_width=1568,
            max_page_height=616,
            max_image_bytes=10 * _MB,
            max_images_per_request=100,
            max_request_bytes=20 * _MB,
            # whole 11x16 'large' cells AND multiples of 28 px: 140 x 35 cells,
            # 55 x 20 units = 1100 + 2 tokens (1540 = 5 * lcm(11, 28), 560 = 5 * lcm(16, 28))
            default_page=(1540, 560),
            default_shape="large",
            default_bits=1,
            context_window=131_072,
            page_multiple_px=28,
            shape_reason=(
                "large (8x13 glyphs in an 11x16 cell): open-weight VL models are the "
                "weaker readers (~9x16 needed); one 28x28 token spans under 3 large cells"
            ),
            notes="sides must be multiples of 28 px or smart_resize resamples the page",
        ),
        Profile(
            name="text-only",
            provider="none",
            vision=False,
            model="",
            pricing=NoImages(),
            max_page_width=0,
            max_page_height=0,
            max_image_bytes=0,
            max_images_per_request=0,
            max_request_bytes=0,
            default_page=(0, 0),
            default_shape="regular",
            default_bits=1,
            context_window=None,
            shape_reason="no images are sent; snapshots are unavailable on this profile",
            notes="a model without vision: the ladder must skip the snapshot rung",
        ),
    )
}

DEFAULT_PROFILE = "anthropic"

# other names a profile answers to. "gemini" is the name of the wire format and of the
# extra (glyphfold[gemini]); it means the current Gemini family, Gemini 3, whose flat
# 1,120-token image price is also the higher of the two Gemini prices for a default
# page (Gemini 2.x tiles bill 1,032), so an unqualified "gemini" never underprices.
ALIASES: dict[str, str] = {"gemini": "gemini-3"}


# what every ``profile=`` parameter takes: a registered name or a Profile object
ProfileArg: TypeAlias = str | Profile


def profile_names() -> list[str]:
    """Return the names of every registered profile, in registry order."""
    return list(PROFILES)


def get_profile(name: str | Profile) -> Profile:
    """Return the profile called ``name`` (a Profile is returned as is).

    The one place a profile argument is resolved, for the renderer, the token
    estimate and the ladder alike.
    """
    if isinstance(name, Profile):
        return name
    if not isinstance(name, str):
        msg = f"profile must be a profile name or a Profile, got {type(name).__name__}"
        raise UnknownProfileError(msg)
    try:
        return PROFILES[ALIASES.get(name, name)]
    except KeyError:
        aliases = ", ".join(f"{a} (= {p})" for a, p in ALIASES.items())
        msg = f"unknown profile {name!r}; valid profiles: {', '.join(PROFILES)}; aliases: {aliases}"
        raise UnknownProfileError(msg) from None


def cost(profile: str | Profile, width: int, height: int) -> int:
    """Return the image tokens ``profile`` bills for one ``width x height`` px image."""
    return get_profile(profile).cost(width, height)
