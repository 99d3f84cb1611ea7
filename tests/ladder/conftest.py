"""Shared fixtures of the ladder tests: deterministic demo sessions in both wire formats."""

from __future__ import annotations

import copy

import pytest

from glyphfold.samples.demo_session import demo_session

SMALL_TOKENS = 120_000  # 11 turns of stdlib reads: head, middle, tail; quick to render


@pytest.fixture(scope="session")
def _sessions():
    return {
        fmt: demo_session(format=fmt, target_tokens=SMALL_TOKENS, sources=("stdlib",))
        for fmt in ("openai", "anthropic")
    }


@pytest.fixture(params=["openai", "anthropic"])
def session(request, _sessions):
    """A fresh deep copy per test (tests assert the input is never mutated)."""
    return copy.deepcopy(_sessions[request.param])
