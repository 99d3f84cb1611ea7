"""Layout: rules, provenance, and the kernel against the naive reference (SPEC §5.2, §5.4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glyphfold.errors import LayoutError
from glyphfold.render import codes as K
from glyphfold.render.layout import LayoutConfig, layout_text
from tests.naive import naive_layout

CONT, NL, JOIN = 0x21AA, 0x21B5, 0x2590


def rows_text(page, *, cont=CONT) -> list[str]:
    """Printed rows of a page as strings ('~' continuation mark, '_' wide half, '↩' join)."""
    out = []
    for r in range(page.n_rows):
        chars = []
        for code in page.grid[r].tolist():
            if code == K.WIDE_CONT:
                chars.append("_")
            elif code == cont:
                chars.append("~")
            elif code == JOIN:
                chars.append("↩")
            else:
                chars.append(chr(code))
        out.append("".join(chars).rstrip(" "))
    return out


def test_lines_are_kept_and_crlf_normalised():
    """CRLF, CR and LF all end a row; line structure is kept (SPEC §5.4)."""
    pages, dropped = layout_text("ab\r\ncd\ref\n\ngh", cols=12, rows=10)
    assert rows_text(pages[0]) == ["ab", "cd", "ef", "", "gh"]
    assert dropped == {}


def test_tabs_expand_to_tab_stops():
    """A tab moves to the next multiple of tab_size cells."""
    pages, _ = layout_text("a\tb\n12345678\tc\nab\t\tz", cols=30, rows=5, tab_size=4)
    assert rows_text(pages[0]) == ["a   b", "12345678    c", "ab      z"]


def test_long_lines_wrap_with_a_continuation_mark():
    """The row after a wrap starts with the continuation glyph; reflow has none."""
    text = "abcdefghijklmnopqrstuvwxyz"
    pages, _ = layout_text(text, cols=12, rows=10, word_wrap=False)
    assert rows_text(pages[0]) == ["abcdefghijkl", "~mnopqrstuvw", "~xyz"]
    pages, _ = layout_text(text, cols=12, rows=10, reflow=True, word_wrap=False)
    assert rows_text(pages[0]) == ["abcdefghijkl", "mnopqrstuvwx", "yz"]


def test_split_token_ends_its_row_with_the_join_mark():
    """Issue 20: a token longer than a row is split; each part but the last ends in ↩."""
    text = "abcdefghijklmnopqrstuvwxyz"
    pages, _ = layout_text(text, cols=12, rows=10)
    assert rows_text(pages[0]) == ["abcdefghijk↩", "~lmnopqrstu↩", "~vwxyz"]
    pages, _ = layout_text(text, cols=12, rows=10, reflow=True, with_src=True)
    assert rows_text(pages[0]) == ["abcdefghijk↩", "lmnopqrstuv↩", "wxyz"]
    # the mark is no character of the source: no offset, and the rows still tile it
    assert pages[0].src[0, 11] == -1 and pages[0].row_spans()[1] == (11, 22)


def test_word_wrap_moves_a_token_whole():
    """Issue 20: a token that starts near the row end and does not fit moves whole."""
    text = "see /srv/app/main.py, then run make test now"
    # 24 cols: window 6; 'then' starts 2 cells before the end of row 1 and moves
    pages, _ = layout_text(text, cols=24, rows=10, reflow=True)
    assert rows_text(pages[0]) == ["see /srv/app/main.py,", "then run make test now"]
    # a row may break after , ; ) ] } (they end the token before them)
    pages, _ = layout_text("f(alpha,beta,gamma)+delta", cols=16, rows=10, reflow=True)
    assert rows_text(pages[0]) == ["f(alpha,beta,", "gamma)+delta"]
    # line mode: the next row still starts with the continuation mark
    pages, _ = layout_text(text, cols=24, rows=10)
    assert rows_text(pages[0]) == ["see /srv/app/main.py,", "~then run make test now"]
    # a token that starts further back than the window is split, not moved
    pages, _ = layout_text("ab 0123456789abcdefghij", cols=16, rows=10, reflow=True)
    assert rows_text(pages[0]) == ["ab 0123456789ab↩", "cdefghij"]
    # off: characters fill every row as before
    pages, _ = layout_text(text, cols=24, rows=10, reflow=True, word_wrap=False)
    assert rows_text(pages[0]) == ["see /srv/app/main.py, th", "en run make test now"]


def test_reflow_folds_newlines_into_one_glyph():
    """In reflow mode a line break is one newline cell and text keeps flowing."""
    pages, _ = layout_text("ab\ncd\r\ne", cols=20, rows=2, reflow=True, newline=NL)
    assert rows_text(pages[0]) == ["ab↵cd↵e"]


def test_wide_characters_take_two_cells_and_never_split():
    """East Asian wide chars use two cells; one that would straddle the edge wraps."""
    pages, _ = layout_text("abcdefghi国语x", cols=12, rows=5)
    assert rows_text(pages[0]) == ["abcdefghi国_", "~语_x"]
    assert pages[0].grid[0, 10] == K.WIDE_CONT


def test_ansi_controls_and_format_chars_are_dropped_by_rule():
    """ANSI escapes, C0/C1 controls, zero-width and bidi controls never reach the page."""
    text = "\x1b[1;31mred\x1b[0m\x07 a\u200bb\u202ec\u2066d\x00\x7f\x9b \x1b]0;title\x07ok\u0301"
    pages, dropped = layout_text(text, cols=40, rows=2)
    assert rows_text(pages[0]) == ["red abcd o\u1e31"]  # k + U+0301 prints as its NFC letter
    assert dropped == {"ansi": 7 + 4 + 10, "control": 4, "format": 3, "combining": 1}


def test_decomposed_accents_print_as_precomposed_letters():
    """NFD input keeps its accents: base + marks show the NFC letter; marks are counted."""
    text = "cafe\u0301 nin\u0303o A\u030a x\u0301\u0302 \u0301lead \u304b\u3099"
    pages, dropped = layout_text(text, cols=40, rows=2, with_src=True)
    assert rows_text(pages[0]) == ["caf\u00e9 ni\u00f1o \u00c5 x lead \u304c_"]
    assert dropped == {"combining": 7}
    # the composed cell still points at the base character's offset
    assert pages[0].src[0, 3] == 3 and text[3] == "e"


def test_semantic_emoji_fold_and_decorative_emoji_drop():
    """✓ -> [OK], ❌ -> [X], ⚠ -> [!]; 🎉 and the ZWJ/VS16 glue are dropped."""
    pages, dropped = layout_text("✓ ok ❌ no ⚠\ufe0f hot 🎉🚀 👩\u200d💻", cols=40, rows=2)
    assert rows_text(pages[0]) == ["[OK] ok [X] no [!] hot"]
    assert dropped == {"emoji": 4, "format": 2}


def test_folded_label_wraps_whole():
    """A label that would cross the row edge moves whole to the next row."""
    pages, _ = layout_text("abcdefghij✓ z", cols=12, rows=3)
    assert rows_text(pages[0]) == ["abcdefghij", "~[OK] z"]


def test_pages_fill_and_spans_tile_the_source():
    """Pages hold `rows` rows; page and row spans tile the text exactly."""
    text = "\n".join(f"line {i}" for i in range(25))
    pages, _ = layout_text(text, cols=12, rows=10)
    assert [p.n_rows for p in pages] == [10, 10, 5]
    assert pages[0].span[0] == 0 and pages[-1].span[1] == len(text)
    for a, b in itertools.pairwise(pages):
        assert a.span[1] == b.span[0]
    for p in pages:
        spans = p.row_spans()
        assert spans[0][0] == p.span[0] and spans[-1][1] == p.span[1]
        assert all(x[1] == y[0] for x, y in itertools.pairwise(spans))
    assert text[slice(*pages[1].row_spans()[3])] == "line 13\n"


def test_trailing_dropped_chars_make_no_blank_page():
    """Characters that never print do not open a row or a page of their own."""
    pages, dropped = layout_text("a\nb\x1b[0m\u200b", cols=12, rows=2)
    assert len(pages) == 1 and pages[0].span == (0, 8)
    assert dropped == {"ansi": 4, "format": 1}
    pages, _ = layout_text("\x1b[0m\u200b", cols=12, rows=2)
    assert pages == []


@pytest.mark.parametrize(("cols", "rows", "named"), [(11, 5, "11"), (0, 5, "0"), (20, 0, "0")])
def test_impossible_geometry_is_rejected(cols, rows, named):
    """A page that cannot hold a row of 12 cells raises LayoutError naming the value."""
    with pytest.raises(LayoutError, match=f"got {named}"):
        LayoutConfig(cols=cols, rows=rows)


def _assert_matches_naive(
    text, cols, rows, tab_size, reflow, kernels=None, word_wrap=True, wide_rows=1
):
    got, dropped = layout_text(
        text,
        cols=cols,
        rows=rows,
        tab_size=tab_size,
        reflow=reflow,
        with_src=True,
        newline=NL,
        kernels=kernels,
        word_wrap=word_wrap,
        wide_rows=wide_rows,
    )
    want, want_dropped = naive_layout(
        text,
        cols=cols,
        rows=rows,
        tab_size=tab_size,
        reflow=reflow,
        newline=NL,
        word_wrap=word_wrap,
        wide_rows=wide_rows,
    )
    assert dropped == want_dropped
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.span == w["span"]
        assert g.grid[: g.n_rows].tolist() == w["grid"]
        assert g.src[: g.n_rows].tolist() == w["src"]
        starts = g.row_start.tolist()
        assert starts[1:] == w["row_start"][1:]


_PIECES = [
    *"abcXYZ019 -_.",
    *("\t", "\n", "\r", "\r\n", "\x1b[31m", "\x1b]0;t\x07", "\x1b(", "\x1b", "\x00", "\x7f"),
    *("\u200b", "\u200d", "\u202e", "\ufe0f", "\u0301", "é", "Ж", "λ"),
    *("国", "語", "한", "ｱ", "Ａ", "\u3000"),
    *("✓", "❌", "⚠", "🎉", "👍", "🟢", "\U0001f3fd", "\ud800"),
]
_ALPHABET = st.sampled_from(_PIECES)
_TEXT = st.lists(_ALPHABET | st.text(max_size=3), max_size=120).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_TEXT,
    cols=st.integers(12, 20),
    rows=st.integers(1, 4),
    tab=st.integers(1, 8),
    reflow=st.booleans(),
)
@pytest.mark.parametrize("kernels", [True, False], ids=["numba", "numpy"])
def test_kernel_matches_naive_reference(kernels, text, cols, rows, tab, reflow):
    """The layout kernel and the numpy path produce exactly the naive reference."""
    _assert_matches_naive(text, cols, rows, tab, reflow, kernels=kernels)


_WORDY = st.lists(
    st.sampled_from(["a", "b", "0", "/", "-", ".", " ", " ", ",", ")", "}", "\n", "\t", "国", "✓"])
    | st.sampled_from(["\x1b[1m", "\u200b", "id-3f2b8c1e", "/usr/lib/x.py", "word "]),
    max_size=160,
).map("".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_WORDY,
    cols=st.integers(12, 60),
    rows=st.integers(1, 5),
    reflow=st.booleans(),
    word_wrap=st.booleans(),
)
@pytest.mark.parametrize("kernels", [True, False], ids=["numba", "numpy"])
def test_word_wrap_matches_naive_reference(kernels, text, cols, rows, reflow, word_wrap):
    """Issue 20: word wrap (tokens, windows up to 15 cells, join marks), all three paths."""
    _assert_matches_naive(text, cols, rows, 8, reflow, kernels=kernels, word_wrap=word_wrap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_TEXT | _WORDY,
    cols=st.integers(12, 24),
    rows=st.integers(2, 5),
    reflow=st.booleans(),
    word_wrap=st.booleans(),
)
@pytest.mark.parametrize("kernels", [True, False], ids=["numba", "numpy"])
def test_tall_wide_rows_match_naive_reference(kernels, text, cols, rows, reflow, word_wrap):
    """Issue 20: wide glyphs two rows tall (dense rows): the row of lower halves under each
    row of wide glyphs, such a row never last on a page; all three paths agree."""
    _assert_matches_naive(
        text, cols, rows, 8, reflow, kernels=kernels, word_wrap=word_wrap, wide_rows=2
    )


def test_tall_wide_glyph_rows():
    """Issue 20: with ``wide_rows=2`` a row holding a wide glyph is followed by the row of
    its lower halves, which covers no source; such a row never is a page's last row (it
    starts the next page whole, and its dropped characters are counted once)."""
    pages, dropped = layout_text("ab 国x\ncd\n\x1b[1m语ef", cols=12, rows=3, with_src=True)
    assert [p.n_rows for p in pages] == [3]  # wide_rows=1: no row of lower halves
    pages, dropped = layout_text(
        "ab 国x\ncd\n\x1b[1m语ef", cols=12, rows=3, with_src=True, wide_rows=2
    )
    assert [p.n_rows for p in pages] == [3, 2]
    first, second = pages
    assert first.grid[1, 3] == K.WIDE_BELOW and first.grid[1, 4] == K.WIDE_CONT
    assert first.src[1].tolist()[3:5] == [3, 3]  # the lower half shows the same character
    assert (first.grid[1, :3] == K.BLANK).all() and (first.grid[1, 5:] == K.BLANK).all()
    assert first.row_spans() == [(0, 6), (6, 6), (6, 9)]  # the row of halves covers nothing
    # the third row would hold 语 on the last row: it starts the next page, escape and all
    assert second.span == (9, 16) and second.grid[0, 0] == ord("语")
    assert second.grid[1, 0] == K.WIDE_BELOW
    assert dropped == {"ansi": 4}
    with pytest.raises(LayoutError, match="two rows tall"):
        LayoutConfig(cols=12, rows=1, wide_rows=2)
    with pytest.raises(LayoutError, match="got 3"):
        LayoutConfig(cols=12, rows=4, wide_rows=3)


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(st.text(alphabet="ab0/-._", min_size=1, max_size=50), max_size=40),
    cols=st.integers(12, 80),
)
def test_wrapped_rows_rejoin_to_the_text(words, cols):
    """Issue 20: the rows' characters are the text; a row ends inside a token only with
    the join mark, and only when that token started more than ``window`` cells before
    the row end or is longer than a row."""
    text = " ".join(words)
    pages, _ = layout_text(text, cols=cols, rows=1000, reflow=True, with_src=True)
    window = min(32, cols // 4)
    rows = []  # (source offsets of the row's cells, ends with the join mark)
    for p in pages:
        for r in range(p.n_rows):
            rows.append(([s for s in p.src[r].tolist() if s >= 0], p.grid[r, cols - 1] == JOIN))
    assert "".join(text[s] for src, _ in rows for s in src) == text
    for (src, joined), _ in itertools.pairwise(rows):
        end = src[-1] + 1  # the boundary between the rows, as a source offset
        inside = text[end - 1] != " " and text[end] != " "
        assert inside == joined, (text, end)
        if joined:
            start = text.rfind(" ", 0, end) + 1  # the split token, whole
            stop = text.find(" ", end) if " " in text[end:] else len(text)
            started = cols - src.index(start) if start in src else cols + 1
            assert started > window or stop - start > cols, (text, end)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.text(alphabet="ab \t国✓\x1b[m\u0301", max_size=60), max_size=30),
    cols=st.integers(12, 30),
    rows=st.integers(1, 6),
    reflow=st.booleans(),
)
def test_numpy_path_matches_kernel_on_long_runs(lines, cols, rows, reflow):
    """Long narrow runs (the numpy path's row slices) wrap and page exactly as the kernel."""
    text = "\n".join(lines)
    for kernels in (True, False):
        _assert_matches_naive(text, cols, rows, 8, reflow, kernels=kernels)


@settings(max_examples=150, deadline=None)
@given(text=_TEXT, cols=st.integers(12, 20), rows=st.integers(1, 4), reflow=st.booleans())
def test_no_character_is_lost(text, cols, rows, reflow):
    """Every source char is on a page, in order, or counted as dropped by rule."""
    pages, dropped = layout_text(text, cols=cols, rows=rows, reflow=reflow, with_src=True)
    if pages:
        assert pages[0].span[0] == 0 and pages[-1].span[1] == len(text)
    for a, b in itertools.pairwise(pages):
        assert a.span[1] == b.span[0]
    shown: list[int] = []
    for p in pages:
        spans = p.row_spans()
        assert spans[0][0] == p.span[0] and spans[-1][1] == p.span[1]
        for r, (lo, hi) in enumerate(spans):
            assert lo <= hi
            src = [s for s in p.src[r].tolist() if s >= 0]
            assert all(lo <= s < hi for s in src), "a cell shows a char outside its row span"
            for s in src:
                if not shown or shown[-1] != s:
                    shown.append(s)
    assert shown == sorted(shown), "characters out of order"
    on_page = set(shown)
    breaks = "\r\n\x85\u2028\u2029"
    off_page = [i for i in range(len(text)) if i not in on_page]
    structure = [i for i in off_page if text[i] in breaks]
    # what is neither printed nor a line break is exactly what the rules dropped
    assert len(off_page) - len(structure) == sum(dropped.values())


def test_layout_does_not_keep_a_reference_to_mutable_input():
    """Layout reads a str (immutable); its code point array is a read-only copy."""
    from glyphfold.render.layout import to_codepoints

    cps = to_codepoints("abc")
    assert not cps.flags.writeable
    assert np.array_equal(cps, [97, 98, 99])
