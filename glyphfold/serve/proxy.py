"""One proxied request: fit, forward, recover from an overflow, answer in the provider's shape."""

from __future__ import annotations

import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response

import glyphfold
from glyphfold.errors import GlyphfoldError
from glyphfold.serve.config import ServeConfig
from glyphfold.serve.eventlog import EventLog
from glyphfold.serve.fit import Fit, FitContext, fit_request, price, recover_request
from glyphfold.serve.metrics import Metrics
from glyphfold.serve.prefix_cache import FitCache
from glyphfold.serve.providers import ANTHROPIC, ENDPOINTS, OPENAI, Endpoint, error_body
from glyphfold.serve.recorder import (
    CONVERSATION_HEADER,
    Identity,
    Recorder,
    conversation_name,
    final_reply,
)
from glyphfold.serve.relay import (
    MAX_ERROR_BYTES,
    BodyTimeout,
    BodyTooLarge,
    RelayResponse,
    ResponseTooLarge,
    UnsupportedEncoding,
    decode_body,
    first_event_error,
    read_body,
    read_upstream,
    relay,
)
from glyphfold.serve.upstream import Upstream, response_headers
from glyphfold.serve.windows import LearnedWindows, resolve_model, stated_window
from glyphfold.serve.workers import CompactionPool

__all__ = ["Proxy"]

_PROVIDER_PROFILE = {OPENAI: "openai", ANTHROPIC: "anthropic"}
# statuses that can carry a context-overflow error (auth, rate limits and 5xx never do)
_OVERFLOW_STATUSES = frozenset({400, 413, 422})
# requests up to this size are parsed and priced on the event loop (well under a
# millisecond); bigger ones are priced in the pricing pool, which never waits for a
# compaction; compactions run in their own bounded pool (issue 21 item 5)
_INLINE_PRICING_BYTES = 16 * 1024
_PRICING_WORKERS = 4
# a model name, as logged and kept in learned windows (a 5 MB name is not a 5 MB line)
_MODEL_CHARS = 200
_CANONICAL = {re.sub(r"/+", "/", p.lower()) for p in ENDPOINTS}


class ClientGone(Exception):
    """The client hung up before its request was forwarded (nothing is sent upstream)."""


