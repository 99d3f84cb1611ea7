"""A fake OpenAI + Anthropic upstream for the proxy's tests, served on loopback.

It enforces a context window with its own count (independent of glyphfold's
estimator: ~4 characters per token of every string, PNG images priced by their
pixel size) and answers an oversized request with the provider's real overflow
error body and status. Faults are asked for per request with the
``x-fake-fault`` header (the proxy forwards unknown headers unchanged):
``die-mid-stream``, ``stall-mid-stream``, ``slow``, ``malformed``, ``500``,
``overflow-event`` (a 200 stream whose first event is an overflow error) and
``drip`` (a slow stream, for client disconnects), ``overflow-text`` (a normal 200
stream whose MODEL TEXT quotes an overflow message) and ``gzip-bomb`` (a gzip reply that inflates
to 64 MB) and ``overflow-at:N`` (the
provider's overflow error stating a window of N, whatever the request's size).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import math
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["FakeUpstream", "Received"]


@dataclass
class Received:
    """One request the fake got: what it counted and whether it fit."""

    path: str
    model: str | None
    tokens: int
    accepted: bool
    headers: dict[str, str]
    body: bytes


def _png_size(data_b64: str) -> tuple[int, int] | None:
    try:
        head = base64.b64decode(data_b64[:64] + "=" * (-len(data_b64[:64]) % 4))
    except ValueError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def count_tokens(body: dict[str, Any]) -> int:
    """The fake's own count: ~4 chars/token of all text, images as each provider bills
    them (OpenAI 32-px patches, Anthropic area / 750), 4 per message."""
    chars = 0
    images = 0

    def walk(x: Any) -> None:
        nonlocal chars, images
        if isinstance(x, dict):
            url = x.get("url") if isinstance(x.get("url"), str) else None
            if url is None and isinstance(x.get("image_url"), str):  # Responses input_image
                url = x["image_url"]
            src = x.get("source") if isinstance(x.get("source"), dict) else None
            data = None
            if url and url.startswith("data:image"):
                data = url.split(",", 1)[1]
            elif src is not None and isinstance(src.get("data"), str):
                data = src["data"]
            if data is not None:
                size = _png_size(data)
                if size is None:
                    images += 1600
                elif url:  # OpenAI's 32-px patch models (detail: high): one token a patch
                    images += math.ceil(size[0] / 32) * math.ceil(size[1] / 32)
                else:  # Anthropic: width x height / 750
                    images += math.ceil(size[0] * size[1] / 750)
                return
            for k, v in x.items():
                if k not in (
                    "type",
                    "role",
                    "model",
                    "stream",
                    "max_tokens",
                    "id",
                    "tool_call_id",
                    "tool_use_id",
                    "detail",
                    "media_type",
                    "call_id",
                ):
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str):
            chars += len(x)

    items = body.get("messages", body.get("input", []))
    walk(items)
    walk(body.get("system", ""))
    walk(body.get("instructions", ""))
    walk(body.get("tools", []))
    return math.ceil(chars / 4) + 4 * (len(items) if isinstance(items, list) else 1) + images


def _openai_overflow(window: int, tokens: int) -> dict[str, Any]:
    return {
        "error": {
            "message": (
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _anthropic_overflow(window: int, tokens: int) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {tokens} tokens > {window} maximum",
        },
        "request_id": "req_011CFakeOverflow",
    }


_BOMB: list[bytes] = []


def _bomb() -> bytes:
    if not _BOMB:
        _BOMB.append(gzip.compress(b"0" * (64 * 1024 * 1024), compresslevel=9))
    return _BOMB[0]


@dataclass
class FakeUpstream:
    """The fake's state: windows per model (default ``window``), what it received."""

    window: int = 20_000
    windows: dict[str, int] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    streams_open: int = 0
    streams_closed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def window_of(self, model: str | None) -> int:
        return self.windows.get(model or "", self.window)

    def accepted(self) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.accepted]

    def clear(self) -> None:
        with self.lock:
            self.received.clear()

    # -- the app -------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/echo", self._echo, methods=["POST"]),
            ]
        )

    async def _take(self, request: Request) -> tuple[dict[str, Any], int, int, str]:
        raw = await request.body()
        body = json.loads(raw)
        tokens = count_tokens(body)
        window = self.window_of(body.get("model"))
        fault = request.headers.get("x-fake-fault", "")
        with self.lock:
            self.received.append(
                Received(
                    request.url.path,
                    body.get("model"),
                    tokens,
                    tokens <= window,
                    dict(request.headers),
                    raw,
                )
            )
        if fault == "slow":
            await asyncio.sleep(2)
        return body, tokens, window, fault

    async def _models(self, request: Request) -> Response:
        with self.lock:
            self.received.append(Received("/v1/models", None, 0, True, dict(request.headers), b""))
        return JSONResponse({"object": "list", "data": [{"id": "gpt-fake", "object": "model"}]})

    async def _echo(self, request: Request) -> Response:
        """A route glyphfold does not compact: what arrived, as it arrived (passthrough)."""
        raw = await request.body()
        with self.lock:
            self.received.append(Received("/v1/echo", None, 0, True, dict(request.headers), raw))
        return JSONResponse({"bytes": len(raw)})

    async def _chat(self, request: Request) -> Response:
        body, tokens, window, fault = await self._take(request)
        if fault == "gzip-bomb":  # a 200 reply of 64 MB of zeros in ~64 KB of gzip
            return Response(
                _bomb(), 200, media_type="application/json", headers={"content-encoding": "gzip"}
            )
        if fault == "500":
            return JSONResponse(
                {
                    "error": {
                        "message": "The server had an error",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
                500,
            )
        if fault == "400":
            return JSONResponse(
                {
                    "error": {
                        "message": "Invalid value for 'temperature'",
                        "type": "invalid_request_error",
                        "param": "temperature",
                        "code": None,
                    }
                },
                400,
            )
        if fault == "malformed":
            return Response(
                b'{"id": "chatcmpl-1", "choices": [', 200, media_type="application/json"
            )
        if fault.startswith("overflow-at:"):
            return JSONResponse(_openai_overflow(int(fault.split(":")[1]), tokens), 400)
        if tokens > window and fault != "overflow-event":
            return JSONResponse(_openai_overflow(window, tokens), 400)
        text = f"ok {tokens} tokens"
        if body.get("stream"):
            return StreamingResponse(
                self._chat_stream(body, text, tokens, window, fault), media_type="text/event-stream"
            )
        return JSONResponse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": tokens,
                    "completion_tokens": 3,
                    "total_tokens": tokens + 3,
                },
            }
        )

    async def _chat_stream(
        self, body: dict[str, Any], text: str, tokens: int, window: int, fault: str
    ) -> Any:
        if fault == "overflow-event" and tokens > window:
            yield f"data: {json.dumps(_openai_overflow(window, tokens))}\n\n".encode()
            return
        self.streams_open += 1
        try:
            base = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model"),
            }
            words = text.split(" ") + [f"w{i}" for i in range(20 if fault == "drip" else 0)]
            if fault == "overflow-text":  # the model QUOTES an overflow error: not one
                words = ["The error said: This model's maximum context length is 8192 tokens."]
                words += [f"w{i}" for i in range(19)]
            for i, w in enumerate(words):
                delta = {"role": "assistant", "content": w} if i == 0 else {"content": " " + w}
                chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                yield f"data: {json.dumps(chunk)}\n\n".encode()
                if fault == "die-mid-stream" and i == 1:
                    raise RuntimeError("fake upstream killed mid-stream")
                if fault == "stall-mid-stream" and i == 1:
                    await asyncio.sleep(2)
                if fault == "drip":
                    await asyncio.sleep(0.05)
            end = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            yield f"data: {json.dumps(end)}\n\n".encode()
            yield b"data: [DONE]\n\n"
        finally:
            self.streams_closed += 1

    async def _messages(self, request: Request) -> Response:
        body, tokens, window, fault = await self._take(request)
        if fault == "500":
            return JSONResponse(
                {
                    "type": "error",
                    "error": {"type": "api_error", "message": "Internal server error"},
                },
                500,
            )
        if fault == "malformed":
            return Response(b'{"id": "msg_1", "content": [', 200, media_type="application/json")
        if tokens > window and fault != "overflow-event":
            return JSONResponse(_anthropic_overflow(window, tokens), 400)
        text = f"ok {tokens} tokens"
        if body.get("stream"):
            return StreamingResponse(
                self._messages_stream(body, text, tokens, window, fault),
                media_type="text/event-stream",
            )
        return JSONResponse(
            {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": tokens, "output_tokens": 3},
            }
        )

    async def _messages_stream(
        self, body: dict[str, Any], text: str, tokens: int, window: int, fault: str
    ) -> Any:
        def ev(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        if fault == "overflow-event" and tokens > window:
            yield ev("error", _anthropic_overflow(window, tokens))
            return
        self.streams_open += 1
        try:
            yield ev(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model"),
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": tokens, "output_tokens": 1},
                    },
                },
            )
            yield ev(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            words = text.split(" ") + [f"w{i}" for i in range(20 if fault == "drip" else 0)]
            for i, w in enumerate(words):
                yield ev(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": w if i == 0 else " " + w},
                    },
                )
                if fault == "die-mid-stream" and i == 1:
                    raise RuntimeError("fake upstream killed mid-stream")
                if fault == "stall-mid-stream" and i == 1:
                    await asyncio.sleep(2)
                if fault == "drip":
                    await asyncio.sleep(0.05)
            yield ev("content_block_stop", {"type": "content_block_stop", "index": 0})
            yield ev(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": len(words)},
                },
            )
            yield ev("message_stop", {"type": "message_stop"})
        finally:
            self.streams_closed += 1

    async def _count(self, request: Request) -> Response:
        _body, tokens, _window, _fault = await self._take(request)
        return JSONResponse({"input_tokens": tokens})

    async def _responses(self, request: Request) -> Response:
        body, tokens, window, _fault = await self._take(request)
        if tokens > window:
            return JSONResponse(_openai_overflow(window, tokens), 400)
        return JSONResponse(
            {
                "id": "resp_fake",
                "object": "response",
                "status": "completed",
                "model": body.get("model"),
                "output": [
                    {
                        "type": "message",
                        "id": "msg_1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [
                            {
                                "type": "output_text",
                                "text": f"ok {tokens} tokens",
                                "annotations": [],
                            }
                        ],
                    }
                ],
                "usage": {"input_tokens": tokens, "output_tokens": 3, "total_tokens": tokens + 3},
            }
        )
