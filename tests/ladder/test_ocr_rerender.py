"""OCR check of re-rendering from source (SPEC §5.3, issue 5 acceptance).

A second pass must read back as well as the first: its pages are rendered
from the kept source text, never from the first pass's pixels (imaging an
image degrades glyphs each generation). rapidocr-onnxruntime reads a few row
crops of the first page of each pass (recognition only: fast and small).
"""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest

from glyphfold.compaction.ladder.api import compact
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.elide import ElideConfig
from glyphfold.compaction.ladder.rungs.snapshot import SnapshotConfig
from glyphfold.compaction.ladder.transcript import plain_text

rapidocr = pytest.importorskip("rapidocr_onnxruntime")

ROWS = 3
COLS = 60  # characters per crop: one recognition call each, well inside its input size


def levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _norm(s: str) -> str:
    return "".join(s.split())


def page_cer(ocr, page, source: str) -> float:
    """Character error rate of the first ROWS rows (COLS columns) of a page."""
    from PIL import Image

    from glyphfold.render.config import resolve_setup
    from glyphfold.render.profiles import get_profile
    from glyphfold.render.shapes import get_shape

    img = Image.open(io.BytesIO(page.png)).convert("L")
    shape = get_shape(get_profile("anthropic").default_shape)
    cell_w, cell_h = shape.cell_w, shape.cell_h
    m = resolve_setup().margin  # the cells sit m px in from the top-left corner
    errors = total = 0
    for row in range(ROWS):
        crop = img.crop((m, m + row * cell_h, m + cell_w * COLS, m + (row + 1) * cell_h))
        crop = crop.resize((crop.width * 2, crop.height * 2), Image.BICUBIC)
        canvas = Image.new("L", (crop.width + 16, crop.height + 16), 255)
        canvas.paste(crop, (8, 8))
        res, _ = ocr(np.array(canvas.convert("RGB")), use_det=False, use_cls=False, use_rec=True)
        got = _norm(res[0][0]) if res else ""
        a, _ = page.row_spans[row]
        # a folded newline is one cell on the page: count it as one expected character
        want = _norm(source[a : a + COLS])
        errors += levenshtein(got, want)
        total += max(len(want), 1)
    return errors / total


def _snapshot_source(result) -> str:
    """The source of the first snapshot (its pages come first in ``result.pages``)."""
    msgs = result.messages["messages"] if isinstance(result.messages, dict) else result.messages
    snaps = [m for m in msgs if m.get("x_glyphfold", {}).get("kind") == "snapshot"]
    # role labels are reverse-video marks: the page shows them as their plain letters
    return plain_text(snaps[0]["x_glyphfold"]["source"])


@pytest.mark.slow
@pytest.mark.ocr
def test_second_pass_reads_back_as_well_as_the_first(session):
    """OCR of a pass-2 page has the same CER as pass 1 (re-rendered from text)."""
    ocr = rapidocr.RapidOCR()
    # as 0.1: the same pages (wide elision, regular shape, user messages imaged)
    wide = LadderConfig(
        elide=ElideConfig(policy="unremarkable"),
        snapshot=SnapshotConfig(shape="regular", keep_user_text=False),
    )
    first = compact(session, budget=12_000, config=wide)
    second = compact(
        json.loads(json.dumps(first.messages)),
        budget=first.tokens_after - 1_500,
        rungs="snapshot",
        config=dataclasses.replace(wide, freeze_blocks=False),  # a merge: all rendered again
    )
    assert first.pages and second.pages
    cer1 = page_cer(ocr, first.pages[0], _snapshot_source(first))
    cer2 = page_cer(ocr, second.pages[0], _snapshot_source(second))
    print(f"CER pass 1 {cer1:.3f}, pass 2 {cer2:.3f}")
    assert cer1 < 0.2
    assert cer2 <= cer1 + 0.05
