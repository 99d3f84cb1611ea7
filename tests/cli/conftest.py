"""Shared fixtures of the CLI tests: small histories on disk, a run helper."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from cli_helpers import ORPHAN, write

from glyphfold.samples.demo_session import demo_session

SMALL_TOKENS = 60_000  # a few turns of stdlib reads: enough for snapshot pages, quick


@pytest.fixture(scope="session")
def _small_session():
    return demo_session(format="anthropic", target_tokens=SMALL_TOKENS, sources=("stdlib",))


@pytest.fixture
def session(_small_session):
    """A fresh copy of a small Anthropic demo session (dict with system + messages)."""
    return copy.deepcopy(_small_session)


@pytest.fixture
def session_file(tmp_path, session) -> Path:
    return write(tmp_path / "in.json", session)


@pytest.fixture
def orphan_file(tmp_path) -> Path:
    """An OpenAI history with one tool result whose call is missing (message 4)."""
    return write(tmp_path / "orphan.json", ORPHAN)
