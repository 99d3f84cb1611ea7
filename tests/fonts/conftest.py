"""Shared fixtures for the bundled pixel font tests: sources parsed once per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from glyphfold.fonts.pixel import build, bundled_fonts


@dataclass(frozen=True)
class BuiltFont:
    """A bundled font as the generator sees it: source, glyph bitmaps, provenance."""

    name: str
    bdf: Path
    source: build.FontSource
    glyphs: dict[int, np.ndarray]  # cell-sized 0/1 arrays
    how: dict[int, str]


def _load(name: str, bdf: Path) -> BuiltFont:
    src_path = bdf.with_name(f"{name}{build.SOURCE_SUFFIX}")
    source = build.parse_source(
        src_path.read_text(encoding="utf-8"), path=src_path.name, base_dir=src_path.parent
    )
    glyphs, how = build.build_glyphs(source)
    arrays = {cp: np.array(bm, dtype=np.uint8) for cp, bm in glyphs.items()}
    return BuiltFont(name, bdf, source, arrays, how)


_CACHE: dict[str, BuiltFont] = {}


def built(name: str) -> BuiltFont:
    """Return the parsed and built bundled font (cached for the worker process)."""
    if name not in _CACHE:
        _CACHE[name] = _load(name, bundled_fonts()[name])
    return _CACHE[name]


@pytest.fixture(params=sorted(bundled_fonts()))
def font(request: pytest.FixtureRequest) -> BuiltFont:
    """Each bundled font in turn."""
    return built(request.param)
