"""A scripted model behind a loopback fake upstream, for the agent-loop benchmark (issue 19).

Speaks OpenAI Chat Completions (streamed or not), OpenAI Responses and Anthropic
Messages (streamed or not), answers with tool calls, enforces a context window like the
real APIs (for Anthropic: input + ``max_tokens`` <= window) and prices every request
with Anthropic's prompt-cache prices (:class:`Pricer`), the way each provider caches:

- Anthropic Messages: only at ``cache_control`` breakpoints. The prompt is a row of
  blocks (each tool, each system block, each message's content blocks); a breakpoint
  reads the longest prefix ending at one of the ~20 block boundaries before it that an
  earlier request of the run wrote (cache read, 0.1x the base input price); the
  request then writes the prefix up to its last breakpoint (cache write, 1.25x, only
  the part not read); what follows the last breakpoint is plain input (1x). Prefixes
  under 1,024 tokens are not cached. Markers are not content (a moved marker still
  hits). Images cost width x height / 750 tokens (after the fit into 1,568 px).
- OpenAI (Chat Completions, Responses): automatic prefix caching, no markers: the
  longest block prefix any earlier request of the run sent is a cache read; the rest
  is priced as a cache write (1.25x: as if an Anthropic harness marked the end of
  every request), so the two APIs' numbers compare. Images by OpenAI's patch formula
  (gpt-5.4, ``detail: high``: 32-px patches, at most 2,500: a 1600x1600 page is 2,500).

Output tokens cost 5x. The repeated share of a request: the tokens of its leading
blocks that repeat the previous request's, over its tokens.

The script: the request header ``x-bench-step: k`` says which step the client is at; the
model answers step k < ``x-bench-steps`` with one ``bash`` tool call and the last step
with a final text. A request whose last user message starts with ``SUMMARIZE`` (the
harness compacting by itself) is answered with a ~2,000-token summary.
"""

from __future__ import annotations

import hashlib
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
LOOKBACK = 20  # blocks a breakpoint looks back for an earlier entry (Anthropic)
MAX_BREAKPOINTS = 4  # Anthropic refuses a request with more cache_control blocks
PATCH_BUDGET = 2_500  # OpenAI patch models, detail: high
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
    # OpenAI patch models (gpt-5.4, detail: high): 32-px patches, a 2,500-patch budget
    # within 2048 px; over the budget the image is shrunk by sqrt(32*32*budget / (w*h)),
    # then again so that whole patches span the limiting side ("Images and vision")
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    if math.ceil(w / 32) * math.ceil(h / 32) > PATCH_BUDGET:
        shrink = math.sqrt(32 * 32 * PATCH_BUDGET / (w * h))
        w, h = w * shrink, h * shrink
        fit = min(math.floor(w / 32) / (w / 32), math.floor(h / 32) / (h / 32))
        w, h = w * fit, h * fit
    return math.ceil(w / 32) * math.ceil(h / 32)


def count_tokens(body: dict[str, Any], provider: str = "anthropic") -> int:
    """~4 chars/token of all text, images by the provider's formula, 4 per message."""
    chars = images = 0
    items = body.get("messages", body.get("input", []))
    for part in (items, body.get("system", ""), body.get("instructions", ""), body.get("tools")):
        c, i = _measure(part or "", provider)
        chars += c
        images += i
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
    cached: int  # cache read
    share: float  # leading share repeating the previous request of the run
    output: int
    accepted: bool
    written: int | None = None  # cache write (None: all that is not read)
    image_tokens: int = 0

    @property
    def uncached(self) -> int:
        """Plain input tokens (1x): after the last breakpoint."""
        written = self.tokens - self.cached if self.written is None else self.written
        return max(0, self.tokens - self.cached - written)

    @property
    def cost(self) -> float:
        if not self.accepted:
            return 0.0
        written = self.tokens - self.cached if self.written is None else self.written
        return (
            self.cached * CACHE_READ + written * CACHE_WRITE + self.uncached + self.output * OUTPUT
        )

    def row(self) -> dict[str, Any]:
        """The JSON the fake serves for this request (``/runs/{run}``)."""
        written = self.tokens - self.cached if self.written is None else self.written
        return {
            "tokens": self.tokens,
            "cached": self.cached,
            "written": written if self.accepted else 0,
            "uncached": self.uncached if self.accepted else 0,
            "image_tokens": self.image_tokens,
            "share": self.share,
            "output": self.output,
            "accepted": self.accepted,
            "cost": self.cost,
        }


