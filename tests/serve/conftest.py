"""Fixtures for the proxy's tests: servers on loopback threads, long histories."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import uvicorn

from glyphfold.serve import ServeConfig, create_app
from glyphfold.serve.server import uvicorn_config
from tests.serve.fake_upstream import FakeUpstream


class ServerThread:
    """Serve an ASGI app with uvicorn on 127.0.0.1 (a free port) in a daemon thread."""

    def __init__(self, app: Any, cfg: ServeConfig | None = None) -> None:
        local = {"host": "127.0.0.1", "port": 0, "log_level": "warning"}
        if cfg is not None:  # the proxy: served with glyphfold serve's own limits
            config = uvicorn_config(app, cfg, **local, timeout_graceful_shutdown=1)
        else:
            config = uvicorn.Config(
                app, **local, lifespan="on", access_log=False, timeout_graceful_shutdown=1
            )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                msg = "server did not start"
                raise RuntimeError(msg)
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeUpstream]:
    """The fake upstream (module-wide), its URL in ``fake.url``."""
    state = FakeUpstream()
    with ServerThread(state.app()) as srv:
        state.url = srv.url  # type: ignore[attr-defined]
        yield state


@pytest.fixture
def serve(fake: FakeUpstream) -> Iterator[Any]:
    """``serve(**config)`` starts a proxy in front of the fake and returns its server."""
    started: list[ServerThread] = []

    def start(**overrides: Any) -> ServerThread:
        fake.clear()
        cfg = ServeConfig(
            **{
                "openai_upstream": fake.url,  # type: ignore[attr-defined]
                "anthropic_upstream": fake.url,  # type: ignore[attr-defined]
                # the ladder on threads: two spawned workers per test proxy would cost
                # seconds of CPU each (tests of the process pool ask for it)
                "compact_in": "thread",
                **overrides,
            }
        )
        srv = ServerThread(create_app(cfg), cfg).__enter__()
        srv.proxy = srv.server.config.app.state.proxy  # type: ignore[attr-defined]
        started.append(srv)
        return srv

    yield start
    for srv in reversed(started):
        srv.__exit__()
