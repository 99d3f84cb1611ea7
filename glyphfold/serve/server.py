"""The HTTP server side of ``glyphfold serve``: uvicorn with limits on what a client may hold.

uvicorn alone has no deadline for a request's head (a connection that sends half
its headers, or nothing, stays open forever), and by default it may parse heads
with httptools, which has no size limit. :class:`GuardedH11Protocol` is uvicorn's
h11 protocol plus:

- a head deadline (``header_timeout_s``): from the moment a connection opens, or a
  keep-alive connection's next request starts arriving, its request line and
  headers must be complete within it, else the connection is closed;
- a head size limit (``max_header_bytes``, enforced by h11): bigger heads get a 400;
- a connection cap (``max_client_connections``): a new connection over the cap
  closes the oldest connection that is still waiting for a request head (a
  half-sent slowloris head or an idle keep-alive), so a flood of half-open
  connections cannot lock real clients out; when every connection is busy with a
  request, the new one is refused.

Request bodies have their own deadline in :func:`glyphfold.serve.relay.read_body`.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from glyphfold.serve.config import ServeConfig

__all__ = ["GuardedH11Protocol", "client_connection_cap", "uvicorn_config", "uvicorn_options"]

# file descriptors kept free for the upstream pools, the store, logs and the kernel
_FD_RESERVE = 64


def client_connection_cap(cfg: ServeConfig) -> int:
    """The configured cap, lowered to what the open-files limit allows (raised first)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = 65_536 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    room = soft - cfg.max_connections - _FD_RESERVE
    return max(16, min(cfg.max_client_connections, room))


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a head deadline and a connection cap (see the module)."""

    header_timeout_s: float = 10.0
    max_client_connections: int = 512
    # protocols waiting for a request head, oldest first (per event loop: one server)
    _awaiting: dict[GuardedH11Protocol, None]
    evicted = 0  # connections closed to make room (for tests and the docs' figures)
    timed_out = 0  # heads not complete within the deadline

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    @classmethod
    def configured(cls, header_timeout_s: float, max_client_connections: int) -> type[Any]:
        """A subclass with these limits and its own registry of waiting connections."""
        return type(
            "GuardedH11Protocol",
            (cls,),
            {
                "header_timeout_s": header_timeout_s,
                "max_client_connections": max_client_connections,
                "_awaiting": {},
            },
        )

    # -- waiting for a head --------------------------------------------------------

    def _await_head(self) -> None:
        self._awaiting[self] = None
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _head_arrived(self) -> None:
        self._awaiting.pop(self, None)
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _head_late(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            type(self).timed_out += 1
            self._close()

    def _close(self) -> None:
        self._awaiting.pop(self, None)
        self.transport.close()

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_client_connections:
            victim = next(iter(self._awaiting), None)
            if victim is None:  # every connection is serving a request: refuse this one
                self.transport.write(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n"
                    b"connection: close\r\n\r\n"
                )
                self.transport.close()
                return
            type(self).evicted += 1
            victim._close()
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self._waiting_for_head():
            self._await_head()  # a keep-alive connection's next head: the deadline starts
        super().data_received(data)
        if not self._waiting_for_head():
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._waiting_for_head():
            # idle keep-alive: evictable, closed by uvicorn's keep-alive timeout; the
            # head deadline starts when its next request starts arriving
            self._awaiting[self] = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)


def uvicorn_config(app: Any, cfg: ServeConfig, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration ``glyphfold serve`` runs with (tests use it too)."""
    return uvicorn.Config(app, **{**uvicorn_options(cfg), **overrides})


def uvicorn_options(cfg: ServeConfig) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run``/``uvicorn.Config`` for ``glyphfold serve``."""
    protocol = GuardedH11Protocol.configured(cfg.header_timeout_s, client_connection_cap(cfg))
    return {
        "host": cfg.host,
        "port": cfg.port,
        "http": protocol,
        "h11_max_incomplete_event_size": cfg.max_header_bytes,
        "access_log": False,
        "server_header": False,
        "lifespan": "on",
        "timeout_keep_alive": max(1, int(cfg.client_keepalive_s)),
    }
