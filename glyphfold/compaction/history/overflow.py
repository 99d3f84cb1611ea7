"""Recognising a provider's "context window exceeded" error (SPEC §3.6).

Works on exception objects, on error bodies (dicts, JSON strings) and on plain
strings. An exception is an overflow by its type alone when a class of its MRO
(or of its cause's) is a framework's overflow error: litellm's
``ContextWindowExceededError``, LangChain's ``ContextOverflowError`` family,
Anthropic's ``RequestTooLargeError``, glyphfold's own ``ContextOverflowError``;
no SDK is imported for that. Otherwise its fields are read: SDK errors carry
``code``, ``body``, ``message``, ``status_code`` (openai / anthropic
``BadRequestError``), ``response`` (botocore ``ClientError``:
``ValidationException`` with the Bedrock text), ``details`` (google-genai
``ClientError`` 400s); causes are followed. Rate-limit and throttling errors that
mention tokens ("tokens per min", "too many tokens, please wait") are *not*
overflows: trimming would not help them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "OVERFLOW_CODES",
    "OVERFLOW_PATTERNS",
    "OVERFLOW_TYPE_NAMES",
    "is_context_overflow_error",
]

# exception class names that mean "the request exceeded the context window"
OVERFLOW_TYPE_NAMES = frozenset(
    {
        "ContextWindowExceededError",  # litellm
        "ContextOverflowError",  # langchain_core.exceptions (and subclasses), glyphfold
        "ContextLengthExceededError",
        "RequestTooLargeError",  # anthropic: HTTP 413 request_too_large
    }
)

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
_NOT_OVERFLOW = re.compile(
    r"rate.?limit|per min|\btpm\b|\brpm\b|quota|throttl|please wait|too many requests"
)


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
        for attr in ("code", "type", "message", "body", "error", "text", "response", "details"):
            v = getattr(obj, attr, None)
            if v is not None and not callable(v):
                yield from _strings(v, depth + 1)
        cause = obj.__cause__ or obj.__context__
        if cause is not None:
            yield from _strings(cause, depth + 1)
        return
    yield str(obj)


def _overflow_type(obj: Any, depth: int = 0) -> bool:
    if not isinstance(obj, BaseException) or depth > 6:
        return False
    if any(c.__name__ in OVERFLOW_TYPE_NAMES for c in type(obj).__mro__):
        return True
    cause = obj.__cause__ or obj.__context__
    return cause is not None and _overflow_type(cause, depth + 1)


def is_context_overflow_error(error_or_body: Any) -> bool:
    """True if the error says the request exceeded the model's context window.

    Recognises overflow exception types (litellm, LangChain, Anthropic 413), OpenAI
    (``context_length_exceeded``), Anthropic (``prompt is too long``), Bedrock
    (``Input is too long``), Gemini (``exceeds the maximum number of tokens``), and
    OpenAI-compatible servers (vLLM, llama.cpp, Ollama), from exceptions, dicts or
    strings.
    """
    if _overflow_type(error_or_body):
        return True
    texts = [t.lower() for t in _strings(error_or_body)]
    if any(_NOT_OVERFLOW.search(t) for t in texts):
        return False
    return any(t.strip() in OVERFLOW_CODES or _PATTERN.search(t) for t in texts)
