"""Streaming: pages laid out chunk by chunk equal the whole text's; ``iter_pages`` (issue 22)."""

from __future__ import annotations

import itertools
import json
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.errors import InputError
from glyphfold.render.api import iter_pages, plan_text, render_text
from glyphfold.render.layout import Layout, LayoutConfig, chunk_end
from glyphfold.render.options import RenderOptions

_PIECES = st.sampled_from(
    [
        *"ab Z.",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\u2028",
        "   \n",
        "\n\n\n",
        "国",
        "e\u0301",
        "\x1b[31m",
        "\x1b]0;t\x07",
        "\x00",
        "\u200b",
        "✅",
        "word ",
    ]
)
_TEXT = st.lists(_PIECES, max_size=120).map("".join)


def _pages(text: str, cfg: LayoutConfig, chunk: int, kernels: bool):
    lay = Layout(text, cfg, with_src=True, kernels=kernels, chunk_chars=chunk)
    pages = [
        (p.grid[: p.n_rows].tolist(), p.row_start.tolist(), p.span, p.src[: p.n_rows].tolist())
        for p in lay.pages()
    ]
    return pages, lay.dropped


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_TEXT,
    reflow=st.booleans(),
    collapse=st.booleans(),
    chunk=st.integers(1, 9),
    kernels=st.booleans(),
)
def test_chunked_layout_equals_the_whole_texts(text, reflow, collapse, chunk, kernels):
    """Any chunk size gives the same cells, rows, spans, source offsets and counts."""
    cfg = LayoutConfig(cols=12, rows=3, reflow=reflow, collapse=collapse)
    whole = _pages(text, cfg, 1 << 30, kernels)
    assert _pages(text, cfg, chunk, kernels) == whole


def test_chunks_end_after_a_line_break_between_lines_of_text():
    text = "aa\n\n  \nbb\ncc  \ndd\n   ee"
    assert chunk_end(text, 0, 1, collapse=False) == 3  # after the first break
    # with collapse: after a break between two lines of text, the first ending solid
    assert chunk_end(text, 0, 1, collapse=True) == text.index("cc")
    assert chunk_end(text, 0, 100, collapse=True) == len(text)


def test_iter_pages_yields_what_render_text_keeps():
    text = "streamed page by page: 国语 ✓\tand a line long enough to wrap\n" * 400
    stream = iter_pages(text, RenderOptions(collapse=True, reflow=True))
    got = [(p.png, p.source_span, p.image_tokens) for p in stream]
    whole = render_text(text, collapse=True, reflow=True)
    assert got == [(p.png, p.source_span, p.image_tokens) for p in whole.pages]
    res = stream.result()
    assert res.image_tokens == whole.image_tokens and res.dropped == whole.dropped
    assert res.pages == () and stream.pages_done == len(whole.pages)
    assert stream.fraction == 1.0 and stream.chars_done == len(text)
    with pytest.raises(InputError, match="iterated once"):
        list(stream)


def test_result_before_the_end_is_an_error():
    stream = iter_pages("x" * 100_000)
    next(iter(stream))
    assert 0 < stream.fraction < 1
    with pytest.raises(InputError, match="pages left"):
        stream.result()


def test_missing_glyphs_are_counted_across_chunks(monkeypatch):
    import glyphfold.render.layout as L

    monkeypatch.setattr(L, "CHUNK_CHARS", 64)
    text = ("line \U0001d400 math\n" * 50) + "\U000f0000\n"
    whole = render_text(text)
    assert whole.missing_glyphs  # a private-use plane character no font has
    assert sum(whole.missing_glyphs.values()) >= 1


def test_options_object_and_keywords_agree():
    text = "options: one object or keywords\n" * 50
    a = plan_text(text, options=RenderOptions(shape="dense", reflow=True))
    b = plan_text(text, shape="dense", reflow=True)
    c = plan_text(text, options=RenderOptions(shape="dense"), reflow=True)
    assert a == b == c
    with pytest.raises(InputError, match="unknown render option"):
        iter_pages(text, colapse=True)


def test_streaming_memory_is_bounded_by_a_chunk_not_the_text(monkeypatch):
    """Allocations while streaming stay far below the per-character arrays of the whole
    text (code points 4 bytes and folded offsets 8 bytes per char: 12 bytes per char)."""
    import glyphfold.render.layout as L

    monkeypatch.setattr(L, "CHUNK_CHARS", 50_000)
    text = "a line of transcript text that is long enough,\n" * 40_000  # ~1.9M chars
    list(iter_pages(text[:1000]))  # atlas, fonts, kernels: out of the measurement
    tracemalloc.start()
    for _ in iter_pages(text, collapse=True):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 6 * len(text), f"peak {peak:,} bytes for {len(text):,} chars"


