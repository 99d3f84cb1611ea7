"""The ASGI application: routes, start-up and shut-down (served by uvicorn)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote

from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from glyphfold.serve.config import ServeConfig
from glyphfold.serve.providers import ANTHROPIC, ENDPOINTS, OPENAI, Endpoint, error_body
from glyphfold.serve.proxy import Proxy
from glyphfold.serve.upstream import has_dot_segment

__all__ = ["create_app"]

_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class OriginForm:
    """Serve absolute-form request targets (``POST http://host/v1/...``) by their path,
    and refuse paths with dot segments.

    The host such a target names is ignored like the Host header: the upstream is
    the configured one, whatever the request says. A ``.`` or ``..`` segment
    (percent-encoded too) gets a provider-shaped 400: ``/v1/../../admin/keys`` would
    leave the configured upstream prefix, and ``/v1/x/../chat/completions`` would
    reach a chat route around compaction and recording (issue 21 item 7).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") or b""
        if scope["type"] == "http" and raw[:8].lower().startswith((b"http://", b"https://")):
            parts = raw.split(b"/", 3)
            path = b"/" + (parts[3] if len(parts) > 3 else b"")
            scope = {**scope, "raw_path": path, "path": unquote(path.decode("latin-1"))}
        if scope["type"] == "http" and has_dot_segment(
            scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
        ):
            headers = {k.lower() for k, _ in scope.get("headers", ())}
            provider = ANTHROPIC if {b"anthropic-version", b"x-api-key"} & headers else OPENAI
            body = error_body(
                provider, 400, "glyphfold serve: request paths may not hold '.' or '..' segments"
            )
            await Response(
                body, 400, headers={"x-glyphfold-error": "proxy"}, media_type="application/json"
            )(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(cfg: ServeConfig, *, summarizer: Any = None) -> Starlette:
    """The proxy as an ASGI app; ``app.state.proxy`` holds its state (metrics, cache, ...)."""
    proxy = Proxy(cfg, summarizer=summarizer)

    def compacting(endpoint: Endpoint) -> Any:
        async def handler(request: Request) -> Response:
            return await proxy.compacting(request, endpoint)

        return handler

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstreams": sorted(proxy.upstreams)})

    async def metrics(request: Request) -> Response:
        return Response(proxy.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if cfg.warm_up:
            proxy.warm_up()
        try:
            yield
        finally:
            await proxy.aclose()

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *(Route(path, compacting(e), methods=["POST"]) for path, e in ENDPOINTS.items()),
        Route("/{path:path}", proxy.passthrough, methods=_ALL_METHODS),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(OriginForm)])
    app.state.proxy = proxy
    return app
