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
- identifiers: the generated part (``ids``: seeded UUIDs, 16-digit hex ids,
  ``build-NNNNN``) is scored on the ids it was generated with; a shipped text
  on the UUIDs, hex strings of 7+ hex digits holding at least one digit and
  one letter a-f, and numbers of 5+ digits found in it. An identifier matches
  when it occurs verbatim in ``normalise(hypothesis)``; a reference holding
  one identifier twice needs two occurrences. ``identifier_rate`` = matched /
  total, per kind or over several kinds.
- reading modes: ``page`` (the primary figure) gives each engine the whole
  page as sent and lets it find the lines, as a vision model must; ``lines``
  cuts each line on the cell grid first (a second figure).
- OCR preprocessing adds no information: line cropping at the line pitch,
  white padding of a crop, and integer nearest-neighbour enlargement only.

The project's own description of the suite is ``docs/legibility.md``.
"""

from glyphfold.legibility.corpus import (
    CORPUS_PARTS,
    ID_KINDS,
    IDS_SEED,
    CorpusPart,
    GeneratedIds,
    generate_ids,
    load_corpus,
    part_identifiers,
)
from glyphfold.legibility.measure import (
    KNOWN_MISSES,
    MODES,
    PRIMARY_MODE,
    TARGETS,
    PartResult,
    ShapeReport,
    Target,
    best_results,
    check_targets,
    decode_png,
    known_miss,
    measure,
    measure_text,
    score_reading,
)
from glyphfold.legibility.metrics import (
    alignment_confusions,
    cer,
    count_text_tokens,
    find_identifiers,
    identifier_matches,
    identifier_matches_by_kind,
    levenshtein,
    normalise,
)
from glyphfold.legibility.ocr import (
    ENGINE_NAMES,
    OCR_EXTRA_HINT,
    OcrEngine,
    OcrUnavailableError,
    RapidOcrEngine,
    TesseractEngine,
    available_engines,
    ocr_engines,
    split_lines,
    tesseract_langs,
    upscale,
)

__all__ = [
    "CORPUS_PARTS",
    "ENGINE_NAMES",
    "IDS_SEED",
    "ID_KINDS",
    "KNOWN_MISSES",
    "MODES",
    "OCR_EXTRA_HINT",
    "PRIMARY_MODE",
    "TARGETS",
    "CorpusPart",
    "GeneratedIds",
    "OcrEngine",
    "OcrUnavailableError",
    "PartResult",
    "RapidOcrEngine",
    "ShapeReport",
    "Target",
    "TesseractEngine",
    "alignment_confusions",
    "available_engines",
    "best_results",
    "cer",
    "check_targets",
    "count_text_tokens",
    "decode_png",
    "find_identifiers",
    "generate_ids",
    "identifier_matches",
    "identifier_matches_by_kind",
    "known_miss",
    "levenshtein",
    "load_corpus",
    "measure",
    "measure_text",
    "normalise",
    "ocr_engines",
    "part_identifiers",
    "score_reading",
    "split_lines",
    "tesseract_langs",
    "upscale",
]
