"""A scripted model behind a loopback fake upstream, for the agent-loop benchmark (issue 19).

Speaks OpenAI Chat Completions (streamed or not), OpenAI Responses and Anthropic
Messages (streamed or not), answers with tool calls, enforces a context window like the
real APIs (for Anthropic: input + ``max_tokens`` <= window) and prices every request
with Anthropic's prompt-cache prices: the part of a request that repeats the previous
request of the same run (its leading bytes, ``cache_control`` markers aside) is a cache
read (0.1x the base input price), the rest a cache write (1.25x); output tokens cost 5x.

The script: the request header ``x-bench-step: k`` says which step the client is at; the
model answers step k < ``x-bench-steps`` with one ``bash`` tool call and the last step
with a final text. A request whose last user message starts with ``SUMMARIZE`` (the
harness compacting by itself) is answered with a ~2,000-token summary.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.serve.fake_upstream import _png_size  # noqa: E402

CACHE_READ, CACHE_WRITE, OUTPUT = 0.1, 1.25, 5.0  # x the base input price (Anthropic)
MIN_CACHED = 1024  # Anthropic caches no shorter prefix
SUMMARY_TOKENS = 2_000
_MARKERS = ("cache_control", "prompt_cache_breakpoint")


_SKIP = frozenset(
    {
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
        "cache_control",
    }
)


def image_tokens(width: int, height: int, provider: str) -> int:
    """What the provider bills for one image (its documented formula)."""
    if provider == "anthropic":  # pixels / 750, after a fit into 1568 px on the long side
        scale = min(1.0, 1568 / max(width, height))
        return math.ceil(width * scale * height * scale / 750)
    # OpenAI detail=high: fit into 2048x2048, shortest side to 768, 512-px tiles
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def count_tokens(body: dict[str, Any], provider: str = "anthropic") -> int:
    """~4 chars/token of all text, images by the provider's formula, 4 per message."""
    chars = 0
    images = 0

    def walk(x: Any) -> None:
        nonlocal chars, images
        if isinstance(x, dict):
            url = x.get("url") if isinstance(x.get("url"), str) else None
            iu = x.get("image_url")
            if isinstance(iu, dict) and isinstance(iu.get("url"), str):
                url = iu["url"]
            elif isinstance(iu, str):
                url = iu
            src = x.get("source") if isinstance(x.get("source"), dict) else None
            data = None
            if url and url.startswith("data:image"):
                data = url.split(",", 1)[1]
            elif src is not None and isinstance(src.get("data"), str):
                data = src["data"]
            if data is not None:
                size = _png_size(data)
                images += image_tokens(*size, provider) if size else 1600
                return
            for k, v in x.items():
                if k not in _SKIP:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str):
            chars += len(x)

    items = body.get("messages", body.get("input", []))
    for part in (items, body.get("system", ""), body.get("instructions", ""), body.get("tools")):
        walk(part or "")
    n = len(items) if isinstance(items, list) else 1
    return math.ceil(chars / 4) + 4 * n + images


def _strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in _MARKERS}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def prompt_text(body: dict[str, Any]) -> str:
    """What a prompt cache compares: tools, system, messages, in order, markers aside."""
    parts = [
        body.get("tools", []),
        body.get("system", ""),
        body.get("instructions", ""),
        body.get("messages", body.get("input", [])),
    ]
    return json.dumps(_strip(parts), ensure_ascii=False, separators=(",", ":"))


