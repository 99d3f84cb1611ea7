"""Whitespace folding (``collapse=True``): fewer cells, every word kept, spans exact."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.render import backend
from glyphfold.render.api import plan_text, render_text
from glyphfold.render.collapse import collapse_whitespace
from glyphfold.render.layout import layout_text
from tests.naive import naive_collapse

_PIECES = st.sampled_from(
    [*"ab Z.", " ", "  ", "\t", "\n", "\r\n", "\r", "\u2028", "   \n", "\n\n\n", "国", "\u3000"]
)
_TEXT = st.lists(_PIECES, max_size=80).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, reflow=st.booleans(), tab=st.integers(1, 8), kernels=st.booleans())
def test_fold_matches_the_naive_reference(text, reflow, tab, kernels):
    """Both folds (numpy passes, numba kernel) equal the character-by-character reference."""
    folded, orig, gone = collapse_whitespace(text, reflow=reflow, tab_size=tab, kernels=kernels)
    want, want_orig = naive_collapse(text, reflow=reflow, tab_size=tab)
    assert folded == want
    assert orig.tolist() == want_orig
    assert all(a <= b for a, b in itertools.pairwise(orig.tolist())), "offsets go forward"
    # every character that is neither a space, a tab nor a line break is kept, in order,
    # at its own offset
    blank = " \t\n\r\u2028"
    kept = [(c, o) for c, o in zip(folded, orig.tolist(), strict=False) if c not in blank]
    assert [c for c, _ in kept] == [c for c in text if c not in blank]
    assert all(text[o] == c for c, o in kept)
    assert 0 <= gone <= len(text)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, reflow=st.booleans(), tab=st.integers(1, 8))
def test_kernel_and_numpy_folds_agree_on_the_count(text, reflow, tab):
    """The folded-away count (``dropped["whitespace"]``) is the same on both paths."""
    a = collapse_whitespace(text, reflow=reflow, tab_size=tab, kernels=False)
    b = collapse_whitespace(text, reflow=reflow, tab_size=tab, kernels=True)
    assert a[0] == b[0] and a[1].tolist() == b[1].tolist() and a[2] == b[2]


def test_tab_indentation_may_fold_longer_than_the_source():
    """A lone tab of indentation is 4 spaces: the kernel's buffer bound holds it."""
    for kernels in (False, True):
        folded, orig, gone = collapse_whitespace("\t\t\tx", kernels=kernels)
        assert folded == " " * 12 + "x" and orig.tolist() == [0] * 12 + [3, 4] and gone == 3


@pytest.mark.parametrize("kernels", [False, True], ids=["numpy", "numba"])
def test_the_rules_by_example_on_both_paths(kernels):
    text = "\n\nhead   line  \t\n\n\n\n    def f():\n\t\treturn  1\n\n\n"
    folded, _, gone = collapse_whitespace(text, kernels=kernels)
    assert folded == "head line\n\n  def f():\n        return 1\n"
    assert gone == len(text) - (len(folded) - 12)


def test_the_rules_by_example():
    """Trailing blanks, blank-line runs, halved indentation, one space per inner run."""
    text = "\n\nhead   line  \t\n\n\n\n    def f():\n\t\treturn  1\n\n\n"
    folded, _, gone = collapse_whitespace(text)
    assert folded == "head line\n\n  def f():\n        return 1\n"
    assert gone == len(text) - (len(folded) - 12)  # 12 of the folded spaces are synthetic
    folded, _, _ = collapse_whitespace(text, reflow=True)
    assert folded == "head line\n  def f():\n        return 1\n"


def test_ascii_tables_keep_their_words():
    """Column padding folds to one space; every cell's text is still there."""
    table = "NAME      READY   STATUS\nweb-1     1/1     Running\n"
    folded, _, _ = collapse_whitespace(table)
    assert folded == "NAME READY STATUS\nweb-1 1/1 Running\n"


@pytest.mark.parametrize("reflow", [False, True])
@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_collapsed_pages_tile_the_source_and_plan_equals_render(monkeypatch, reflow, mode):
    """Spans are source offsets: they tile the original text; plan prices what render draws."""
    monkeypatch.setenv(backend.ENV_VAR, mode)
    text = "".join(
        f"step {i}:\n" + "    " * (i % 4) + f"value  =   {i}   \n\n\n" for i in range(400)
    )
    res = render_text(text, collapse=True, reflow=reflow)
    plan = plan_text(text, collapse=True, reflow=reflow)
    assert res.pages[0].source_span[0] == 0 and res.pages[-1].source_span[1] == len(text)
    for a, b in itertools.pairwise(res.pages):
        assert a.source_span[1] == b.source_span[0]
    for p in res.pages:
        spans = p.row_spans
        assert spans[0][0] == p.source_span[0] and spans[-1][1] == p.source_span[1]
        assert all(x[1] == y[0] and x[0] <= x[1] for x, y in itertools.pairwise(spans))
    assert plan.page_starts == tuple(p.source_span[0] for p in res.pages)
    assert plan.image_tokens == res.image_tokens
    plain = render_text(text, reflow=reflow)
    assert res.image_tokens < plain.image_tokens
    assert res.dropped["whitespace"] > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, reflow=st.booleans())
def test_collapsed_layout_shows_every_word(text, reflow):
    """Each source row span holds the words its cells show; no word is lost or moved."""
    pages, _ = layout_text(text, cols=12, rows=3, reflow=reflow, collapse=True, with_src=True)
    shown = []
    for p in pages:
        for r in range(p.n_rows):
            lo, hi = p.row_spans()[r]
            for s in p.src[r].tolist():
                # a tab folded to several spaces may straddle two rows; words never do
                if s >= 0 and text[s] not in " \t\n\r\u2028":
                    assert lo <= s < hi
                    shown.append(s)
    words = [m.start() for m in re.finditer(r"[^ \t\n\r\u2028]", text)]
    assert sorted(set(shown) & set(words)) == words
