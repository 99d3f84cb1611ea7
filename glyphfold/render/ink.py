"""Ink levels: spans of the source drawn lighter (tool output), so narrative stands out.

A caller marks spans of the source text as ``(start, end, strength)``: offsets as
in ``text[start:end]``, strength the share of full ink in (0, 1] (1 = black). Later
spans win where they overlap. Light ink needs gray levels, so such pages are 2 bits
per pixel at least: with ``bits`` unset the render picks 2, ``bits=1`` is refused.
A strength scales each glyph's ink, then the page's bit depth rounds it to its gray
levels: on a 2-bit page (levels 0, 85, 170, 255 of 255) strengths from 0.5 to 0.83
print at 85 (dark gray), from 0.17 to just under 0.5 at 170 (light gray).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from glyphfold.errors import InputError

InkSpans = Sequence[tuple[int, int, float]]


def ink_levels(spans: InkSpans, n_chars: int) -> tuple[np.ndarray | None, tuple[float, ...]]:
    """Per-source-character ink level (0 = full ink) and the strength of each level >= 1.

    Returns ``(None, ())`` when no span asks for less than full ink.
    """
    checked: list[tuple[int, int, float]] = []
    for span in spans:
        try:
            start, end, strength = span
        except (TypeError, ValueError):
            msg = f"each ink span must be (start, end, strength), got {span!r}"
            raise InputError(msg) from None
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
        if not ints or not 0 <= start <= end <= n_chars:
            msg = f"ink span offsets must be ints with 0 <= start <= end <= {n_chars}, got {span!r}"
            raise InputError(msg)
        if isinstance(strength, bool) or not isinstance(strength, int | float):
            msg = f"ink strength must be a number in (0, 1], got {strength!r}"
            raise InputError(msg)
        if not 0 < strength <= 1:
            msg = f"ink strength must be in (0, 1] (1 = full ink), got {strength!r}"
            raise InputError(msg)
        checked.append((start, end, float(strength)))
    strengths = tuple(sorted({s for _, _, s in checked if s < 1}, reverse=True))
    if not strengths:
        return None, ()
    if len(strengths) > 254:
        msg = f"at most 254 distinct ink strengths, got {len(strengths)}"
        raise InputError(msg)
    level = {s: i + 1 for i, s in enumerate(strengths)}
    out = np.zeros(n_chars, dtype=np.uint8)
    for start, end, strength in checked:
        out[start:end] = level.get(strength, 0)
    return out, strengths


def page_ink(src: np.ndarray, row_start: np.ndarray, n_rows: int, levels: np.ndarray) -> np.ndarray:
    """The ink level of every cell of a laid-out page (``src`` from a ``with_src`` layout).

    A cell shows the ink of its source character; marks and padding (no source)
    take the ink of the character their row starts at, so a wrapped tool line's
    continuation mark is as light as the line.
    """
    out = np.zeros(src.shape, dtype=np.uint8)
    if not levels.shape[0] or not n_rows:
        return out
    rows = src[:n_rows]
    last = levels.shape[0] - 1
    row_ink = levels[np.minimum(row_start[:n_rows], last)]
    out[:n_rows] = np.where(rows >= 0, levels[np.clip(rows, 0, last)], row_ink[:, None])
    return out
