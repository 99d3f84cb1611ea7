"""The provider SDKs' own request building against mock transports: nothing is sent.

Each helper builds a real SDK client whose transport answers locally, calls the
SDK with a wire history, and returns the JSON body the SDK would have sent (after
its own validation and serialisation).
"""

from __future__ import annotations

import json
from typing import Any

import httpx


class Capture:
    """An httpx transport handler that records request bodies and answers ``reply``."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self._http: Any = httpx
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content or b"{}"))
        self.paths.append(request.url.path)
        return self._http.Response(200, json=self.reply)

    def client(self, http: Any = httpx) -> Any:
        """A client of ``http`` (httpx, or httpx2 for the SDKs built on it)."""
        self._http = http
        return http.Client(transport=http.MockTransport(self))

    def async_client(self, http: Any = httpx) -> Any:
        self._http = http
        return http.AsyncClient(transport=http.MockTransport(self))


RESPONSE_REPLY = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-5",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_r",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
ANTHROPIC_REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
GEMINI_REPLY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}


def _sdk_http(module: Any) -> Any:
    """The HTTP package an SDK is built on (httpx, or httpx2 in newer releases)."""
    import importlib
    import sys

    base = sys.modules[module.__name__ + "._base_client"]
    return importlib.import_module("httpx2") if hasattr(base, "httpx2") else httpx


def openai_client(capture: Capture) -> Any:
    import openai

    http = capture.client(_sdk_http(openai))
    return openai.OpenAI(
        api_key="test", base_url="http://mock.local/v1", http_client=http, max_retries=0
    )


def anthropic_client(capture: Capture) -> Any:
    import anthropic

    http = capture.client(_sdk_http(anthropic))
    return anthropic.Anthropic(
        api_key="test", base_url="http://mock.local", http_client=http, max_retries=0
    )


def genai_client(capture: Capture) -> Any:
    from google import genai
    from google.genai import types

    return genai.Client(
        api_key="test",
        http_options=types.HttpOptions(
            base_url="http://mock.local/",
            httpx_client=capture.client(),
            httpx_async_client=capture.async_client(),
        ),
    )


def send_responses(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON the openai SDK builds for ``responses.create(**body)``."""
    cap = Capture(RESPONSE_REPLY)
    openai_client(cap).responses.create(**body)
    return cap.bodies[-1]


def send_gemini(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON google-genai builds for ``models.generate_content`` of a request body."""
    from google.genai import types

    cap = Capture(GEMINI_REPLY)
    config = dict(body.get("config") or {})
    if "system_instruction" in body:
        config["system_instruction"] = body["system_instruction"]
    genai_client(cap).models.generate_content(
        model=body.get("model", "gemini-2.5-flash"),
        contents=[types.Content.model_validate(c) for c in body["contents"]],
        config=types.GenerateContentConfig.model_validate(config),
    )
    return cap.bodies[-1]


def bedrock_client(reply: dict[str, Any], operation: str, sent: list[dict[str, Any]]) -> Any:
    """A boto3 bedrock-runtime client whose ``operation`` answers ``reply`` locally."""
    import boto3
    from botocore.awsrequest import AWSResponse

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )

    class _Raw:
        def stream(self, **_: Any) -> Any:
            yield b""

    def before_send(request: Any, **_: Any) -> AWSResponse:
        sent.append(json.loads(request.body))
        resp = AWSResponse(request.url, 200, {"content-type": "application/json"}, _Raw())
        resp._content = json.dumps(reply).encode()
        return resp

    client.meta.events.register(f"before-send.bedrock-runtime.{operation}", before_send)
    return client


CONVERSE_REPLY = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    "metrics": {"latencyMs": 1},
}


def send_bedrock(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON botocore builds (after its parameter validation) for ``converse(**kwargs)``."""
    sent: list[dict[str, Any]] = []
    bedrock_client(CONVERSE_REPLY, "Converse", sent).converse(**kwargs)
    return sent[-1]