def _short(text: str, limit: int = _MODEL_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


class UpstreamFailure(Exception):
    """The upstream could not be reached or answered garbage; carries status and message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


@dataclass
class Trace:
    """What happened to one request (headers, the event log and metrics are made from it)."""

    endpoint: str
    provider: str
    upstream: str = ""  # the upstream's base URL (learned windows are kept per upstream)
    started: float = field(default_factory=time.perf_counter)
    upstream_s: float = 0.0
    model: str | None = None
    window: str | None = None
    fit: Fit | None = None
    recoveries: list[str] = field(default_factory=list)
    conversation: str | None = None
    identity: Identity | None = None  # the client's store namespace (with --db)
    compacted_kind: str | None = None

    def headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        f = self.fit
        if self.window is not None:
            out["x-glyphfold-window"] = self.window
        if f is not None and f.tokens_before is not None:
            out["x-glyphfold-tokens"] = f"{f.tokens_before}->{f.tokens_after}"
            out["x-glyphfold-rungs"] = ",".join(f.rungs) or "none"
            out["x-glyphfold-cache"] = f.cache
        if f is not None and f.failure:
            out["x-glyphfold-compaction"] = _header_safe(f"could not fit: {f.failure}")
        if self.recoveries:
            out["x-glyphfold-recovery"] = _header_safe("; ".join(self.recoveries))
        if self.conversation is not None:
            out[CONVERSATION_HEADER] = self.conversation
        added = max(0.0, time.perf_counter() - self.started - self.upstream_s)
        out["server-timing"] = (
            f"glyphfold;dur={added * 1000:.3f}, upstream;dur={self.upstream_s * 1000:.3f}"
        )
        return out


def _header_safe(text: str, limit: int = 600) -> str:
    clean = "".join(c if 32 <= ord(c) < 127 else " " for c in text)
    return clean[:limit]


class _TooDeep:
    """A JSON body nested deeper than the parser can follow."""


TOO_DEEP = _TooDeep()


def _parse_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None
    except RecursionError:
        return TOO_DEEP


class Proxy:
    """The proxy's state (config, upstreams, cache, metrics, log, store) and its handlers."""

    def __init__(self, cfg: ServeConfig, *, summarizer: Any = None) -> None:
        self.cfg = cfg
        self.metrics = Metrics()
        self.log = EventLog(cfg.event_log)
        self.cache = FitCache(cfg.cache_bytes)
        self.bus = glyphfold.EventBus()  # ladder events stay in this proxy
        self.summarizer = summarizer
        self.upstreams: dict[str, Upstream] = {}
        for provider, url in ((OPENAI, cfg.openai_upstream), (ANTHROPIC, cfg.anthropic_upstream)):
            if url is not None:
                self.upstreams[provider] = Upstream(provider, url, cfg)
        self.recorder = (
            Recorder(cfg.db, self.log, shared=cfg.conversation_scope == "shared")
            if cfg.db
            else None
        )
        self._cpu = asyncio.Semaphore(cfg.compact_workers)
        self.pool = CompactionPool(cfg.compact_workers) if cfg.compact_in == "process" else None
        self._pricing = ThreadPoolExecutor(_PRICING_WORKERS, thread_name_prefix="glyphfold-price")
        self._abandoned: set[asyncio.Future[Any]] = set()  # fits of clients that hung up
        self.warm_threads: list[Any] = []
        self.learned = LearnedWindows(ttl_s=cfg.learned_window_ttl_s)

    def warm_up(self) -> None:
        """Load pricing and the renderer on threads now (issue 21 item 9): the first
        request does not pay for the imports, nor the first compaction for the kernels.
        With worker processes the workers load the renderer (the ladder runs there), this
        process only pricing: its CPU at start-up goes to the workers' warm-up."""
        if self.pool is None:
            renderer = glyphfold.warm_up(background=True)
            if renderer is not None:
                self.warm_threads.append(renderer)
        self.warm_threads.append(self._pricing.submit(_warm_pricing))
        if self.pool is not None:  # spawn and warm the compaction workers
            self.warm_threads.extend(self.pool.warm_up())

    async def aclose(self) -> None:
        """Close the upstream pools, finish store commits, close the log."""
        if self._abandoned:
            await asyncio.gather(*list(self._abandoned), return_exceptions=True)
        self._pricing.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            self.pool.shutdown()
        for up in self.upstreams.values():
            await up.aclose()
        if self.recorder is not None:
            await self.recorder.aclose()
        self.log.close()

    # -- helpers -------------------------------------------------------------------

    def error(
        self,
        provider: str,
        status: int,
        message: str,
        trace: Trace | None = None,
        *,
        code: str | None = None,
    ) -> Response:
        """A provider-shaped error response from the proxy itself."""
        headers = trace.headers() if trace is not None else {}
        headers["x-glyphfold-error"] = "proxy"
        return Response(
            error_body(provider, status, message, code=code),
            status,
            headers=headers,
            media_type="application/json",
        )

    async def _in_thread(self, fn: Any, *args: Any, gone: asyncio.Event | None = None) -> Any:
        async with self._cpu:
            if gone is not None and gone.is_set():
                raise ClientGone  # hung up while queued: no compaction for nobody
            return await asyncio.to_thread(fn, *args)

    async def _priced(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in the pricing pool (it never waits for a compaction)."""
        return await asyncio.get_running_loop().run_in_executor(self._pricing, fn, *args)

    async def _send(
        self,
        up: Upstream,
        request: Request,
        content: bytes,
        trace: Trace,
        *,
        keep_encoding: bool = False,
    ) -> httpx.Response:
        t = time.perf_counter()
        try:
            return await up.send(
                request.method,
                request.scope.get("raw_path") or request.url.path.encode(),
                request.scope.get("query_string", b""),
                request.scope["headers"],
                content,
                keep_encoding=keep_encoding,
            )
        except ValueError as exc:  # the path would leave the configured upstream
            raise UpstreamFailure(400, "path", f"glyphfold serve: {exc}") from None
        except httpx.TimeoutException as exc:
            raise UpstreamFailure(
                504,
                "timeout",
                f"glyphfold serve: the upstream {up.where} timed out ({type(exc).__name__})",
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamFailure(
                502,
                "connect",
                f"glyphfold serve: the upstream {up.where} is unreachable ({type(exc).__name__})",
            ) from None
        finally:
            trace.upstream_s += time.perf_counter() - t

    def _finish(self, trace: Trace, status: int, *, stream: bool = False) -> None:
        total = time.perf_counter() - trace.started
        added = max(0.0, total - trace.upstream_s)
        compacted = bool(trace.fit and trace.fit.compacted)
        self.metrics.requests.labels(trace.endpoint, str(status)).inc()
        self.metrics.added_latency.labels(trace.endpoint, str(compacted).lower()).observe(added)
        f = trace.fit
        if f is not None and f.compacted and f.tokens_before is not None:
            kind = trace.compacted_kind or "proactive"
            self.metrics.compactions.labels(trace.endpoint, kind, f.cache).inc()
            self.metrics.tokens_saved.labels(trace.endpoint).inc(
                max(0, f.tokens_before - (f.tokens_after or 0))
            )
        self.metrics.cache_bytes.set(self.cache.nbytes)
        self.log.write(
            "request",
            endpoint=trace.endpoint,
            model=trace.model,
            status=status,
            stream=stream,
            window=trace.window,
            tokens_before=f.tokens_before if f else None,
            tokens_after=f.tokens_after if f else None,
            rungs=list(f.rungs) if f else [],
            cache=f.cache if f else None,
            compaction_failure=f.failure if f else None,
            recoveries=trace.recoveries,
            conversation=trace.conversation,
            added_ms=round(added * 1000, 3),
            upstream_ms=round(trace.upstream_s * 1000, 3),
        )

    # -- compacting routes -----------------------------------------------------------

    async def compacting(self, request: Request, endpoint: Endpoint) -> Response:
        """Handle a chat/messages request: fit, forward, recover, relay."""
        trace = Trace(endpoint.name, endpoint.provider)
        up = self.upstreams.get(endpoint.provider)
        if up is None:
            return self._done(
                trace,
                self.error(
                    endpoint.provider,
                    404,
                    (f"glyphfold serve has no {endpoint.provider} upstream configured"),
                ),
            )
        raw, refusal = await self._read(request, endpoint.provider, trace, decode=True)
        if refusal is not None:
            return refusal
        assert raw is not None
        body = _parse_json(raw) if len(raw) <= _INLINE_PRICING_BYTES else None
        if body is None and len(raw) > _INLINE_PRICING_BYTES:
            body = await self._priced(_parse_json, raw)  # a big body parses off the loop
        if body is TOO_DEEP:
            return self._done(
                trace,
                self.error(
                    endpoint.provider, 400, "request body JSON is nested too deeply to read"
                ),
            )
        if not isinstance(body, dict):
            return self._done(
                trace, self.error(endpoint.provider, 400, "request body must be a JSON object")
            )
        trace.upstream = up.where
        ctx = self._context(endpoint, body, raw, trace)
        stream = endpoint.can_stream and body.get("stream") is True
        fit = Fit(raw, endpoint.history(body), None, None)
        if ctx is not None:
            try:
                fit = await self._fit_unless_gone(request, ctx, fit)
            except ClientGone:
                self.metrics.client_gone.labels(endpoint.name).inc()
                self.log.write("client_gone", endpoint=endpoint.name, stage="before forwarding")
                return self._done(trace, Response(b"", 499))
        trace.fit = fit
        if self.recorder is not None and fit.history is not None and endpoint.records:
            trace.identity = self.recorder.identity(request.headers)
            trace.conversation = conversation_name(
                trace.identity,
                endpoint.provider,
                endpoint.history(body),
                request.headers.get(CONVERSATION_HEADER),
            )
        try:
            return await self._forward(request, up, endpoint, ctx, body, trace, stream)
        except UpstreamFailure as exc:
            self.metrics.upstream_errors.labels(endpoint.name, exc.kind).inc()
            return self._done(trace, self.error(endpoint.provider, exc.status, str(exc)))

    async def _read(
        self, request: Request, provider: str, trace: Trace, *, decode: bool
    ) -> tuple[bytes | None, Response | None]:
        """(the request body, None), or (None, the error response) when it is refused."""
        limit = self.cfg.max_body_bytes
        try:
            raw = await read_body(
                request,
                limit,
                idle_s=self.cfg.body_idle_timeout_s,
                total_s=self.cfg.body_timeout_s,
            )
            if decode:
                raw = decode_body(raw, request.headers.get("content-encoding"), limit)
        except BodyTooLarge:
            message = f"request body is over this proxy's limit of {limit} bytes"
            if decode and request.headers.get("content-encoding"):
                message += " once decoded"
            err = self.error(provider, 413, message, code="request_too_large")
        except BodyTimeout:
            message = (
                "request body too slow: a pause over "
                f"{self.cfg.body_idle_timeout_s:g} s or not complete within "
                f"{self.cfg.body_timeout_s:g} s (body_idle_timeout_s, body_timeout_s)"
            )
            err = self.error(provider, 408, message, code="request_timeout")
        except UnsupportedEncoding as exc:
            message = f"request content-encoding {exc} is not supported; send gzip, deflate or none"
            err = self.error(provider, 415, message)
        except ValueError as exc:
            err = self.error(provider, 400, str(exc))
        else:
            return raw, None
        return None, self._done(trace, err)

    async def _fit_unless_gone(self, request: Request, ctx: FitContext, unchanged: Fit) -> Fit:
        """The fit; ClientGone when the client hangs up first (then nothing is forwarded).

        A compaction already running finishes in its thread (it holds its slot until
        then), its result unused; one still queued for a slot never starts.
        """
        gone = asyncio.Event()
        watcher = asyncio.ensure_future(_until_disconnect(request, gone))
        task = asyncio.ensure_future(self._fit(ctx, unchanged, gone))
        try:
            await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
        if task.done() and not gone.is_set():
            return task.result()
        gone.set()
        if not task.done():
            self._abandoned.add(task)
            task.add_done_callback(_forget(self._abandoned))
        raise ClientGone

    def _done(self, trace: Trace, resp: Response, *, stream: bool = False) -> Response:
        self._finish(trace, resp.status_code, stream=stream)
        return resp

    def _context(
        self, endpoint: Endpoint, body: dict[str, Any], raw: bytes, trace: Trace
    ) -> FitContext | None:
        model = body.get("model")
        if not isinstance(model, str) or endpoint.history(body) is None:
            return None  # nothing to fit: the upstream judges the request
        res = resolve_model(
            model,
            provider_profile=_PROVIDER_PROFILE[endpoint.provider],
            windows=self.cfg.windows,
            profiles=self.cfg.profiles,
        )
        res = self.learned.apply(trace.upstream, res)
        trace.model = _short(model)
        trace.window = (
            f"{res.window} ({res.source})"
            if res.window is not None
            else "unknown (not in the table; set --window MODEL=TOKENS)"
        )
        budget = glyphfold.effective_context_budget(
            context_compact_ratio=self.cfg.budget_ratio, context_window=res.window
        )
        overhead = endpoint.overhead_text(body)
        return FitContext(
            endpoint=endpoint,
            body=body,
            raw=raw,
            model=res,
            budget=budget,
            reserve=endpoint.reserve(body),
            overhead=-(-len(overhead) // 4),
            rungs=self.cfg.rungs,
            reactive_rungs=self.cfg.reactive_rungs,
            cache=self.cache,
            summarizer=self.summarizer,
            bus=self.bus,
            pool=self.pool,
        )

    async def _fit(self, ctx: FitContext, unchanged: Fit, gone: asyncio.Event | None = None) -> Fit:
        try:
            if len(ctx.raw) <= _INLINE_PRICING_BYTES:
                priced = price(ctx)  # ~50 us for a small request: no thread hop
            else:
                priced = await self._priced(price, ctx)  # never behind a compaction
            if priced is not None:
                return priced
            return await self._in_thread(fit_request, ctx, gone=gone)
        except (GlyphfoldError, RecursionError) as exc:
            # a history glyphfold cannot read (or nested past the recursion limit):
            # the upstream judges it
            self.log.write(
                "compaction_skipped",
                endpoint=ctx.endpoint.name,
                error=type(exc).__name__,
                detail=str(exc)[:300],
            )
            return Fit(
                **{
                    **{k: getattr(unchanged, k) for k in Fit.__slots__},
                    "failure": f"{type(exc).__name__}: {str(exc)[:200]}",
                }
            )

    async def _recover(
        self, ctx: FitContext | None, trace: Trace, attempt: int, error: Any
    ) -> bool:
        """Recover after an overflow; True when there is a smaller request to retry."""
        if ctx is None or trace.fit is None or trace.fit.history is None:
            trace.recoveries.append(f"overflow {attempt}: no history to recover")
            self.metrics.recoveries.labels(trace.endpoint, "failed").inc()
            return False
        if attempt > self.cfg.max_retries:
            trace.recoveries.append(
                f"overflow {attempt}: retries exhausted (max {self.cfg.max_retries})"
            )
            self.metrics.recoveries.labels(trace.endpoint, "exhausted").inc()
            return False
        self._learn(ctx, trace, error)
        try:
            new = await self._in_thread(recover_request, ctx, trace.fit, error)
        except GlyphfoldError as exc:
            trace.recoveries.append(f"overflow {attempt}: recover failed: {exc}")
            self.metrics.recoveries.labels(trace.endpoint, "failed").inc()
            return False
        trace.recoveries.append(
            f"overflow {attempt}: recovered {new.tokens_before}->{new.tokens_after} "
            f"({','.join(new.rungs) or 'none'}), retried"
        )
        self.metrics.recoveries.labels(trace.endpoint, "retried").inc()
        trace.fit, trace.compacted_kind = new, "reactive"
        return True

    def _learn(self, ctx: FitContext, trace: Trace, error: Any) -> None:
        """Remember the window this model's upstream stated (else: under what was sent).

        Called only with the upstream's own overflow error (SPEC §3.6); the learned
        window is refused below a request that succeeded (see LearnedWindows).
        """
        sent = trace.fit
        assert sent is not None
        if len(ctx.model.model) > _MODEL_CHARS:
            return  # no real model has such a name: nothing worth remembering
        text = (
            error
            if isinstance(error, str)
            else json.dumps(error, default=str)
            if not isinstance(error, bytes)
            else error.decode("utf-8", "replace")
        )
        window = stated_window(text)
        if window is None and sent.tokens_before is not None:
            window = sent.tokens_after
        if window is not None and window > 0:
            self.learned.learn(trace.upstream, ctx.model.model, window)

    async def _forward(
        self,
        request: Request,
        up: Upstream,
        endpoint: Endpoint,
        ctx: FitContext | None,
        body: dict[str, Any],
        trace: Trace,
        stream: bool,
    ) -> Response:
        attempt = 0
        while True:
            assert trace.fit is not None
            resp = await self._send(up, request, trace.fit.raw, trace)
            if resp.status_code >= 400:
                t = time.perf_counter()
                data = await read_upstream(resp, MAX_ERROR_BYTES)
                trace.upstream_s += time.perf_counter() - t
                err = _parse_json(data)
                if resp.status_code in _OVERFLOW_STATUSES and glyphfold.is_context_overflow_error(
                    err if err is not None else data
                ):
                    attempt += 1
                    if await self._recover(ctx, trace, attempt, err if err is not None else data):
                        continue
                headers = {**response_headers(resp), **trace.headers()}
                return self._done(trace, Response(data, resp.status_code, headers=headers))
            if ctx is not None and trace.fit is not None and len(ctx.model.model) <= _MODEL_CHARS:
                self.learned.succeeded(trace.upstream, ctx.model.model, trace.fit.tokens_after)
            if stream and "text/event-stream" in resp.headers.get("content-type", ""):
                result = await self._start_stream(resp, endpoint, ctx, trace, attempt)
                if result is None:
                    attempt += 1
                    continue
                return result
            return await self._complete(resp, endpoint, body, trace)

    async def _complete(
        self, resp: httpx.Response, endpoint: Endpoint, body: dict[str, Any], trace: Trace
    ) -> Response:
        t = time.perf_counter()
        try:
            data = await read_upstream(resp, self.cfg.max_response_bytes, strict=True)
        except ResponseTooLarge:
            raise UpstreamFailure(
                502,
                "too_large",
                "glyphfold serve: the upstream's reply is over this proxy's limit of "
                f"{self.cfg.max_response_bytes} bytes decoded (max_response_bytes)",
            ) from None
        except httpx.TimeoutException:
            raise UpstreamFailure(
                504, "timeout", "glyphfold serve: the upstream timed out while sending its reply"
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamFailure(
                502,
                "protocol",
                "glyphfold serve: the upstream connection "
                f"broke while sending its reply ({type(exc).__name__})",
            ) from None
        finally:
            trace.upstream_s += time.perf_counter() - t
        parsed = _parse_json(data)
        if parsed is None and "json" in resp.headers.get("content-type", "json"):
            raise UpstreamFailure(
                502,
                "malformed",
                "glyphfold serve: the upstream answered "
                f"{resp.status_code} with a body that is not valid JSON",
            )
        if (
            self.recorder is not None
            and trace.conversation is not None
            and trace.identity is not None
            and endpoint.can_stream
        ):
            self.recorder.record(
                endpoint.provider,
                trace.identity,
                trace.conversation,
                endpoint.history(body),
                final_reply(endpoint.provider, parsed),
            )
        headers = {**response_headers(resp), **trace.headers()}
        return self._done(trace, Response(data, resp.status_code, headers=headers))

    async def _start_stream(
        self,
        resp: httpx.Response,
        endpoint: Endpoint,
        ctx: FitContext | None,
        trace: Trace,
        attempt: int,
    ) -> Response | None:
        """Relay a stream; None when its first event is an overflow worth a retry."""
        chunks = resp.aiter_bytes()
        t = time.perf_counter()
        try:
            first = await chunks.__anext__()
        except StopAsyncIteration:
            first = b""
        except httpx.HTTPError as exc:
            await resp.aclose()
            status, kind = (
                (504, "timeout") if isinstance(exc, httpx.TimeoutException) else (502, "protocol")
            )
            raise UpstreamFailure(
                status,
                kind,
                "glyphfold serve: the upstream stream failed "
                f"before its first event ({type(exc).__name__})",
            ) from None
        finally:
            trace.upstream_s += time.perf_counter() - t
        # nothing has reached the client yet: an overflow in the first event can be retried.
        # Only the upstream's own error event is one, never model text (issue 21 item 2)
        error = first_event_error(first) if b"error" in first[:65536] else None
        if error is not None and glyphfold.is_context_overflow_error(error):
            await resp.aclose()
            if await self._recover(ctx, trace, attempt + 1, error):
                return None
            headers = {**response_headers(resp), **trace.headers()}
            return self._done(
                trace, Response(first, resp.status_code, headers=headers), stream=True
            )
        if (
            self.recorder is not None
            and trace.conversation is not None
            and trace.identity is not None
            and ctx is not None
        ):
            self.recorder.record(
                endpoint.provider,
                trace.identity,
                trace.conversation,
                endpoint.history(ctx.body),
                None,
            )
        headers = {**response_headers(resp), **trace.headers()}
        self._finish(trace, resp.status_code, stream=True)
        self.metrics.streams.inc()

        def on_error(kind: str) -> None:
            self.metrics.upstream_errors.labels(endpoint.name, kind).inc()

        def on_end(outcome: str, seconds: float) -> None:
            self.metrics.streams.dec()
            self.log.write(
                "stream_end", endpoint=endpoint.name, outcome=outcome, seconds=round(seconds, 3)
            )

        gen = relay(
            first, chunks, resp, provider=endpoint.provider, on_error=on_error, on_end=on_end
        )
        return RelayResponse(gen, resp.status_code, headers=headers)

    # -- everything else ---------------------------------------------------------------

    async def passthrough(self, request: Request) -> Response:
        """Any other path: to the upstream the request's headers name, unchanged."""
        h = request.headers
        provider = ANTHROPIC if ("anthropic-version" in h or "x-api-key" in h) else OPENAI
        trace = Trace("passthrough", provider)
        disguised = re.sub(r"/+", "/", request.url.path.lower().rstrip("/") or "/")
        if request.method == "POST" and disguised.split(";", 1)[0] in _CANONICAL:
            # /v1//chat/completions, /V1/messages/ ...: a chat request would skip compaction
            # and recording on its way round; the canonical path is the only way in (a GET
            # of /v1/chat/completions, OpenAI's stored completions, still passes through)
            return self._done(
                trace,
                self.error(
                    provider,
                    400,
                    f"glyphfold serve: send {request.method} {request.url.path!r} to its "
                    f"canonical path {disguised.split(';', 1)[0]!r}",
                ),
            )
        up = self.upstreams.get(provider)
        if up is None or not self.cfg.passthrough:
            return self._done(
                trace,
                self.error(
                    provider,
                    404,
                    (f"glyphfold serve does not route {request.method} {request.url.path}"),
                ),
            )
        raw, refusal = await self._read(request, provider, trace, decode=False)
        if refusal is not None:
            return refusal
        assert raw is not None
        try:
            resp = await self._send(up, request, raw, trace, keep_encoding=True)
        except UpstreamFailure as exc:
            self.metrics.upstream_errors.labels("passthrough", exc.kind).inc()
            return self._done(trace, self.error(provider, exc.status, str(exc)))
        self._finish(trace, resp.status_code, stream=True)
        self.metrics.streams.inc()

        def on_error(kind: str) -> None:
            self.metrics.upstream_errors.labels("passthrough", kind).inc()

        def on_end(outcome: str, seconds: float) -> None:
            self.metrics.streams.dec()

        gen = relay(
            b"", resp.aiter_bytes(), resp, provider=provider, on_error=on_error, on_end=on_end
        )
        return RelayResponse(gen, resp.status_code, headers=response_headers(resp))


async def _until_disconnect(request: Request, gone: asyncio.Event) -> None:
    """Return (setting ``gone``) when the client hangs up; the body is already read."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


def _forget(pending: set[asyncio.Future[Any]]) -> Any:
    def done(fut: asyncio.Future[Any]) -> None:
        pending.discard(fut)
        if not fut.cancelled():
            fut.exception()  # retrieved: an abandoned fit's error is not "never retrieved"

    return done


def _warm_pricing() -> None:
    """Price a small history of each wire format once (imports and first-call caches)."""
    chat = [
        {"role": "system", "content": "warm up"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    glyphfold.estimate_history_tokens(chat, image_policy="all")
    glyphfold.estimate_history_tokens({"system": "warm up", "messages": chat[1:]})
    glyphfold.estimate_history_tokens({"instructions": "warm up", "input": chat[1:]})
    json.loads(json.dumps({"messages": chat}))
