"""A plan stopped at ``max_pages`` prepares about what its pages hold (issue 22).

The snapshot planner asks for plans of at most the page cap + 1 pages of texts as long
as the whole middle (10M-100M chars): each prepared (folded, classified) a 1M-char
chunk for a dozen pages. The pages are those of the whole text's plan, cut at the limit.
"""

from __future__ import annotations

import random

import pytest

from glyphfold.render.api import plan_text
from glyphfold.render.layout import CHUNK_CHARS, Layout


def _text(n: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    parts = ["word ", "longer words here ", "\n", "   ", "\t", "\n\n\n", "国语 ", "x" * 90]
    out: list[str] = []
    size = 0
    while size < n:
        p = rnd.choice(parts)
        out.append(p)
        size += len(p)
    return "".join(out)


@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("limit", [1, 3, 12])
def test_limited_plans_are_the_whole_plans_cut(collapse, limit):
    text = _text(400_000)
    whole = plan_text(text, reflow=True, collapse=collapse)
    cut = plan_text(text, reflow=True, collapse=collapse, max_pages=limit)
    assert cut.page_starts == whole.page_starts[:limit]
    assert cut.page_tokens == whole.page_tokens[:limit]
    assert cut.complete == (len(whole.page_starts) <= limit)


def test_a_limited_plan_prepares_chunks_the_size_of_its_pages(monkeypatch):
    sizes: list[int] = []
    real = Layout._prepare

    def noting(self, start, end, text=None):
        sizes.append(end - start)
        return real(self, start, end, text)

    monkeypatch.setattr(Layout, "_prepare", noting)
    text = _text(3 * CHUNK_CHARS)
    plan = plan_text(text, reflow=True, collapse=True, max_pages=2)
    assert not plan.complete
    assert sizes and max(sizes) < CHUNK_CHARS // 4
