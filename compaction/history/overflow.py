"""Recognising a provider's "context window exceeded" error (SPEC §3.6).

Works on exception objects (SDK errors carry ``code``, ``body``, ``message``,
``status_code``; causes are followed), on error bodies (dicts, JSON strings)
and on plain strings. Rate-limit errors that mention tokens ("tokens per min")
are *not* overflows: trimming would not help them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["OVERFLOW_CODES", "OVERFLOW_PATTERNS", "is_context_overflow_error"]

# machine-readable codes/types some providers return
OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure OpenAI, many OpenAI-compatible servers
        "exceed_context_size_error",  # llama.cpp server
        "context_window_exceeded",
        "request_too_large",  # Anthropic 413: the request body is too large
        "string_above_max_length",
    }
)

# provider -> phrases of their overflow messages (lower-case regexes)
OVERFLOW_PATTERNS: dict[str, tuple[str, ...]] = {
    "openai": (
        r"maximum context length is \d+ tokens",
        r"context length exceeded",
        r"reduce the length of the messages",
    ),
    "anthropic": (
        r"prompt is too long",
        r"input length and `?max_tokens`? exceed context limit",
        r"exceeds? the context window",
    ),
    "gemini": (
        r"exceeds the maximum number of tokens",
        r"input token count .* exceeds",
    ),
    "vllm": (
        r"is too long and exceeds limit of \d+",
        r"however, you requested \d+ tokens",
        r"maximum model length",
    ),
    "llama.cpp": (
        r"exceeds the available context size",
        r"context shift is disabled",
        r"input is larger than the max context size",
    ),
    "ollama": (
        r"exceeds? (?:the )?(?:maximum )?context length",
        r"exceeded max context length",
    ),
    "mistral": (r"too large for model with \d+ maximum context length",),
    "bedrock": (r"input is too long for requested model",),
}

_PATTERN = re.compile("|".join(p for ps in OVERFLOW_PATTERNS.values() for p in ps))
_NOT_OVERFLOW = re.compile(r"rate.?limit|per min|\btpm\b|\brpm\b|quota")


def _strings(obj: Any, depth: int = 0) -> Iterable[str]:
    if depth > 6 or obj is None:
        return
    if isinstance(obj, str):
        yield obj
        s = obj.strip()
        if s[:1] in "{[":
            try:
                parsed = json.loads(s)
            except ValueError:
                return
            yield from _strings(parsed, depth + 1)
        return
    if isinstance(obj, bytes | bytearray):
        yield from _strings(bytes(obj).decode("utf-8", "replace"), depth + 1)
        return
    if isinstance(obj, Mapping):
        for v in obj.values():
            yield from _strings(v, depth + 1)
        return
    if isinstance(obj, list | tuple):
        for v in obj:
            yield from _strings(v, depth + 1)
        return
    if isinstance(obj, BaseException):
        yield str(obj)
        for attr in ("code", "type", "message", "body", "error", "text"):
            v = getattr(obj, attr, None)
            if v is not None and not callable(v):
                yield from _strings(v, depth + 1)
        cause = obj.__cause__ or obj.__context__
        if cause is not None:
            yield from _strings(cause, depth + 1)
        return
    yield str(obj)


def is_context_overflow_error(error_or_body: Any) -> bool:
    """True if the error says the request exceeded the model's context window.

    Recognises OpenAI (``context_length_exceeded``), Anthropic (``prompt is too
    long``), Gemini (``exceeds the maximum number of tokens``), and OpenAI-
    compatible servers (vLLM, llama.cpp, Ollama), from exceptions, dicts or strings.
    """
    texts = [t.lower() for t in _strings(error_or_body)]
    if any(_NOT_OVERFLOW.search(t) for t in texts):
        return False
    return any(t.strip() in OVERFLOW_CODES or _PATTERN.search(t) for t in texts)
