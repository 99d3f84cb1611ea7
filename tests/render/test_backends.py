"""The numpy path and the numba kernels render the same bytes; who decides, and when.

The numpy path (glyphfold.render.vector) exists so that a fresh process renders
small inputs without importing numba (issue 14: cold start). It is only worth
having if nothing can tell the two apart: pages, spans, prices and dropped
counts are compared byte for byte (the suite also runs with NUMBA_DISABLE_JIT=1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.errors import InputError
from glyphfold.render import backend
from glyphfold.render.api import plan_text, render_text

_PIECES = st.sampled_from(
    [
        *"abc XYZ 019 -_.",
        "a long run of narrow text that wraps ",
        *("\t", "\n", "\r\n", "\n\n\n", "\x1b[1;31m", "\x1b]0;t\x07", "\x00", "\u200b"),
        *("e\u0301", "é", "Ж", "国", "語", "ｱ", "✓", "❌", "🎉", "\ufe0f"),
    ]
)
_TEXT = st.lists(_PIECES, max_size=150).map("".join)


def _both(monkeypatch, text: str, fn=render_text, **kw):
    out = []
    for mode in ("numba", "numpy"):
        monkeypatch.setenv(backend.ENV_VAR, mode)
        out.append(fn(text, **kw))
    return out


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    text=_TEXT,
    shape=st.sampled_from(["dense", "regular", "large"]),
    bits=st.sampled_from([1, 2, 4, 8]),
    reflow=st.booleans(),
)
def test_both_paths_give_identical_pages(monkeypatch, text, shape, bits, reflow):
    """Same PNG bytes, spans, prices and dropped counts, for every shape and depth."""
    a, b = _both(monkeypatch, text, shape=shape, bits=bits, reflow=reflow, page="400x160")
    assert [p.png for p in a.pages] == [p.png for p in b.pages]
    assert [p.source_span for p in a.pages] == [p.source_span for p in b.pages]
    assert [p.row_spans for p in a.pages] == [p.row_spans for p in b.pages]
    assert a.dropped == b.dropped and a.image_tokens == b.image_tokens


@pytest.mark.parametrize("keep_pixels", [False, True])
def test_both_paths_agree_on_full_default_pages(monkeypatch, keep_pixels):
    """Whole default pages of the mixed transcript (wraps, CJK, labels) match byte for byte."""
    from glyphfold.samples.mixed_text import mixed_transcript

    text = mixed_transcript(30_000)
    a, b = _both(monkeypatch, text, keep_pixels=keep_pixels)
    assert len(a.pages) > 2
    assert [p.png for p in a.pages] == [p.png for p in b.pages]
    pa, pb = _both(monkeypatch, text, fn=plan_text)
    assert pa == pb


def test_bad_backend_name_is_one_clear_error(monkeypatch):
    """An unknown $GLYPHFOLD_RENDER_BACKEND is an InputError naming the choices."""
    monkeypatch.setenv(backend.ENV_VAR, "gpu")
    with pytest.raises(InputError, match="auto, numba, numpy"):
        render_text("x")


_CHILD = """
import json, sys
from glyphfold.render.api import render_text
res = render_text("x" * int(sys.argv[1]))
print(json.dumps({"numba": "numba" in sys.modules,
                  "kernels": "glyphfold.render._kernels" in sys.modules,
                  "pages": len(res.pages)}))
"""


def _fresh(n_chars: int, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != backend.ENV_VAR}
    environ.update(env)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n_chars)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)


def test_a_fresh_process_renders_small_input_without_numba():
    """auto: a tool-result-sized render in a fresh process never imports numba."""
    got = _fresh(20_000)
    assert got == {"numba": False, "kernels": False, "pages": 3}


def test_forcing_the_kernels_loads_numba(tmp_path):
    """GLYPHFOLD_RENDER_BACKEND=numba takes the kernels even for a small input."""
    got = _fresh(500, GLYPHFOLD_RENDER_BACKEND="numba", GLYPHFOLD_CACHE_DIR=str(tmp_path))
    assert got["numba"] and got["kernels"]


def test_the_kernels_take_over_once_they_pay_for_themselves(monkeypatch):
    """auto: the numpy path counts what it lays out; past the budget, or once the
    kernels are loaded, the kernels render."""
    monkeypatch.delenv(backend.ENV_VAR, raising=False)
    monkeypatch.setattr(backend, "kernels_loaded", lambda: False)
    monkeypatch.setattr(backend, "_spent", 0)
    budget = backend.KERNELS_AFTER_CHARS
    assert not backend.use_kernels(budget // 2)
    assert backend.numpy_chars() == budget // 2
    assert not backend.use_kernels(budget // 2)
    assert backend.use_kernels(1)
    monkeypatch.setattr(backend, "_spent", 0)
    assert backend.use_kernels(budget + 1), "one render larger than the budget"
    monkeypatch.setattr(backend, "kernels_loaded", lambda: True)
    assert backend.use_kernels(10)


def test_forced_modes_ignore_the_budget(monkeypatch):
    """numba / numpy modes decide alone and count nothing."""
    monkeypatch.setattr(backend, "_spent", 0)
    monkeypatch.setenv(backend.ENV_VAR, "numpy")
    assert not backend.use_kernels(10 * backend.KERNELS_AFTER_CHARS)
    monkeypatch.setenv(backend.ENV_VAR, "numba")
    assert backend.use_kernels(1)
    assert backend.numpy_chars() == 0


@pytest.mark.parametrize("n", [0, 1, 7, 5000, 70_000, 300_000])
def test_distinct_is_np_unique(n):
    """``vector.distinct`` (sorted below 64k values, a seen-table above) gives np.unique's
    answer, in the input's dtype (it replaces np.unique, whose first call imports
    numpy.ma: issue 22)."""
    from glyphfold.render import vector

    rng = np.random.default_rng(n)
    cps = np.concatenate(
        [rng.integers(0, 128, n // 2), rng.integers(0, 0x10FFFF, n - n // 2)]
    ).astype(np.uint32)
    got = vector.distinct(cps)
    assert got.dtype == np.uint32
    assert got.tolist() == np.unique(cps).tolist()
