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

from glyphfold.legibility.corpus import CORPUS_PARTS, CorpusPart, load_corpus
from glyphfold.legibility.measure import (
    TARGETS,
    PartResult,
    ShapeReport,
    best_results,
    check_targets,
    measure,
    measure_text,
)
from glyphfold.legibility.metrics import (
    alignment_confusions,
    cer,
    count_text_tokens,
    find_identifiers,
    identifier_matches,
    levenshtein,
    normalise,
)
from glyphfold.legibility.ocr import (
    OcrEngine,
    RapidOcrEngine,
    TesseractEngine,
    ocr_engines,
    split_lines,
    upscale,
)

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
