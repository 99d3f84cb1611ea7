"""Recognising provider context-overflow errors (SPEC §3.6)."""

from __future__ import annotations

import json

import pytest
from core_histories import snapshot

from glyphfold.compaction.history.overflow import is_context_overflow_error

OVERFLOWS = [
    # OpenAI
    {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 130512 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    {"error": {"code": "context_length_exceeded", "message": "Input too long"}},
    # Anthropic
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 215462 tokens > 200000 maximum",
        },
    },
    "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000",
    # Gemini
    {
        "error": {
            "code": 400,
            "message": "The input token count (1200000) exceeds the maximum number of "
            "tokens allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    },
    # vLLM
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(4000 in the messages, 1000 in the completion).",
    {
        "object": "error",
        "message": "Input prompt (9000 tokens) is too long and exceeds limit of 8192",
        "code": 400,
    },
    # llama.cpp server
    {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
        }
    },
    # Ollama
    {"error": "the input length exceeds the context length"},
    # JSON text body
    json.dumps({"error": {"code": "context_length_exceeded"}}),
]

NOT_OVERFLOWS = [
    "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): "
    "Limit 30000, Requested 50000.",
    {
        "error": {
            "type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit",
        }
    },
    {"error": {"type": "overloaded_error", "message": "Overloaded"}},
    "connection reset by peer",
    {"error": {"code": "invalid_api_key"}},
    None,
]


@pytest.mark.parametrize("body", OVERFLOWS)
def test_overflow_bodies_are_recognised(body):
    before = snapshot(body)
    assert is_context_overflow_error(body)
    assert body == before


@pytest.mark.parametrize("body", NOT_OVERFLOWS)
def test_other_errors_are_not_overflows(body):
    before = snapshot(body)
    assert not is_context_overflow_error(body)
    assert body == before


class FakeAPIStatusError(Exception):
    """Shaped like the OpenAI/Anthropic SDK errors: message, status_code, body."""

    def __init__(self, message, *, body, status_code=400):
        super().__init__(message)
        self.message = message
        self.body = body
        self.status_code = status_code


def test_exceptions_and_their_causes():
    body = {
        "type": "invalid_request_error",
        "message": "prompt is too long: 300000 tokens > 200000 maximum",
    }
    assert is_context_overflow_error(FakeAPIStatusError("Error code: 400", body=body))
    try:
        try:
            raise FakeAPIStatusError("Error code: 400", body={"code": "context_length_exceeded"})
        except FakeAPIStatusError as inner:
            raise RuntimeError("agent step failed") from inner
    except RuntimeError as outer:
        assert is_context_overflow_error(outer)
    assert not is_context_overflow_error(
        FakeAPIStatusError("Error code: 500", body={"message": "boom"})
    )
