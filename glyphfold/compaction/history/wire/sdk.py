"""SDK objects -> plain wire dicts (pydantic messages and blocks of the provider SDKs).

Harnesses keep what the SDK hands them: ``response.choices[0].message`` (openai,
litellm), ``response.content`` blocks (anthropic), ``response.output`` items
(openai Responses), ``types.Content`` (google-genai). :func:`plain_history` turns
such objects, at message level and inside a message's content list, into the
dicts the wire formats parse; histories of dicts pass through untouched (same
objects), and no SDK is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glyphfold.errors import HistoryFormatError

__all__ = ["is_sdk_object", "plain", "plain_history"]

_CONTENT_KEYS = ("content", "parts")


def is_sdk_object(x: Any) -> bool:
    """True for a pydantic model (or an object with ``to_dict``) standing for a wire dict."""
    t = type(x)
    if t is dict or t is list or t is str:
        return False
    return hasattr(x, "model_dump") or callable(getattr(x, "to_dict", None))


def plain(x: Any) -> Any:
    """The wire dict an SDK object stands for (nulls dropped: unset fields stay unset)."""
    d = x.model_dump(mode="python", exclude_none=True) if hasattr(x, "model_dump") else x.to_dict()
    if not isinstance(d, dict):
        msg = f"{type(x).__name__} does not dump to a message dict"
        raise HistoryFormatError(msg)
    module = type(x).__module__ or ""
    if module.startswith("anthropic") and d.get("type") == "message" and "role" in d:
        # a Messages API response: only role and content go back into a request
        return {"role": d["role"], "content": d.get("content", [])}
    if module.startswith("litellm") and not d.get("provider_specific_fields"):
        d.pop("provider_specific_fields", None)
    return d


def _plain_entry(m: Any) -> tuple[Any, bool]:
    # every entry of every history passes here: a dict (and its dict parts) is no SDK
    # object, tested without a call
    if type(m) is not dict:
        if is_sdk_object(m):
            return plain(m), True
        if not isinstance(m, Mapping):
            return m, False
    for key in _CONTENT_KEYS:
        c = m.get(key)
        if type(c) is list:
            for p in c:
                if type(p) is not dict and is_sdk_object(p):
                    out = dict(m)
                    out[key] = [plain(p) if is_sdk_object(p) else p for p in c]
                    return out, True
    return m, False


def plain_history(entries: Any) -> tuple[list[Any] | None, bool]:
    """(plain entries, converted?) of a list of wire entries; (None, False) when all plain."""
    out: list[Any] | None = None
    for i, m in enumerate(entries):
        p, changed = _plain_entry(m)
        if changed and out is None:
            out = list(entries[:i])
        if out is not None:
            out.append(p)
    return out, out is not None
