"""What every wire-format module shares: the error naming a message, the mapping test,
inline bytes as base64 text, tool-call arguments as an object, and the JSON of keys a
wire dict sends that the estimate does not otherwise price."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, TypeGuard

from glyphfold.errors import HistoryFormatError

__all__ = ["args_object", "base64_text", "extra_keys", "fail", "is_mapping"]


def fail(i: int, problem: str) -> HistoryFormatError:
    """The error for message ``i`` of a history (raise it)."""
    return HistoryFormatError(f"message {i}: {problem}", index=i)


def is_mapping(x: Any) -> TypeGuard[Mapping[str, Any]]:
    """True for a dict or any Mapping (fast path for plain dicts)."""
    return type(x) is dict or isinstance(x, Mapping)


def base64_text(data: Any) -> str | None:
    """Inline image data as base64 text: bytes are encoded, a string is kept, else None."""
    if isinstance(data, bytes | bytearray):
        return base64.b64encode(bytes(data)).decode("ascii")
    return data if isinstance(data, str) else None


def args_object(arguments: Any) -> Any:
    """Tool-call arguments as the object formats that take one (Anthropic, Gemini, Bedrock).

    A JSON string is parsed; text that is not JSON is kept as ``{"arguments": text}``
    and a JSON value that is not an object as ``{"value": v}`` (nothing dropped);
    ``None`` or an empty string is ``{}``; a mapping is returned as it is.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"arguments": arguments}
    if arguments is None:
        return {}
    return arguments if is_mapping(arguments) else {"value": arguments}


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
