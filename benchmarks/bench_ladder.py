"""Ladder benchmarks (group ``ladder``): ``glyphfold.recover`` on a 1,000,000-char history.

Run: ``python -m pytest benchmarks/bench_ladder.py --benchmark-enable -p no:cacheprovider``
or ``python benchmarks/bench_ladder.py`` for the side-by-side table with the ratio.

The history is the built-in demo session scaled to ~1M characters of message
content. Recovery (SPEC §3.6) must reach two thirds of the estimate with the
model-free rungs. With elision on, this session gets there by elision alone and
nothing is rendered; so the rendering benchmarks run the ladder with elision
off (``strip,snapshot,trim``): the snapshot rung must image the whole middle,
rendering and PNG encoding included. The baseline runs the same ladder with
pages drawn by Pillow line by line (``benchmarks/baseline_pillow.py``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from glyphfold.compaction.ladder.api import recover
from glyphfold.samples.demo_session import demo_session

TARGET_CHARS = 1_000_000
RENDER_RUNGS = "strip,snapshot,trim"


def _load_baseline() -> Any:
    path = Path(__file__).with_name("baseline_pillow.py")
    spec = importlib.util.spec_from_file_location("glyphfold_bench_baseline_pillow", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def content_chars(history: Any) -> int:
    """Characters of message content (text, tool arguments, tool results; not images)."""
    from glyphfold.compaction.history.messages import to_canonical

    h = to_canonical(history)
    n = len(h.system_text)
    for m in h.messages:
        n += len(m.text)
        for c in m.tool_calls:
            a = c.arguments
            n += len(a) if isinstance(a, str) else len(json.dumps(a))
    return n


def million_char_history() -> Any:
    """The demo session grown until its content reaches 1,000,000 characters."""
    tokens = TARGET_CHARS // 4
    while True:
        h = demo_session(format="anthropic", target_tokens=tokens)
        n = content_chars(h)
        if n >= TARGET_CHARS:
            return h
        tokens = int(tokens * TARGET_CHARS / n) + 1000


class PillowPage:
    """A page drawn by the baseline, with the fields the snapshot rung reads."""

    def __init__(self, png: bytes, width: int, height: int, span: tuple[int, int], tokens: int):
        self.png, self.width, self.height = png, width, height
        self.source_span, self.image_tokens = span, tokens


class PillowResult:
    def __init__(self, pages: list[PillowPage]):
        self.pages = tuple(pages)


def pillow_renderer(
    text: str, *, profile: Any, shape=None, font=None, bits=None, reflow=True, collapse=False
):
    """``render_text``-compatible renderer drawing each page with Pillow line by line.

    Same page and cell geometry as glyphfold's profile default; whitespace is folded
    as glyphfold's ``collapse`` does and newlines into a visible mark like its reflow
    mode, so both draw the same cells.
    """
    from glyphfold.fonts.resolve import resolve_font
    from glyphfold.render.collapse import collapse_whitespace
    from glyphfold.render.profiles import get_profile
    from glyphfold.render.shapes import get_shape

    base = _load_baseline()
    prof = get_profile(profile) if isinstance(profile, str) else profile
    shp = get_shape(shape or prof.default_shape)
    cols = prof.default_page[0] // shp.cell_w
    rows = prof.default_page[1] // shp.cell_h
    if collapse:
        text = collapse_whitespace(text, reflow=reflow)[0]
    folded = text.replace("\n", "\u258c").replace("\t", " ")
    font_path = str(resolve_font("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"))
    pngs = base.render_pillow(
        folded,
        font_path=font_path,
        font_px=shp.cell_h - 3,
        cols=cols,
        rows=rows,
        cell_w=shp.cell_w,
        cell_h=shp.cell_h,
        bits=bits or prof.default_bits,
    )
    per_page = cols * rows
    pages = []
    for k, png in enumerate(pngs):
        h = rows * shp.cell_h
        if k == len(pngs) - 1:
            left = len(folded) - k * per_page
            h = -(-left // cols) * shp.cell_h
        w = cols * shp.cell_w
        span = (k * per_page, min(len(text), (k + 1) * per_page))
        pages.append(PillowPage(png, w, h, span, prof.cost(w, h)))
    return PillowResult(pages)


@pytest.fixture(scope="module")
def history() -> Any:
    return million_char_history()


def _record(benchmark, history, result) -> None:
    benchmark.extra_info["content_chars"] = content_chars(history)
    benchmark.extra_info["tokens_before"] = result.tokens_before
    benchmark.extra_info["tokens_after"] = result.tokens_after
    benchmark.extra_info["pages"] = len(result.pages)
    benchmark.extra_info["rungs"] = [e.rung for e in result.ledger]


@pytest.mark.benchmark(group="ladder")
def test_recover_default_rungs(benchmark, history):
    """recover() with every model-free rung (elision reaches 2/3 here)."""
    recover(history)  # warm: numba cache, fonts, atlas
    result = benchmark(recover, history)
    assert result.tokens_after <= result.tokens_before * 2 // 3
    _record(benchmark, history, result)


@pytest.mark.benchmark(group="ladder")
def test_recover_rendering_glyphfold(benchmark, history):
    """recover() that must image the middle: glyphfold pages (target < 1 s)."""
    recover(history, rungs=RENDER_RUNGS)
    result = benchmark(recover, history, rungs=RENDER_RUNGS)
    assert result.pages and result.tokens_after <= result.tokens_before * 2 // 3
    _record(benchmark, history, result)


@pytest.mark.benchmark(group="ladder")
def test_recover_rendering_pillow_baseline(benchmark, history):
    """The same ladder with pages drawn by Pillow line by line (the baseline)."""
    result = benchmark.pedantic(
        recover,
        args=(history,),
        kwargs={"rungs": RENDER_RUNGS, "renderer": pillow_renderer},
        rounds=1,
        iterations=1,
    )
    assert result.pages
    _record(benchmark, history, result)


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, float, Any]:
    """(wall s, CPU s, result): CPU time survives a loaded machine better than wall time."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    return time.perf_counter() - w0, time.process_time() - c0, result


