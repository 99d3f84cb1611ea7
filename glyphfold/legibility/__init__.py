"""Legibility: render a fixed corpus, read the pages back with OCR, score the reading.

OCR is a stand-in for the vision model: if an off-the-shelf OCR engine gets
every character back from a page, a strong vision model will too; the misreads
it makes point at glyphs that need work.

Definitions (used by the ``glyphfold legibility`` command and the tests):

- ``normalise(text)``: Unicode NFKC (so a full-width comma an OCR engine emits
  for a CJK line equals the ASCII one), then every whitespace character
  removed. OCR engines drop or invent spaces in monospace text according to
  their own heuristics, not according to the page, and a reader sees columns
  from the geometry; so spaces are not scored.
- ``cer(reference, hypothesis)`` = Levenshtein distance (unit-cost insertion,
  deletion, substitution) between ``normalise(reference)`` and
  ``normalise(hypothesis)``, divided by ``len(normalise(reference))``.
  ``cer_spaced`` is the same with each whitespace run collapsed to one space
  instead of removed (reported for information only).
- identifiers: in the reference, UUIDs, hex strings of 7+ hex digits that
  contain at least one digit and one letter a-f (ids, hashes), and numbers of
  5+ digits. An identifier matches when it occurs in ``normalise(hypothesis)``;
  a reference holding one identifier twice needs two occurrences.
  ``identifier_rate`` = matched / total.
- OCR preprocessing adds no information: line cropping at the line pitch,
  white padding, and integer nearest-neighbour enlargement only.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import shutil
import subprocess
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from glyphfold.errors import InputError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CORPUS_PARTS",
    "TARGETS",
    "CorpusPart",
    "OcrEngine",
    "PartResult",
    "RapidOcrEngine",
    "ShapeReport",
    "TesseractEngine",
    "alignment_confusions",
    "best_results",
    "cer",
    "check_targets",
    "count_text_tokens",
    "find_identifiers",
    "identifier_matches",
    "levenshtein",
    "load_corpus",
    "measure",
    "measure_text",
    "normalise",
    "ocr_engines",
    "split_lines",
    "upscale",
]


@dataclass(frozen=True)
class CorpusPart:
    """One fixed text of the legibility corpus."""

    name: str
    filename: str
    language: str
    cjk: bool
    tesseract_lang: str | None


# name -> part (explicit registry, in report order)
CORPUS_PARTS: dict[str, CorpusPart] = {
    p.name: p
    for p in (
        CorpusPart("english", "english.txt", "en", cjk=False, tesseract_lang="eng"),
        CorpusPart("code", "python_code.txt", "python", cjk=False, tesseract_lang="eng"),
        CorpusPart("tool_json", "tool_result.json", "json", cjk=False, tesseract_lang="eng"),
        CorpusPart("french", "french.txt", "fr", cjk=False, tesseract_lang="fra"),
        CorpusPart("spanish", "spanish.txt", "es", cjk=False, tesseract_lang="spa"),
        # tesseract's chi_sim model read 16 px CJK lines at >70% CER in our runs, so
        # CJK is left to rapidocr (a Chinese PP-OCR model)
        CorpusPart("chinese", "chinese.txt", "zh", cjk=True, tesseract_lang=None),
    )
}

# shape -> (max CER on Latin-script parts, max CER on CJK parts, min identifier rate)
TARGETS: dict[str, tuple[float, float, float | None]] = {
    "regular": (0.01, 0.03, 0.95),
    "dense": (0.03, 0.03, None),
}


def load_corpus(names: Iterable[str] | None = None) -> dict[str, str]:
    """Return ``{part name: text}`` for the named parts (all parts by default)."""
    wanted = list(CORPUS_PARTS) if names is None else list(names)
    root = resources.files("glyphfold") / "data" / "legibility"
    out: dict[str, str] = {}
    for name in wanted:
        part = CORPUS_PARTS.get(name)
        if part is None:
            msg = f"unknown corpus part {name!r}; valid parts: {', '.join(CORPUS_PARTS)}"
            raise InputError(msg)
        out[name] = (root / part.filename).read_text(encoding="utf-8")
    return out


# ---------------------------------------------------------------- metrics (pure)

_WS = re.compile(r"\s+")


def normalise(text: str, *, keep_spaces: bool = False) -> str:
    """NFKC, then whitespace removed (or each run collapsed to one space)."""
    text = unicodedata.normalize("NFKC", text)
    if keep_spaces:
        return _WS.sub(" ", text).strip()
    return _WS.sub("", text)


def _dp_rows(ref: str, hyp: str) -> list[Any]:
    """Levenshtein DP rows (row i = distances from ref[:i] to every hyp prefix)."""
    import numpy as np

    hyp_codes = np.fromiter((ord(c) for c in hyp), dtype=np.int64, count=len(hyp))
    cols = np.arange(len(hyp) + 1, dtype=np.int64)
    prev = cols.copy()
    rows = [prev]
    for i, ch in enumerate(ref, start=1):
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[:-1] + (hyp_codes != ord(ch)), prev[1:] + 1)
        # insertions: cur[j] = min_k<=j (cur[k] + j - k), a running minimum of cur - j
        cur = np.minimum.accumulate(cur - cols) + cols
        rows.append(cur)
        prev = cur
    return rows


def levenshtein(ref: str, hyp: str) -> int:
    """Return the unit-cost edit distance between two strings."""
    if ref == hyp:
        return 0
    if not ref or not hyp:
        return max(len(ref), len(hyp))
    return int(_dp_rows(ref, hyp)[-1][-1])


def cer(reference: str, hypothesis: str, *, keep_spaces: bool = False) -> float:
    """Return the character error rate of ``hypothesis`` against ``reference`` (module doc)."""
    ref = normalise(reference, keep_spaces=keep_spaces)
    hyp = normalise(hypothesis, keep_spaces=keep_spaces)
    if not ref:
        msg = "reference text is empty after normalisation; CER is undefined"
        raise InputError(msg)
    return levenshtein(ref, hyp) / len(ref)


def alignment_confusions(reference: str, hypothesis: str) -> Counter[tuple[str, str]]:
    """Count (reference char, read char) pairs of one optimal alignment.

    Substitutions give ``(a, b)``, deletions ``(a, "")``, insertions ``("", b)``;
    both strings are normalised first.
    """
    ref, hyp = normalise(reference), normalise(hypothesis)
    out: Counter[tuple[str, str]] = Counter()
    if ref == hyp:
        return out
    rows = _dp_rows(ref, hyp)
    i, j = len(ref), len(hyp)
    while i > 0 or j > 0:
        here = int(rows[i][j])
        if i > 0 and j > 0 and here == int(rows[i - 1][j - 1]) + (ref[i - 1] != hyp[j - 1]):
            if ref[i - 1] != hyp[j - 1]:
                out[(ref[i - 1], hyp[j - 1])] += 1
            i, j = i - 1, j - 1
        elif i > 0 and here == int(rows[i - 1][j]) + 1:
            out[(ref[i - 1], "")] += 1
            i -= 1
        else:
            out[("", hyp[j - 1])] += 1
            j -= 1
    return out


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_IDENT = re.compile(rf"(?<![0-9A-Za-z])(?:{_UUID}|[0-9a-fA-F]{{7,}}|[0-9]{{5,}})(?![0-9A-Za-z])")


def find_identifiers(text: str) -> list[str]:
    """Return the identifiers of ``text`` in order: UUIDs, hex ids, numbers of 5+ digits."""
    found = []
    for match in _IDENT.finditer(unicodedata.normalize("NFKC", text)):
        token = match.group(0)
        is_hex_id = bool(re.search(r"[0-9]", token) and re.search(r"[a-fA-F]", token))
        if token.isdigit() or "-" in token or is_hex_id:
            found.append(token)
    return found


def identifier_matches(reference: str, hypothesis: str) -> tuple[int, int]:
    """Return (matched, total) identifiers of ``reference`` found verbatim in ``hypothesis``."""
    wanted = Counter(find_identifiers(reference))
    hyp = normalise(hypothesis)
    matched = sum(min(n, hyp.count(ident)) for ident, n in wanted.items())
    return matched, sum(wanted.values())


_TIKTOKEN_LOCK = threading.Lock()
_TIKTOKEN_COUNTERS: dict[str, Any] = {}


def _offline_counter(encoding: str) -> Any | None:
    """Return an exact offline counter for ``encoding``, or None when none is available.

    glyphfold never downloads at run time: core's ``TiktokenCounter`` when
    tiktoken has the table cached, else ``BpeCounter`` (bpe-openai ships the
    same table compiled in; the two agree token for token, tested in core).
    """
    with _TIKTOKEN_LOCK:
        if encoding not in _TIKTOKEN_COUNTERS:
            from glyphfold.compaction.history.tokens import BpeCounter, TiktokenCounter
            from glyphfold.errors import TokenizerUnavailableError

            counter = None
            for make in (TiktokenCounter, BpeCounter):
                try:
                    counter = make(encoding)
                    break
                except TokenizerUnavailableError:
                    continue
            _TIKTOKEN_COUNTERS[encoding] = counter
        return _TIKTOKEN_COUNTERS[encoding]


def count_text_tokens(text: str) -> dict[str, int | None]:
    """Return text-token counts: ``chars/4`` (ceil) and o200k_base (None when unavailable)."""
    counter = _offline_counter("o200k_base")
    return {
        "chars_div_4": -(-len(text) // 4),
        "o200k_base": counter.count(text) if counter is not None else None,
    }


# ---------------------------------------------------------- image preprocessing


def _ink_mask(gray: np.ndarray) -> np.ndarray:
    """Boolean ink mask: pixels far from the page background (the commonest value)."""
    import numpy as np

    values, counts = np.unique(gray, return_counts=True)
    background = int(values[np.argmax(counts)])
    return np.abs(gray.astype(np.int16) - background) > 64


def to_dark_on_light(gray: np.ndarray) -> np.ndarray:
    """Return the page as dark ink on a light background (OCR engines expect it)."""
    import numpy as np

    values, counts = np.unique(gray, return_counts=True)
    if int(values[np.argmax(counts)]) < 128:
        return (255 - gray).astype(np.uint8)
    return gray


def split_lines(
    gray: np.ndarray, *, pitch_px: int | None = None, offset_px: int | None = None
) -> list[tuple[int, int]]:
    """Return ``(top, bottom)`` row ranges of the text lines of a page.

    With ``pitch_px`` (the shape's line pitch) the page is cut on a pitch grid
    starting at ``offset_px`` (glyphfold pages start their cell grid at row 0);
    without an offset, the grid whose boundary rows carry the least ink is
    used. Without a pitch, runs of inked rows are taken as lines. Rows holding
    no ink are dropped.
    """
    import numpy as np

    ink_rows = _ink_mask(gray).sum(axis=1)
    height = len(ink_rows)
    if pitch_px is not None:
        if pitch_px <= 0:
            msg = f"pitch_px must be positive, got {pitch_px}"
            raise ValueError(msg)
        if offset_px is None:
            offset = min(range(pitch_px), key=lambda o: (int(ink_rows[o::pitch_px].sum()), o))
        else:
            offset = offset_px % pitch_px
        cuts = list(range(offset, height, pitch_px))
        if not cuts or cuts[0] != 0:
            cuts.insert(0, 0)
        cuts.append(height)
        return [(a, b) for a, b in itertools.pairwise(cuts) if ink_rows[a:b].any()]
    inked = np.flatnonzero(ink_rows > 0)
    if inked.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(inked) > 1)
    starts = np.concatenate(([inked[0]], inked[breaks + 1]))
    ends = np.concatenate((inked[breaks], [inked[-1]])) + 1
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def upscale(gray: np.ndarray, factor: int) -> np.ndarray:
    """Enlarge by an integer factor with nearest-neighbour sampling (adds no information)."""
    import numpy as np

    if not isinstance(factor, int) or factor < 1:
        msg = f"upscale factor must be an integer >= 1, got {factor!r}"
        raise ValueError(msg)
    if factor == 1:
        return gray
    return np.repeat(np.repeat(gray, factor, axis=0), factor, axis=1)


def _trim_right(gray: np.ndarray) -> np.ndarray:
    """Drop the blank columns right of the last ink (a short line on a wide page)."""
    import numpy as np

    inked = np.flatnonzero(_ink_mask(gray).any(axis=0))
    return gray[:, : int(inked[-1]) + 1] if inked.size else gray


def _pad(gray: np.ndarray, pad_px: int) -> np.ndarray:
    import numpy as np

    return np.pad(gray, pad_px, mode="constant", constant_values=255)


# ------------------------------------------------------------------ OCR engines


class OcrEngine(Protocol):
    """Reads a grayscale page (dark on light) into text lines."""

    name: str

    def read(
        self,
        gray: np.ndarray,
        *,
        pitch_px: int | None = None,
        offset_px: int | None = None,
        lang: str | None = None,
    ) -> str:
        """Return the page's text, one line per row of text."""
        ...


class RapidOcrEngine:
    """rapidocr-onnxruntime (PP-OCR models shipped in the wheel; nothing downloaded).

    Each text line is cropped at the line pitch and given to the recogniser
    alone (its text detector is not needed: glyphfold pages are a known grid,
    and on whole pages it merged and split words).
    """

    name = "rapidocr"

    def __init__(self, *, scale: int = 1, pad_px: int = 4, threads: int = -1) -> None:
        upscale(_tiny(), scale)  # validates scale
        from rapidocr_onnxruntime import RapidOCR

        self.scale, self.pad_px = scale, pad_px
        # threads=-1: onnxruntime's default (all cores); 1 under pytest-xdist workers
        self._engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=threads)
        self._lock = threading.Lock()

    def _rec(self, strips: list[np.ndarray]) -> list[str]:
        """Recognise line images in one batch, straight to the recogniser.

        RapidOCR's own entry point first shrinks any image over 2000 px and
        bilinearly enlarges any side under 30 px, which blurs a 16 px line
        before the recogniser sees it; the recogniser alone only scales each
        line to its 48 px input height.
        """
        import numpy as np

        if not strips:
            return []
        rgb = [np.stack([s] * 3, axis=-1) for s in strips]
        with self._lock:
            result, _ = self._engine.text_rec(rgb)
        return [text for text, _score in result]

    def read(
        self,
        gray: np.ndarray,
        *,
        pitch_px: int | None = None,
        offset_px: int | None = None,
        lang: str | None = None,
    ) -> str:
        gray = to_dark_on_light(gray)
        strips = []
        for top, bottom in split_lines(gray, pitch_px=pitch_px, offset_px=offset_px):
            strip = _trim_right(gray[top:bottom])
            strips.append(upscale(_pad(strip, self.pad_px), self.scale))
        return "\n".join(self._rec(strips))


