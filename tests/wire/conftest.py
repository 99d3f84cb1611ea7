"""Shared fixtures of the wire-format tests (SDK imports are slow: one per session)."""

from __future__ import annotations

import os

import pytest

# litellm fetches a price list at import unless told to use its bundled copy
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def litellm_module():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic's notes about litellm's TypedDicts
        return pytest.importorskip("litellm")
