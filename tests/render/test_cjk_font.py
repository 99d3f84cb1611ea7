"""Chinese, Japanese and Korean without system fonts: the `cjk` extra's font (PyPI)."""

from __future__ import annotations

import importlib.util

import pytest

from glyphfold.fonts import resolve
from glyphfold.render.api import render_text
from glyphfold.render.atlas import clear_atlases

CJK = "中文：漢字かなカナ한국어 — 日本語のテキスト"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("noto_cjk_sans_otc") is None,
    reason="the cjk extra (noto-cjk-sans-otc, part of the test extra) is not installed",
)


@pytest.fixture
def no_system_cjk(monkeypatch):
    """A machine with the bundled fonts only: no DejaVu, Unifont or Noto CJK from the system."""
    monkeypatch.setattr(resolve, "fc_match", lambda family: None)
    monkeypatch.setattr(resolve, "WELL_KNOWN", {k: () for k in resolve.WELL_KNOWN})
    resolve.fallback_chain.cache_clear()
    clear_atlases()
    yield
    resolve.fallback_chain.cache_clear()
    clear_atlases()


def test_the_packaged_font_joins_the_fallback_chain(no_system_cjk):
    """The chain is the bundled font, then the font the PyPI package ships."""
    primary = resolve.resolve_font()
    chain = resolve.fallback_chain(primary, cell_h=16)
    assert chain[0] == primary
    assert chain[1:] == (resolve.find_packaged_font("Noto Sans CJK SC"),)
    assert chain[1].name == "NotoSansCJK-Regular.ttc" and chain[1].is_file()


@pytest.mark.parametrize("shape", ["dense", "regular"])
def test_cjk_renders_with_no_box(no_system_cjk, shape):
    """Every CJK character gets a glyph: nothing missing, no hint."""
    res = render_text(CJK, shape=shape)
    assert res.missing_glyphs == {} and res.hints == ()
    assert any("NotoSansCJK" in f for f in res.fonts)


def test_without_any_cjk_font_the_hint_names_the_extra(no_system_cjk, monkeypatch):
    """No system and no packaged font: boxes, counted, and a hint naming glyphfold[cjk]."""
    monkeypatch.setattr(resolve, "PACKAGED_FONTS", {})
    res = render_text("漢字")
    assert set(res.missing_glyphs) == {ord("漢"), ord("字")}
    assert any("glyphfold[cjk]" in h and "fonts-noto-cjk" in h for h in res.hints)
