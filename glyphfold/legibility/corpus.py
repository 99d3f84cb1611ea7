"""The legibility corpus: fixed texts shipped in ``glyphfold/data/legibility``, plus
identifiers generated from a seed.

The generated part holds ids no one wrote by hand (UUIDs, 16-digit hex ids,
``build-NNNNN`` numbers), so the reading of ids is measured on characters a
reader cannot guess from context: one misread digit and the id is wrong.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from glyphfold.checks import check_int
from glyphfold.errors import InputError

# the kinds of generated identifier, in line order
ID_KINDS: tuple[str, ...] = ("uuid", "hex", "build")
IDS_SEED = 15
IDS_LINES = 30


@dataclass(frozen=True)
class CorpusPart:
    """One text of the legibility corpus: a shipped file, or generated (``filename`` None)."""

    name: str
    filename: str | None
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
        CorpusPart("ids", None, "ids", cjk=False, tesseract_lang="eng"),
    )
}


@dataclass(frozen=True)
class GeneratedIds:
    """Lines of generated identifiers and the identifiers themselves, by kind."""

    text: str
    ids: tuple[tuple[str, str], ...]  # (kind, value) in text order


def generate_ids(*, seed: int = IDS_SEED, lines: int = IDS_LINES) -> GeneratedIds:
    """Return ``lines`` lines of ``UUID  hex16  build-NNNNN``, the same for the same seed."""
    check_int("lines", lines, minimum=1)
    rng = random.Random(seed)
    rows: list[str] = []
    ids: list[tuple[str, str]] = []
    for _ in range(lines):
        row = (
            str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            f"{rng.getrandbits(64):016x}",
            f"build-{rng.randrange(100_000):05d}",
        )
        rows.append("  ".join(row))
        ids.extend(zip(ID_KINDS, row, strict=True))
    return GeneratedIds("\n".join(rows) + "\n", tuple(ids))


def load_corpus(names: Iterable[str] | None = None, *, ids_seed: int = IDS_SEED) -> dict[str, str]:
    """Return ``{part name: text}`` for the named parts (all parts by default).

    ``ids_seed`` seeds the generated part: another seed gives ids no glyph was tuned on.
    """
    check_int("ids_seed", ids_seed, minimum=0)
    wanted = list(CORPUS_PARTS) if names is None else list(names)
    root = resources.files("glyphfold") / "data" / "legibility"
    out: dict[str, str] = {}
    for name in wanted:
        part = CORPUS_PARTS.get(name)
        if part is None:
            msg = f"unknown corpus part {name!r}; valid parts: {', '.join(CORPUS_PARTS)}"
            raise InputError(msg)
        if part.filename is None:
            out[name] = generate_ids(seed=ids_seed).text
        else:
            out[name] = (root / part.filename).read_text(encoding="utf-8")
    return out


def part_identifiers(
    name: str, text: str, *, ids_seed: int = IDS_SEED
) -> tuple[tuple[str, str], ...]:
    """Return the ``(kind, value)`` identifiers a part is scored on.

    The generated part (or an excerpt of it) is scored on the ids it was
    generated with; a shipped text on the identifiers
    :func:`~glyphfold.legibility.metrics.find_identifiers` finds in it (kind ``"found"``).
    """
    from glyphfold.legibility.metrics import find_identifiers

    part = CORPUS_PARTS.get(name)
    if part is not None and part.filename is None:
        return tuple(ident for ident in generate_ids(seed=ids_seed).ids if ident[1] in text)
    return tuple(("found", ident) for ident in find_identifiers(text))