@dataclass
class _Block:
    digest: bytes  # chained: names this block and every block before it
    end: float  # tokens up to and including this block
    marked: bool  # carries a cache breakpoint
    image_tokens: int


def _measure(x: Any, provider: str) -> tuple[int, int]:
    """(characters of text, image tokens) of a wire value; images by the provider's formula."""
    chars = 0
    images = 0

    def walk(v: Any) -> None:
        nonlocal chars, images
        if isinstance(v, dict):
            data = _image_data(v)
            if data is not None:
                size = _png_size(data)
                images += image_tokens(*size, provider) if size else 1600
                return
            for k, w in v.items():
                if k not in _SKIP:
                    walk(w)
        elif isinstance(v, list):
            for w in v:
                walk(w)
        elif isinstance(v, str):
            chars += len(v)

    walk(x)
    return chars, images


def _block_tokens(x: Any, provider: str) -> tuple[float, int]:
    """(tokens, of which images) of one block: text at 4 chars/token, images by formula."""
    chars, images = _measure(x, provider)
    return chars / 4 + images, images


def _image_data(x: dict[str, Any]) -> str | None:
    url = x.get("url") if isinstance(x.get("url"), str) else None
    iu = x.get("image_url")
    if isinstance(iu, dict) and isinstance(iu.get("url"), str):
        url = iu["url"]
    elif isinstance(iu, str):
        url = iu
    if url and url.startswith("data:image"):
        return url.split(",", 1)[1]
    src = x.get("source") if isinstance(x.get("source"), dict) else None
    if src is not None and isinstance(src.get("data"), str):
        return str(src["data"])
    return None


def breakpoints(body: dict[str, Any]) -> int:
    """How many ``cache_control`` breakpoints an Anthropic request holds (tools, system,
    messages, nested blocks too)."""

    def count(x: Any) -> int:
        if isinstance(x, dict):
            return int("cache_control" in x) + sum(count(v) for v in x.values())
        if isinstance(x, list):
            return sum(count(v) for v in x)
        return 0

    top = int(isinstance(body.get("cache_control"), dict))  # automatic caching takes a slot
    return top + sum(count(body.get(k)) for k in ("tools", "system", "messages"))


def _has_marker(x: Any) -> bool:
    if isinstance(x, dict):
        return any(k in x for k in _MARKERS) or any(_has_marker(v) for v in x.values())
    if isinstance(x, list):
        return any(_has_marker(v) for v in x)
    return False


def prompt_blocks(body: dict[str, Any], provider: str) -> list[_Block]:
    """The prompt as the provider's cache sees it: tools, system, messages, as blocks.

    Anthropic: each tool, each system block, each content block of each message (a
    string content is one block). OpenAI: each tool, the instructions, each message or
    item. Digests are chained and leave cache markers out.
    """
    parts: list[tuple[Any, int]] = [(t, 0) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, list):
        parts += [(b, 0) for b in system]
    elif system:
        parts.append((system, 0))
    if body.get("instructions"):
        parts.append((body["instructions"], 0))
    items = body.get("messages", body.get("input", []))
    for m in items if isinstance(items, list) else [items]:
        content = m.get("content") if isinstance(m, dict) else None
        if provider == "anthropic" and isinstance(content, str):
            content = [{"type": "text", "text": content}]  # the API's own reading of it
        if provider == "anthropic" and isinstance(content, list) and content:
            head = {k: v for k, v in m.items() if k != "content"}
            for j, b in enumerate(content):
                # the message's own 4 tokens ride on its first block
                parts.append(({"m": head, "b": b} if j == 0 else b, 4 if j == 0 else 0))
        else:
            parts.append((m, 4))
    out: list[_Block] = []
    h = hashlib.blake2b(digest_size=16)
    end = 0.0
    for x, extra in parts:
        tokens, images = _block_tokens(x, provider)
        end += tokens + extra
        h.update(json.dumps(_strip(x), ensure_ascii=False, sort_keys=True).encode())
        h.update(b"\x1e")
        marked = provider == "anthropic" and _has_marker(x)
        out.append(_Block(h.copy().digest(), end, marked, images))
    if provider == "anthropic" and out and isinstance(body.get("cache_control"), dict):
        # automatic caching: a top-level cache_control is a breakpoint on the last
        # cacheable block (LangChain's AnthropicPromptCachingMiddleware sends this)
        last = out[-1]
        out[-1] = _Block(last.digest, last.end, True, last.image_tokens)
    return out