@pytest.mark.parametrize("opts", [{}, {"bits": 2, "keep_pixels": True}, {"ink": [(0, 500, 0.5)]}])
def test_pages_on_two_threads_equal_one_threads(opts):
    """Drawing and encoding on worker threads gives the same pages, in order."""
    text = "threads draw pages: 国语 ✓\tand a line long enough to wrap around\n" * 600
    one = render_text(text, threads=1, **opts)
    two = render_text(text, threads=2, **opts)
    assert len(one.pages) > 4
    assert [(p.png, p.source_span, p.row_spans) for p in one.pages] == [
        (p.png, p.source_span, p.row_spans) for p in two.pages
    ]
    with pytest.raises(InputError, match="threads"):
        render_text(text, threads=0)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_TEXT,
    cuts=st.lists(st.integers(0, 400), max_size=6),
    collapse=st.booleans(),
    chunk=st.integers(1, 9),
)
def test_a_feed_in_pieces_lays_out_as_the_whole_text(text, cuts, collapse, chunk):
    """A TextFeed cut anywhere (inside CR LF, inside a line) gives the pages of the str."""
    from glyphfold.render.layout import TextFeed

    cfg = LayoutConfig(cols=12, rows=3, reflow=True, collapse=collapse)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    feed = TextFeed(iter(pieces), size_hint=len(text))
    lay = Layout(feed, cfg, with_src=True, kernels=False, chunk_chars=chunk)
    got = [(p.grid[: p.n_rows].tolist(), p.row_start.tolist(), p.span) for p in lay.pages()]
    whole = Layout(text, cfg, with_src=True, kernels=False)
    want = [(p.grid[: p.n_rows].tolist(), p.row_start.tolist(), p.span) for p in whole.pages()]
    assert got == want and lay.dropped == whole.dropped


def test_cli_streams_a_large_file(tmp_path, monkeypatch, capsys):
    """Over STREAM_BYTES the CLI renders from the file block by block: the same pages."""
    from glyphfold.cli import main
    from glyphfold.commands import render as cmd

    monkeypatch.setattr(cmd, "STREAM_BYTES", 1000)
    monkeypatch.setattr(cmd, "_BLOCK", 777)
    text = "\ufeff" + "a streamed line,\r\nwith 国语 ✓ and\ttabs\n" * 400
    src = tmp_path / "in.txt"
    src.write_text(text, encoding="utf-8", newline="")
    assert main(["render", str(src), "--out", str(tmp_path / "o"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = render_text(text.removeprefix("\ufeff"), reflow=True)  # the CLI default
    assert out["pages"] == len(want.pages) and out["chars"] == want.chars
    for k, p in enumerate(want.pages, 1):
        assert (tmp_path / "o" / f"page-{k:04d}.png").read_bytes() == p.png
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"x" * 5000 + b"\xff\xfe" + b"y" * 100)
    assert main(["render", str(bad), "--out", str(tmp_path / "o2")]) == 2
    assert "byte offset 5,000" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists() or not list((tmp_path / "o2").iterdir())


def test_chunks_start_small_and_double(monkeypatch):
    """The first chunk is FIRST_CHUNK_CHARS (to a line end), each next one twice the last
    up to CHUNK_CHARS: the first page of a long text waits for a small chunk, and a
    threaded render starts its page threads sooner (issue 22). The pages are the same."""
    import glyphfold.render.layout as L

    monkeypatch.setattr(L, "FIRST_CHUNK_CHARS", 1000)
    text = "a line of text to lay out in chunks\n" * 3000  # 108k chars
    sizes: list[int] = []
    cfg = LayoutConfig(cols=80, rows=40)
    lay = Layout(
        text, cfg, chunk_chars=16_000, on_chunk=lambda cps, cls, seen: sizes.append(len(cps))
    )
    got = [(p.grid[: p.n_rows].tolist(), p.span) for p in lay.pages()]
    assert [s // 1000 for s in sizes[:5]] == [1, 2, 4, 8, 16]  # each cut at a line end
    assert all(s < 16_100 for s in sizes) and sum(sizes) == len(text)
    whole = Layout(text, cfg, chunk_chars=len(text))
    assert got == [(p.grid[: p.n_rows].tolist(), p.span) for p in whole.pages()]


@pytest.mark.parametrize("lines", [1, 150, 700])
def test_threaded_pages_in_batches_are_the_pages(lines):
    """Page threads take PAGES_PER_TASK pages at a time: any page count (a last batch
    part full, one page) comes out whole and in order; a consumer may stop early."""
    text = "batched pages: a line long enough to wrap, 国语 ✓\n" * lines
    one = [(p.png, p.source_span) for p in iter_pages(text)]
    for threads in (2, 3):
        assert [(p.png, p.source_span) for p in iter_pages(text, threads=threads)] == one
    stream = iter(iter_pages(text, threads=2))
    first = next(stream)
    stream.close()  # queued batches are dropped, nothing hangs
    assert (first.png, first.source_span) == one[0]
