"""Render text, read the pages back with OCR engines, score the reading against targets."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glyphfold.legibility.corpus import CORPUS_PARTS, load_corpus
from glyphfold.legibility.metrics import (
    alignment_confusions,
    cer,
    count_text_tokens,
    identifier_matches,
)

if TYPE_CHECKING:
    import numpy as np

# shape -> (max CER on Latin-script parts, max CER on CJK parts, min identifier rate)
TARGETS: dict[str, tuple[float, float, float | None]] = {
    "regular": (0.01, 0.03, 0.95),
    "dense": (0.03, 0.03, None),
}


@dataclass(frozen=True)
class PartResult:
    """How well one engine read one rendered corpus part."""

    part: str
    engine: str
    chars: int
    pages: int
    image_tokens: int
    cer: float | None
    cer_spaced: float | None
    identifiers_matched: int
    identifiers_total: int
    confusions: tuple[tuple[str, str, int], ...]
    missing_glyphs: int
    ocr_ms: float
    skipped: str = ""

    @property
    def identifier_rate(self) -> float | None:
        """Matched / total identifiers, None when the part has none."""
        if self.identifiers_total == 0 or self.cer is None:
            return None
        return self.identifiers_matched / self.identifiers_total


@dataclass(frozen=True)
class ShapeReport:
    """The corpus read back for one (profile, shape).

    Density numbers come from rendering the whole corpus as one text (parts
    separated by a blank line), as a snapshot would: ``image_tokens`` keeps the
    line structure, ``image_tokens_reflow`` folds newlines (``reflow=True``).
    """

    profile: str
    shape: str
    results: tuple[PartResult, ...]
    chars: int
    pages: int
    image_tokens: int
    image_tokens_reflow: int
    text_tokens: dict[str, int | None]
    render_ms: float
    failures: tuple[str, ...] = field(default=())

    @property
    def chars_per_image_token(self) -> float:
        """Source characters carried per image token (line structure kept)."""
        return self.chars / self.image_tokens if self.image_tokens else 0.0

    @property
    def chars_per_image_token_reflow(self) -> float:
        """Source characters carried per image token in reflow mode."""
        return self.chars / self.image_tokens_reflow if self.image_tokens_reflow else 0.0

    def compression(self) -> dict[str, float | None]:
        """Text tokens per image token (above 1: the pages are cheaper than the text)."""
        out: dict[str, float | None] = {}
        for name, tokens in self.text_tokens.items():
            out[name] = tokens / self.image_tokens if tokens and self.image_tokens else None
        return out


def _decode_png(png: bytes) -> np.ndarray:
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        return np.asarray(img.convert("L"))


def _pitch_of(shape: str | None) -> int | None:
    if shape is None:
        return None
    with contextlib.suppress(ImportError, LookupError, ValueError):
        from glyphfold.render.shapes import get_shape

        return int(get_shape(shape).line_pitch)
    return None


def measure_text(
    text: str,
    *,
    engines: Sequence[Any],
    part: str = "text",
    lang: str | None = "eng",
    profile: str = "anthropic",
    shape: str | None = None,
    pitch_px: int | None = None,
    render_options: dict[str, Any] | None = None,
) -> tuple[list[PartResult], Any]:
    """Render ``text`` with glyphfold, OCR every page with each engine, score it.

    ``lang`` is the tesseract language of the text (None: tesseract is not
    asked, as for CJK). Returns the per-engine results and the render result.
    """
    from glyphfold.render.api import render_text
    from glyphfold.render.profiles import get_profile

    rendered = render_text(text, profile=profile, shape=shape, **(render_options or {}))
    pages = [_decode_png(page.png) for page in rendered.pages]
    if pitch_px is None:
        pitch_px = _pitch_of(shape or get_profile(profile).default_shape)
    missing = int(sum(rendered.missing_glyphs.values()))
    results = []
    for engine in engines:
        skipped = ""
        if lang is None and engine.name == "tesseract":
            skipped = "no tesseract model for this script"
        if skipped:
            results.append(
                PartResult(part, engine.name, len(text), len(pages), rendered.image_tokens,
                           None, None, 0, 0, (), missing, 0.0, skipped)
            )  # fmt: skip
            continue
        start = time.perf_counter()
        # glyphfold pages have no margin: the cell grid starts at row 0
        read = "\n".join(
            engine.read(page, pitch_px=pitch_px, offset_px=0, lang=lang) for page in pages
        )
        ocr_ms = (time.perf_counter() - start) * 1000
        matched, total = identifier_matches(text, read)
        confusions = alignment_confusions(text, read).most_common(12)
        results.append(
            PartResult(
                part=part,
                engine=engine.name,
                chars=len(text),
                pages=len(pages),
                image_tokens=rendered.image_tokens,
                cer=cer(text, read),
                cer_spaced=cer(text, read, keep_spaces=True),
                identifiers_matched=matched,
                identifiers_total=total,
                confusions=tuple((a, b, n) for (a, b), n in confusions),
                missing_glyphs=missing,
                ocr_ms=ocr_ms,
            )
        )
    return results, rendered


def best_results(results: Iterable[PartResult]) -> dict[str, PartResult]:
    """Return, per part, the result of the engine that read it best (lowest CER).

    Each OCR engine has blind spots that are not the page's fault (rapidocr's
    Chinese model has no ``ñ``, ``ç`` or ``ê`` in its alphabet; tesseract reads
    CJK poorly), so a part counts as legible when some engine reads it back.
    """
    best: dict[str, PartResult] = {}
    for r in results:
        if r.cer is None:
            continue
        if r.part not in best or r.cer < best[r.part].cer:  # type: ignore[operator]
            best[r.part] = r
    return best


def check_targets(shape: str, results: Iterable[PartResult]) -> list[str]:
    """Return one message per missed ``TARGETS`` entry, judged on ``best_results``."""
    target = TARGETS.get(shape)
    if target is None:
        return []
    latin_max, cjk_max, ident_min = target
    failures = []
    for name, r in best_results(results).items():
        part = CORPUS_PARTS.get(name)
        limit = cjk_max if part is not None and part.cjk else latin_max
        if r.cer is not None and r.cer > limit:
            failures.append(f"{shape}/{name}: CER {r.cer:.2%} ({r.engine}) > {limit:.0%}")
        rate = r.identifier_rate
        if ident_min is not None and rate is not None and rate < ident_min:
            failures.append(
                f"{shape}/{name}: identifiers {rate:.0%} ({r.engine}) < {ident_min:.0%}"
            )
    return failures


def measure(
    *,
    profile: str = "anthropic",
    shape: str | None = None,
    engines: Sequence[Any],
    parts: Iterable[str] | None = None,
) -> ShapeReport:
    """Render and read back every corpus part for one (profile, shape)."""
    from glyphfold.render.api import render_text
    from glyphfold.render.profiles import get_profile

    corpus = load_corpus(parts)
    results: list[PartResult] = []
    for name, text in corpus.items():
        part_results, _ = measure_text(
            text, engines=engines, part=name, lang=CORPUS_PARTS[name].tesseract_lang,
            profile=profile, shape=shape,
        )  # fmt: skip
        results.extend(part_results)
    all_text = "\n\n".join(corpus.values())
    joined = render_text(all_text, profile=profile, shape=shape)
    reflowed = render_text(all_text, profile=profile, shape=shape, reflow=True)
    shape_name = shape or get_profile(profile).default_shape
    return ShapeReport(
        profile=profile,
        shape=shape_name,
        results=tuple(results),
        chars=len(all_text),
        pages=len(joined.pages),
        image_tokens=joined.image_tokens,
        image_tokens_reflow=reflowed.image_tokens,
        text_tokens=count_text_tokens(all_text),
        render_ms=joined.elapsed_ms,
        failures=tuple(check_targets(shape_name, results)),
    )
