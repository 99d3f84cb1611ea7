"""What every wire-format module shares: the error naming a message, the mapping test."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glyphfold.errors import HistoryFormatError

__all__ = ["fail", "is_mapping"]


def fail(i: int, problem: str) -> HistoryFormatError:
    """The error for message ``i`` of a history (raise it)."""
    return HistoryFormatError(f"message {i}: {problem}", index=i)


def is_mapping(x: Any) -> bool:
    """True for a dict or any Mapping (fast path for plain dicts)."""
    return type(x) is dict or isinstance(x, Mapping)
