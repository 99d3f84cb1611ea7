"""OCR engines that read a page back, and the preprocessing they may use.

Preprocessing adds no information: line cropping at the line pitch, white
padding and integer nearest-neighbour enlargement only.
"""

from __future__ import annotations

import io
import itertools
import shutil
import subprocess
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from glyphfold.errors import InputError

if TYPE_CHECKING:
    import numpy as np


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