def shared_prefix(a: str, b: str) -> int:
    """Length of the common leading part of ``a`` and ``b``."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search on slices (the strings are long)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class Priced:
    """One request as the fake priced it."""

    tokens: int
    cached: int
    share: float  # leading share repeating the previous request of the run
    output: int
    accepted: bool

    @property
    def cost(self) -> float:
        if not self.accepted:
            return 0.0
        return (
            self.cached * CACHE_READ
            + (self.tokens - self.cached) * CACHE_WRITE
            + (self.output * OUTPUT)
        )


@dataclass
class Run:
    requests: list[Priced] = field(default_factory=list)
    last: str = ""


class LoopUpstream:
    """The fake upstream's state: a window per model, the priced requests per run."""

    def __init__(self, window: int) -> None:
        global _UPSTREAM  # the script of a real harness counts its run's calls
        _UPSTREAM = self
        self.window = window
        self.runs: dict[str, Run] = {}
        self._lock = threading.Lock()

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/runs/{run}", self._run, methods=["GET"]),
            ]
        )

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"data": [{"id": "fake-model", "object": "model"}]})

    async def _run(self, request: Request) -> Response:
        run = self.runs.get(request.path_params["run"], Run())
        return JSONResponse(
            [
                {
                    "tokens": p.tokens,
                    "cached": p.cached,
                    "share": p.share,
                    "output": p.output,
                    "accepted": p.accepted,
                    "cost": p.cost,
                }
                for p in run.requests
            ]
        )

    # ------------------------------------------------------------------ script

    def _take(self, request: Request, body: dict[str, Any], reserve: int) -> tuple[int, bool]:
        provider = "anthropic" if request.url.path == "/v1/messages" else "openai"
        tokens = count_tokens(body, provider)
        ok = tokens + reserve <= self.window
        text = prompt_text(body)
        key = _run_key(request, body)
        with self._lock:
            run = self.runs.setdefault(key, Run())
            n = shared_prefix(run.last, text) if run.last else 0
            share = n / max(1, len(text))
            cached = int(tokens * share) if ok else 0
            if cached < MIN_CACHED:
                cached = 0
            out = _reply_tokens(request, body) if ok else 0
            run.requests.append(Priced(tokens, cached, share, out, ok))
            if ok:
                run.last = text
        return tokens, ok

    # ------------------------------------------------------------------ OpenAI chat

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        tokens, ok = self._take(request, body, 0)
        if not ok:
            msg = (
                f"This model's maximum context length is {self.window} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
            )
            err = {"message": msg, "type": "invalid_request_error", "param": "messages"}
            err["code"] = "context_length_exceeded"
            return JSONResponse({"error": err}, 400)
        kind, payload = _script(request, body)
        usage = {"prompt_tokens": tokens, "completion_tokens": 10, "total_tokens": tokens + 10}
        if body.get("stream"):
            return StreamingResponse(_chat_stream(kind, payload), media_type="text/event-stream")
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if kind == "call":
            message["tool_calls"] = [
                {
                    "id": payload["id"],
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps(payload["args"])},
                }
            ]
        else:
            message["content"] = payload
        return JSONResponse(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if kind == "call" else "stop",
                    }
                ],
                "usage": usage,
            }
        )

    # ------------------------------------------------------------------ Responses

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        tokens, ok = self._take(request, body, 0)
        if not ok:
            msg = (
                f"Your input exceeds the context window of this model "
                f"({tokens} tokens > {self.window})."
            )
            err = {
                "message": msg,
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
            return JSONResponse({"error": err}, 400)
        kind, payload = _script(request, body)
        if kind == "call":
            item: dict[str, Any] = {
                "type": "function_call",
                "id": "fc_" + payload["id"],
                "call_id": payload["id"],
                "name": "bash",
                "arguments": json.dumps(payload["args"]),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": "msg_bench",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": payload, "annotations": []}],
            }
        return JSONResponse(
            {
                "id": "resp_bench",
                "object": "response",
                "created_at": 0,
                "model": body.get("model"),
                "status": "completed",
                "output": [item],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {
                    "input_tokens": tokens,
                    "output_tokens": 10,
                    "total_tokens": tokens + 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        )

    # ------------------------------------------------------------------ Anthropic

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        reserve = int(body.get("max_tokens", 0))
        tokens, ok = self._take(request, body, reserve)
        if not ok:
            if tokens > self.window:
                msg = f"prompt is too long: {tokens} tokens > {self.window} maximum"
            else:
                msg = (
                    f"input length and `max_tokens` exceed context limit: {tokens} + "
                    f"{reserve} > {self.window}, decrease input length or `max_tokens` and "
                    "try again"
                )
            err = {"type": "invalid_request_error", "message": msg}
            return JSONResponse({"type": "error", "error": err}, 400)
        kind, payload = _script(request, body)
        if kind == "call":
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": payload["id"],
                "name": "bash",
                "input": payload["args"],
            }
        else:
            block = {"type": "text", "text": payload}
        stop = "tool_use" if kind == "call" else "end_turn"
        if body.get("stream"):
            return StreamingResponse(
                _messages_stream(block, stop, tokens), media_type="text/event-stream"
            )
        return JSONResponse(
            {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": tokens, "output_tokens": 10},
            }
        )


def _last_user_text(body: dict[str, Any]) -> str:
    items = body.get("messages", body.get("input", []))
    for m in reversed(items if isinstance(items, list) else []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return " ".join(
                    str(p.get("text", "")) for p in c if isinstance(p, dict) and "text" in p
                )
        if (isinstance(m, dict) and m.get("role") in ("assistant", "tool")) or (
            isinstance(m, dict) and m.get("type") in ("function_call", "function_call_output")
        ):
            return ""
    return ""


def _summary() -> str:
    words = "the agent read modules, ran tests, found the failing parser case and edited it; "
    return ("Summary of the work so far: " + words * (SUMMARY_TOKENS * 4 // len(words)))[
        : SUMMARY_TOKENS * 4
    ]


def _run_key(request: Request, body: dict[str, Any]) -> str:
    """The run a request belongs to: ``x-bench-run``, else its model (a real harness)."""
    return request.headers.get("x-bench-run") or f"model:{body.get('model')}"


_HARNESS_STEPS = 30
# a real harness (mini-swe-agent) runs what the model says: a deterministic ~12k-char output
_BIG_OUTPUT = (
    'python3 -c "import random; r = random.Random({k}); '
    "w = 'parser token quote nested escape buffer state index value error line'.split(); "
    "print(chr(10).join(' '.join(r.choice(w) for _ in range(12)) for _ in range(190)))\""
)


def _script(request: Request, body: dict[str, Any]) -> tuple[str, Any]:
    """("call", {id, args}) for a tool step, ("text", str) for the answer or a summary."""
    if _last_user_text(body).startswith("SUMMARIZE"):
        return "text", _summary()
    if "x-bench-step" not in request.headers:
        # a real harness: the step is the number of model calls of its run so far
        run = _UPSTREAM.runs.get(_run_key(request, body)) if _UPSTREAM else None
        k = len([p for p in run.requests if p.accepted]) - 1 if run else 0
        if k >= _HARNESS_STEPS:
            cmd = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        else:
            cmd = _BIG_OUTPUT.format(k=k)
        return "call", {"id": f"call_{k}", "args": {"command": cmd}}
    step = int(request.headers.get("x-bench-step", "0"))
    steps = int(request.headers.get("x-bench-steps", "30"))
    if step >= steps:
        return "text", "All done: the parser handles the case and the tests pass."
    return "call", {"id": f"call_{step}", "args": {"cmd": f"cat src/module_{step}.py"}}


_UPSTREAM: LoopUpstream | None = None


def _reply_tokens(request: Request, body: dict[str, Any]) -> int:
    return SUMMARY_TOKENS if _last_user_text(body).startswith("SUMMARIZE") else 30


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


async def _chat_stream(kind: str, payload: Any) -> Any:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0}
    base["model"] = "fake-model"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": None if kind == "call" else ""})
    if kind == "call":
        args = json.dumps(payload["args"])
        call = {"index": 0, "id": payload["id"], "type": "function"}
        call["function"] = {"name": "bash", "arguments": ""}
        yield chunk({"tool_calls": [call]})
        for i in range(0, len(args), 16):
            part = {"index": 0, "function": {"arguments": args[i : i + 16]}}
            yield chunk({"tool_calls": [part]})
        yield chunk({}, "tool_calls")
    else:
        for i in range(0, len(payload), 64):
            yield chunk({"content": payload[i : i + 64]})
        yield chunk({}, "stop")
    yield b"data: [DONE]\n\n"


async def _messages_stream(block: dict[str, Any], stop: str, tokens: int) -> Any:
    msg = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": tokens, "output_tokens": 1},
    }
    yield _sse({"type": "message_start", "message": msg}, "message_start")
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        yield _sse(
            {"type": "content_block_start", "index": 0, "content_block": start},
            "content_block_start",
        )
        args = json.dumps(block["input"])
        for i in range(0, len(args), 16):
            delta = {"type": "input_json_delta", "partial_json": args[i : i + 16]}
            yield _sse(
                {"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"
            )
    else:
        yield _sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        )
        text = block["text"]
        for i in range(0, len(text), 64):
            delta = {"type": "text_delta", "text": text[i : i + 64]}
            yield _sse(
                {"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"
            )
    yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    yield _sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
        "message_delta",
    )
    yield _sse({"type": "message_stop"}, "message_stop")


def main() -> None:
    import argparse

    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--window", type=int, required=True)
    args = ap.parse_args()
    uvicorn.run(
        LoopUpstream(args.window).app(),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
