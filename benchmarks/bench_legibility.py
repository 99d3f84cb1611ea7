"""Profile pricing and legibility-metric benchmarks.

Run: ``python -m pytest benchmarks/bench_legibility.py --benchmark-enable -p no:cacheprovider``

Groups: ``profiles`` (``cost(profile, w, h)``: the ladder prices every page it
plans, so this must stay in microseconds), ``legibility-metric`` (CER of a
whole corpus part: vectorised Levenshtein on NFKC text), ``legibility-ocr``
(rapidocr's recogniser on one rendered 196-column line, the unit OCR cost; and a
whole page of generated ids, detector included, the unit of the primary figure).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from glyphfold import legibility as L
from glyphfold.render.profiles import cost, get_profile, profile_names

VISION = [n for n in profile_names() if get_profile(n).vision]


@pytest.mark.benchmark(group="profiles")
@pytest.mark.parametrize("name", VISION)
def test_cost_of_an_oversized_page(benchmark, name: str) -> None:
    # 4000x3000 forces every provider's resize path, the slowest branch
    cost(name, 4000, 3000)
    tokens = benchmark(cost, name, 4000, 3000)
    benchmark.extra_info["tokens"] = tokens
    benchmark.extra_info["pixels"] = 4000 * 3000
    assert tokens > 0


@pytest.mark.benchmark(group="legibility-metric")
def test_cer_of_a_corpus_part(benchmark) -> None:
    ref = L.load_corpus(["english"])["english"]
    hyp = ref.replace("l", "1").replace("e", "c", 20)  # ~60 edits to align
    result = benchmark(L.cer, ref, hyp)
    benchmark.extra_info["chars"] = len(ref)
    assert 0 < result < 0.5


@pytest.mark.benchmark(group="legibility-ocr")
def test_rapidocr_one_line(benchmark) -> None:
    from glyphfold.render.api import render_text

    line = ("The key that addressed the cache was computed from the file names; " * 3)[:196]
    page = render_text(line, shape="regular").pages[0]
    gray = np.asarray(Image.open(io.BytesIO(page.png)).convert("L"))
    engine = L.RapidOcrEngine()
    engine.read_lines(gray, pitch_px=16)  # load the model, warm onnxruntime
    text = benchmark(engine.read_lines, gray, pitch_px=16)
    benchmark.extra_info["chars"] = len(line)
    benchmark.extra_info["pixels"] = page.width * page.height
    assert L.cer(line, text) < 0.05


@pytest.mark.benchmark(group="legibility-ocr")
def test_rapidocr_whole_page_of_ids(benchmark) -> None:
    from glyphfold.render.api import render_text

    text = L.load_corpus(["ids"])["ids"]
    page = render_text(text, shape="regular").pages[0]
    gray = L.decode_png(page.png)
    engine = L.RapidOcrEngine()
    engine.read_page(gray)  # warm
    read = benchmark.pedantic(engine.read_page, args=(gray,), rounds=3, iterations=1)
    benchmark.extra_info["chars"] = len(text)
    benchmark.extra_info["pixels"] = page.width * page.height
    assert L.cer(text, read) < 0.02
