"""Loopback helpers for the runners that start servers (the proxy, fake upstreams)."""

from __future__ import annotations

import socket
import time

import httpx


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, timeout: float = 60.0) -> None:
    """Return once ``url`` answers any HTTP response; RuntimeError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    msg = f"{url} did not come up within {timeout:.0f} s"
    raise RuntimeError(msg)
