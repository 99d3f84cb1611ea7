"""What every wire-format module shares: the error naming a message, the mapping test, and
the JSON of keys a wire dict sends that the estimate does not otherwise price."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from glyphfold.errors import HistoryFormatError

__all__ = ["extra_keys", "fail", "is_mapping"]


def fail(i: int, problem: str) -> HistoryFormatError:
    """The error for message ``i`` of a history (raise it)."""
    return HistoryFormatError(f"message {i}: {problem}", index=i)


def is_mapping(x: Any) -> bool:
    """True for a dict or any Mapping (fast path for plain dicts)."""
    return type(x) is dict or isinstance(x, Mapping)


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def extra_keys(out: list[str], raw: Any, known: frozenset[str]) -> None:
    """Append ``"key":value`` JSON for each key of ``raw`` outside ``known`` (sent, unpriced)."""
    if not is_mapping(raw) or known.issuperset(raw):
        return
    for k, v in raw.items():
        if k not in known:
            try:
                out.append(f'"{k}":' + _encode(v))
            except (TypeError, ValueError):
                out.append(f'"{k}":' + str(v))
