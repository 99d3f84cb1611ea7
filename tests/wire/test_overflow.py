"""Overflow errors recognised by type as well as by text, from the real SDK exceptions."""

from __future__ import annotations

import pytest

import glyphfold
from glyphfold.compaction.history.overflow import is_context_overflow_error


def _http_error(module, cls_name, status, body):
    """An SDK HTTP error as the SDK raises it (its own response/request types)."""
    from sdk_mocks import _sdk_http

    http = _sdk_http(module)
    request = http.Request("POST", "http://mock.local/v1")
    response = http.Response(status, json=body, request=request)
    cls = getattr(module, cls_name)
    return cls(str(body), response=response, body=body)


def test_langchain_context_overflow_family_by_type():
    from langchain_core.exceptions import ContextOverflowError

    class ProviderOverflow(ContextOverflowError):
        pass

    assert is_context_overflow_error(ContextOverflowError("nothing in the text"))
    assert is_context_overflow_error(ProviderOverflow("x"))
    try:
        try:
            raise ProviderOverflow("x")
        except ProviderOverflow as inner:
            raise RuntimeError("the agent failed") from inner
    except RuntimeError as outer:
        assert is_context_overflow_error(outer)


def test_openai_bad_request_by_code():
    import openai

    body = {"error": {"code": "context_length_exceeded", "message": "too long", "type": "x"}}
    assert is_context_overflow_error(_http_error(openai, "BadRequestError", 400, body))
    body = {"error": {"code": "invalid_image", "message": "bad image", "type": "x"}}
    assert not is_context_overflow_error(_http_error(openai, "BadRequestError", 400, body))


def test_anthropic_bad_request_and_request_too_large():
    import anthropic

    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    assert is_context_overflow_error(_http_error(anthropic, "BadRequestError", 400, body))
    big = {"type": "error", "error": {"type": "request_too_large", "message": "Request too big"}}
    assert is_context_overflow_error(_http_error(anthropic, "RequestTooLargeError", 413, big))
    other = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad role"}}
    assert not is_context_overflow_error(_http_error(anthropic, "BadRequestError", 400, other))


def test_botocore_validation_exception():
    from botocore.exceptions import ClientError

    err = ClientError(
        {
            "Error": {
                "Code": "ValidationException",
                "Message": "Input is too long for requested model.",
            }
        },
        "Converse",
    )
    assert is_context_overflow_error(err)
    throttled = ClientError(
        {
            "Error": {
                "Code": "ThrottlingException",
                "Message": "Too many tokens, please wait before trying again.",
            }
        },
        "Converse",
    )
    assert not is_context_overflow_error(throttled)


def test_google_genai_client_error_400():
    from google.genai import errors

    body = {
        "error": {
            "code": 400,
            "message": "The input token count (1200000) exceeds the maximum number of tokens "
            "allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    }
    assert is_context_overflow_error(errors.ClientError(400, body))
    bad = {"error": {"code": 400, "message": "Invalid JSON payload", "status": "INVALID_ARGUMENT"}}
    assert not is_context_overflow_error(errors.ClientError(400, bad))


@pytest.mark.parametrize("name", ["ContextOverflowError"])
def test_glyphfold_own_overflow(name):
    assert is_context_overflow_error(getattr(glyphfold, name)("does not fit"))
