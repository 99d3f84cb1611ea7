"""The fixed legibility corpus: texts shipped in ``glyphfold/data/legibility``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from glyphfold.errors import InputError


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