@dataclass
class Pricer:
    """One run's prompt cache, priced as the provider caches (see the module docstring)."""

    provider: str = "anthropic"
    entries: set[bytes] = field(default_factory=set)
    last: list[bytes] = field(default_factory=list)

    def price(self, body: dict[str, Any], *, output: int, accepted: bool = True) -> Priced:
        """Price ``body`` and, when ``accepted``, write what it caches."""
        blocks = prompt_blocks(body, self.provider)
        tokens = count_tokens(body, self.provider)
        images = sum(b.image_tokens for b in blocks)
        digests = [b.digest for b in blocks]
        same = 0
        for a, b in zip(self.last, digests, strict=False):
            if a != b:
                break
            same += 1
        share = (blocks[same - 1].end / max(1, tokens)) if same else 0.0
        if not accepted:
            return Priced(tokens, 0, min(1.0, share), 0, False, 0, images)
        read_at = -1
        if self.provider == "anthropic":
            marks = [i for i, b in enumerate(blocks) if b.marked]
            for p in marks:
                for j in range(p, max(-1, p - LOOKBACK - 1), -1):
                    if digests[j] in self.entries:
                        read_at = max(read_at, j)
                        break
            cacheable = [p for p in marks if blocks[p].end >= MIN_CACHED]
            read = round(blocks[read_at].end) if read_at >= 0 else 0
            end = round(blocks[cacheable[-1]].end) if cacheable else 0
            written = max(0, min(tokens, end) - read)
            self.entries.update(digests[p] for p in cacheable)
        else:  # automatic prefix caching of every earlier request
            for j in range(len(blocks) - 1, -1, -1):
                if digests[j] in self.entries:
                    read_at = j
                    break
            read = round(blocks[read_at].end) if read_at >= 0 else 0
            if read < MIN_CACHED:
                read = 0
            written = tokens - read
            self.entries.update(b.digest for b in blocks if b.end >= MIN_CACHED)
        self.last = digests
        read = min(read, tokens)
        return Priced(tokens, read, min(1.0, share), output, True, written, images)


@dataclass
class Run:
    requests: list[Priced] = field(default_factory=list)
    pricer: Pricer | None = None


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
        return JSONResponse([p.row() for p in run.requests])

    # ------------------------------------------------------------------ script

    def _take(self, request: Request, body: dict[str, Any], reserve: int) -> tuple[int, bool]:
        provider = "anthropic" if request.url.path == "/v1/messages" else "openai"
        tokens = count_tokens(body, provider)
        ok = tokens + reserve <= self.window
        key = _run_key(request, body)
        with self._lock:
            run = self.runs.setdefault(key, Run())
            if run.pricer is None:
                run.pricer = Pricer(provider)
            out = _reply_tokens(request, body) if ok else 0
            run.requests.append(run.pricer.price(body, output=out, accepted=ok))
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
        marks = breakpoints(body)
        if marks > MAX_BREAKPOINTS:  # refused before anything is priced, as the API does
            msg = f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            msg += f"Found {marks}."
            err = {"type": "invalid_request_error", "message": msg}
            return JSONResponse({"type": "error", "error": err}, 400)
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
