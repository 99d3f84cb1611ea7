"""A bounded load driver for the proxy: N concurrent clients x M requests each, on loopback.

Used by tests/serve/test_serve_load.py and benchmarks/bench_serve.py. Every request
is accounted for (status, latency, the proxy's own ``server-timing`` figure); the run
is bounded in count and in time.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

__all__ = ["LoadResult", "percentile", "run_load"]

_TIMING = re.compile(r"glyphfold;dur=([0-9.]+)")


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, nearest rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


@dataclass
class LoadResult:
    """What a load run saw."""

    latencies_ms: list[float] = field(default_factory=list)  # client-observed, per request
    added_ms: list[float] = field(default_factory=list)  # the proxy's server-timing figure
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def count(self) -> int:
        return sum(self.statuses.values()) + len(self.errors)

    def summary(self) -> dict[str, float]:
        lat, add = self.latencies_ms, self.added_ms
        return {
            "requests": self.count,
            "ok": self.statuses.get(200, 0),
            "errors": len(self.errors),
            "p50_ms": percentile(lat, 50),
            "p99_ms": percentile(lat, 99),
            "added_p50_ms": percentile(add, 50) if add else float("nan"),
            "added_p99_ms": percentile(add, 99) if add else float("nan"),
            "mean_ms": statistics.fmean(lat) if lat else float("nan"),
            "rps": self.count / self.wall_s if self.wall_s else float("nan"),
        }


async def _client(
    http: httpx.AsyncClient,
    url: str,
    i: int,
    n: int,
    make: Callable[[int, int], tuple[str, dict[str, str], bytes]],
    out: LoadResult,
    keep_bodies: bool,
) -> None:
    for j in range(n):
        path, headers, body = make(i, j)
        t = time.perf_counter()
        try:
            r = await http.post(url + path, content=body, headers=headers)
        except httpx.HTTPError as exc:
            out.errors.append(f"client {i} request {j}: {type(exc).__name__}: {exc}")
            continue
        out.latencies_ms.append((time.perf_counter() - t) * 1000)
        out.statuses[r.status_code] = out.statuses.get(r.status_code, 0) + 1
        m = _TIMING.search(r.headers.get("server-timing", ""))
        if m:
            out.added_ms.append(float(m.group(1)))
        if keep_bodies:
            out.bodies.append(r.content)


async def _run(
    url: str,
    clients: int,
    requests: int,
    make: Callable[[int, int], tuple[str, dict[str, str], bytes]],
    timeout_s: float,
    keep_bodies: bool,
) -> LoadResult:
    out = LoadResult()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=timeout_s, limits=limits, trust_env=False) as http:
        t = time.perf_counter()
        await asyncio.wait_for(
            asyncio.gather(
                *(_client(http, url, i, requests, make, out, keep_bodies) for i in range(clients))
            ),
            timeout=timeout_s,
        )
        out.wall_s = time.perf_counter() - t
    return out


def run_load(
    url: str,
    *,
    clients: int,
    requests: int,
    make: Callable[[int, int], tuple[str, dict[str, str], bytes]],
    timeout_s: float = 120.0,
    keep_bodies: bool = False,
) -> LoadResult:
    """Run ``clients`` concurrent clients, each sending ``requests`` requests one after another.

    ``make(client, request)`` returns (path, headers, body). The whole run is cut at
    ``timeout_s`` (asyncio.TimeoutError).
    """
    return asyncio.run(_run(url, clients, requests, make, timeout_s, keep_bodies))
