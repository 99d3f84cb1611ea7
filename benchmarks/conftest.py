"""Shared fixtures of the benchmark suites (run: pytest benchmarks --benchmark-enable).

Heavy imports stay inside fixtures so suites that do not render (e.g. the store
benchmarks) do not pay for numba.
"""

from __future__ import annotations

import pytest

MIXED_CHARS = 1_000_000


@pytest.fixture(scope="session")
def mixed_text() -> str:
    """The deterministic ~1M-char mixed transcript that ``glyphfold bench`` uses."""
    from glyphfold.samples.mixed_text import mixed_transcript

    return mixed_transcript(MIXED_CHARS)