def main() -> int:
    """Side-by-side: best of N for glyphfold, one run of the baseline, and the ratio."""
    h = million_char_history()
    print(f"history: {content_chars(h):,} content chars", file=sys.stderr)
    recover(h, rungs=RENDER_RUNGS)  # warm: numba cache, fonts, atlas
    runs = [_timed(recover, h, rungs=RENDER_RUNGS) for _ in range(5)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    r = runs[0][2]
    b_wall, b_cpu, rb = _timed(recover, h, rungs=RENDER_RUNGS, renderer=pillow_renderer)
    d_wall, d_cpu, rd = _timed(recover, h)
    print(f"{'run':44} {'wall ms':>9} {'cpu ms':>9}  result")
    print(
        f"{'recover, default rungs (elision suffices)':44} {d_wall * 1e3:9.1f} "
        f"{d_cpu * 1e3:9.1f}  {rd.tokens_before:,} -> {rd.tokens_after:,} tokens"
    )
    print(
        f"{'recover strip,snapshot,trim: glyphfold':44} {wall * 1e3:9.1f} {cpu * 1e3:9.1f}  "
        f"{len(r.pages)} pages, {r.tokens_before:,} -> {r.tokens_after:,} tokens"
    )
    print(
        f"{'recover strip,snapshot,trim: Pillow pages':44} {b_wall * 1e3:9.1f} "
        f"{b_cpu * 1e3:9.1f}  {len(rb.pages)} pages, -> {rb.tokens_after:,} tokens"
    )
    print(f"ratio Pillow / glyphfold: wall {b_wall / wall:.1f}x, cpu {b_cpu / cpu:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
