"""Moving bytes: bounded request bodies in, upstream responses out (streamed untouched).

A relayed stream is never buffered: each upstream chunk goes to the client as it
arrives. If the upstream fails after the first byte went out, the client gets the
provider's own server-sent error event; whatever ends the stream (its end, an
upstream failure, the client going away) closes the upstream response, shielded
from cancellation, so no connection or task outlives it.
"""

from __future__ import annotations

import contextlib
import json
import time
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
from starlette.requests import ClientDisconnect, Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from glyphfold.serve.providers import sse_error

__all__ = [
    "BodyTimeout",
    "BodyTooLarge",
    "RelayResponse",
    "ResponseTooLarge",
    "UnsupportedEncoding",
    "decode_body",
    "first_event_error",
    "read_body",
    "read_upstream",
    "relay",
]

# an upstream error body is small; more than this is not read into memory
MAX_ERROR_BYTES = 1024 * 1024


class BodyTooLarge(Exception):
    """The request body is over the configured limit (as sent, or once decoded)."""


class BodyTimeout(Exception):
    """The request body did not arrive in time (a pause or the whole body too slow)."""


class UnsupportedEncoding(Exception):
    """A request body in a content-encoding the proxy cannot decode."""


class ResponseTooLarge(Exception):
    """An upstream reply is over the configured limit once decoded."""


# content-encodings of request bodies the compacting routes decode (zlib wbits)
_ENCODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def decode_body(raw: bytes, encoding: str | None, limit: int) -> bytes:
    """``raw`` decoded from its ``content-encoding`` (gzip, deflate), at most ``limit`` bytes.

    BodyTooLarge past ``limit`` decoded bytes (a small bomb stops there), ValueError
    for a corrupt body, UnsupportedEncoding for another encoding.
    """
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
    for coding in reversed(codings):  # applied in order listed: undone last first
        if coding == "identity":
            continue
        wbits = _ENCODINGS.get(coding)
        if wbits is None:
            raise UnsupportedEncoding(coding)
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(raw, limit + 1)
            if len(out) > limit or d.unconsumed_tail:
                raise BodyTooLarge
            out += d.flush()
        except zlib.error as exc:
            msg = f"the request body is not valid {coding} ({exc})"
            raise ValueError(msg) from None
        if len(out) > limit:
            raise BodyTooLarge
        raw = out
    return raw


def first_event_error(chunk: bytes) -> Any:
    """The upstream's own error in the first server-sent event of ``chunk``, else None.

    Only an ``event: error`` or a ``data:`` whose JSON object is an error (an
    ``"error"`` key, or ``"type": "error"``) is one: model text that happens to
    say "maximum context length is 8192 tokens" inside a normal event is not.
    """
    text = chunk[:65536].decode("utf-8", "replace").replace("\r\n", "\n")
    event, data = "", []
    for line in text.split("\n\n", 1)[0].split("\n"):
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    # no "data:" line: a bare JSON body ({"error": ...}) sent as the stream
    payload: Any = "\n".join(data) if data or event else text.strip()
    with contextlib.suppress(ValueError, RecursionError):
        payload = json.loads(payload)
    if event == "error":
        return payload if payload != "" else "error"
    if isinstance(payload, dict) and ("error" in payload or payload.get("type") == "error"):
        return payload
    return None


async def read_body(
    request: Request, limit: int, *, idle_s: float = 15.0, total_s: float = 120.0
) -> bytes:
    """The request body, refused (BodyTooLarge) past ``limit`` bytes without reading it all.

    BodyTimeout when the client pauses more than ``idle_s`` between two chunks or
    has not sent the whole body within ``total_s``: a stalled upload does not hold
    its buffered bytes (and a connection) for long.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    deadline = time.monotonic() + total_s
    while True:
        wait = min(idle_s, deadline - time.monotonic())
        chunk: bytes | None = None
        with anyio.move_on_after(max(0.0, wait)):
            try:
                chunk = await stream.__anext__()
            except StopAsyncIteration:
                return b"".join(chunks)
        if chunk is None:
            raise BodyTimeout
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)


async def read_upstream(
    resp: httpx.Response, limit: int | None = None, *, strict: bool = False
) -> bytes:
    """Read (and close) an upstream response body, keeping at most ``limit`` decoded bytes.

    ``strict``: ResponseTooLarge past ``limit`` instead of keeping its first bytes
    (a reply the proxy parses must be whole; a gzip bomb stops at the limit).
    """
    try:
        if limit is None:
            return await resp.aread()
        coding = resp.headers.get("content-encoding", "").strip().lower()
        if strict and coding in _ENCODINGS:
            return await _inflate(resp, _ENCODINGS[coding], limit)
        out = bytearray()
        async for chunk in resp.aiter_bytes():
            if strict and len(out) + len(chunk) > limit:
                raise ResponseTooLarge
            out += chunk[: max(0, limit - len(out))]
        return bytes(out)
    finally:
        await resp.aclose()


async def _inflate(resp: httpx.Response, wbits: int, limit: int) -> bytes:
    """A gzip/deflate body decoded chunk by chunk, never more than ``limit`` + 1 bytes out."""
    d = zlib.decompressobj(wbits)
    out = bytearray()
    try:
        async for raw in resp.aiter_raw():
            out += d.decompress(raw, limit + 1 - len(out))
            if len(out) > limit or d.unconsumed_tail:
                raise ResponseTooLarge
        out += d.flush()
    except zlib.error as exc:
        msg = f"the upstream reply is not valid {resp.headers.get('content-encoding')} ({exc})"
        raise httpx.DecodingError(msg) from None
    if len(out) > limit:
        raise ResponseTooLarge
    return bytes(out)


async def relay(
    first: bytes,
    chunks: AsyncIterator[bytes],
    resp: httpx.Response,
    *,
    provider: str,
    on_error: Callable[[str], None],
    on_end: Callable[[str, float], None],
) -> AsyncIterator[bytes]:
    """Yield ``first`` and then every upstream chunk; end with an SSE error on failure.

    ``on_error(kind)`` counts an upstream failure; ``on_end(outcome, seconds)`` runs
    exactly once, however the stream ends (``complete``, ``upstream_error``,
    ``client_gone``).
    """
    started = time.perf_counter()
    outcome = "client_gone"
    try:
        if first:
            yield first
        async for chunk in chunks:
            yield chunk
        outcome = "complete"
    except httpx.TimeoutException:
        outcome = "upstream_error"
        on_error("timeout")
        yield sse_error(provider, "glyphfold serve: the upstream stopped sending (read timeout)")
    except httpx.HTTPError as exc:
        outcome = "upstream_error"
        on_error("protocol")
        yield sse_error(
            provider,
            f"glyphfold serve: the upstream connection broke mid-stream ({type(exc).__name__})",
        )
    finally:
        with anyio.CancelScope(shield=True):
            await resp.aclose()
        on_end(outcome, time.perf_counter() - started)


class RelayResponse(StreamingResponse):
    """A streaming response that always closes its body iterator (and so the upstream)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except (ClientDisconnect, OSError):
            pass  # the client went away; the upstream is closed below
        finally:
            aclose: Any = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