class TesseractEngine:
    """The Debian ``tesseract`` binary (``--psm 6``: one uniform block of text).

    ``read(..., lang="fra")`` uses that language pack when it is installed
    (Debian ``tesseract-ocr-fra``) and ``langs`` otherwise. Scale 2 read our
    16 px lines best (scale 3 and 4 were worse in every part measured).
    """

    name = "tesseract"

    def __init__(self, *, scale: int = 2, pad_px: int = 8, langs: str = "eng") -> None:
        upscale(_tiny(), scale)
        binary = shutil.which("tesseract")
        if binary is None:
            msg = "tesseract is not installed (Debian: apt-get install tesseract-ocr)"
            raise OSError(msg)
        self.binary, self.scale, self.pad_px, self.langs = binary, scale, pad_px, langs
        self.available_langs = self.installed_langs()

    def lang_for(self, lang: str | None) -> str:
        """Return the language argument used for a part written in ``lang``."""
        return lang if lang is not None and lang in self.available_langs else self.langs

    @staticmethod
    def installed_langs() -> set[str]:
        """Return the tesseract language packs installed on this machine."""
        binary = shutil.which("tesseract")
        if binary is None:
            return set()
        out = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, check=False, timeout=30
        ).stdout
        return {line.strip() for line in out.splitlines()[1:] if line.strip()}

    def read(
        self,
        gray: np.ndarray,
        *,
        pitch_px: int | None = None,
        offset_px: int | None = None,
        lang: str | None = None,
    ) -> str:
        from PIL import Image

        img = upscale(_pad(to_dark_on_light(gray), self.pad_px), self.scale)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG")
        proc = subprocess.run(
            [self.binary, "stdin", "stdout", "--psm", "6", "-l", self.lang_for(lang)],
            input=buf.getvalue(),
            capture_output=True,
            check=False,
            timeout=120,
        )
        if proc.returncode != 0:
            msg = f"tesseract failed: {proc.stderr.decode(errors='replace').strip()}"
            raise OSError(msg)
        return proc.stdout.decode("utf-8", errors="replace").strip()


def _tiny() -> np.ndarray:
    import numpy as np

    return np.zeros((1, 1), dtype=np.uint8)


def ocr_engines(names: Sequence[str] = ("rapidocr", "tesseract"), **options: Any) -> list[Any]:
    """Return the named OCR engines that are installed (tesseract is optional)."""
    out: list[Any] = []
    for name in names:
        if name == "rapidocr":
            out.append(RapidOcrEngine(**options.get("rapidocr", {})))
        elif name == "tesseract":
            if shutil.which("tesseract") is not None:
                out.append(TesseractEngine(**options.get("tesseract", {})))
        else:
            msg = f"unknown OCR engine {name!r}; valid engines: rapidocr, tesseract"
            raise InputError(msg)
    return out


# ----------------------------------------------------------------- measurement


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
        # the cell grid starts below the page's top margin
        read = "\n".join(
            engine.read(page, pitch_px=pitch_px, offset_px=rendered.margin, lang=lang)
            for page in pages
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
