"""Latency the proxy adds (issue 12), measured as users run it: ``glyphfold serve`` in its
own process in front of a fake upstream in another, clients in this one, all on loopback.

Run: ``python benchmarks/bench_serve.py`` (options: ``--clients``, ``--requests``,
``--compaction-clients``, ``--compaction-requests``). Prints one table row per scenario:

- ``direct``: the fake upstream alone (the baseline);
- ``proxy, no compaction``: small requests through the proxy;
- ``proxy, 200k compaction (cold)``: each request a distinct ~200k-token history, so
  every one is compacted from scratch (no cache can help);
- ``proxy, 200k session (cached)``: each client a growing session over 200k tokens,
  one turn per request: the compacted prefix is reused from the cache.

``added`` is the proxy's own ``server-timing`` figure (its time minus the upstream's);
``e2e`` is what the client saw. Bounded: every scenario has a request count and a timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from benchmarks.local_servers import free_port, wait_up  # noqa: E402
from tests.serve.histories import openai_history  # noqa: E402
from tests.serve.load import percentile, run_load  # noqa: E402

WINDOW = 128_000
FAKE = """
import uvicorn
from tests.serve.fake_upstream import FakeUpstream
uvicorn.run(FakeUpstream(window={window}).app(), host="127.0.0.1", port={port},
            log_level="warning", access_log=False, timeout_keep_alive=75)
"""


def _small(i: int, j: int) -> tuple[str, dict[str, str], bytes]:
    msgs = [{"role": "user", "content": f"c{i}r{j}: " + "hello " * 50}]
    return (
        "/v1/chat/completions",
        {"content-type": "application/json", "authorization": "Bearer sk-bench"},
        json.dumps({"model": "fake-model", "messages": msgs}).encode(),
    )


def _cold(i: int, j: int) -> tuple[str, dict[str, str], bytes]:
    h = openai_history(50, chars=16_000, seed=1000 * i + j, task=f"Task {i}-{j}")
    return (
        "/v1/chat/completions",
        {"content-type": "application/json"},
        json.dumps({"model": "fake-model", "messages": h}).encode(),
    )


_SESSIONS: dict[int, list] = {}


def _session(i: int, j: int) -> tuple[str, dict[str, str], bytes]:
    h = _SESSIONS.setdefault(i, openai_history(50, chars=16_000, seed=i, task=f"Session {i}"))
    if j:
        h += [
            {"role": "assistant", "content": f"Turn {j} done."},
            {"role": "user", "content": f"Turn {j + 1}: go on."},
        ]
    return (
        "/v1/chat/completions",
        {"content-type": "application/json"},
        json.dumps({"model": "fake-model", "messages": h}).encode(),
    )


def _interleaved(direct: str, via: str, n: int) -> list[list[float]]:
    """Sequential requests alternating direct and proxied, so both see the same machine load.

    Returns e2e direct, e2e via the proxy, and the proxy's own and upstream figures (ms).
    """
    out: list[list[float]] = [[], [], [], []]
    with httpx.Client(trust_env=False) as http:
        for j in range(n):
            for k, url in enumerate((direct, via)):
                path, headers, body = _small(0, j)
                t = time.perf_counter()
                r = http.post(url + path, content=body, headers=headers)
                out[k].append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
                st = r.headers.get("server-timing", "")
                timing = dict(re.findall(r"(\w+);dur=([0-9.]+)", st))
                if timing:
                    out[2].append(float(timing["glyphfold"]))
                    out[3].append(float(timing["upstream"]))
    return out


def _row(name: str, clients: int, requests: int, result) -> str:
    s = result.summary()
    return (
        f"| {name} | {clients}x{requests} | {s['ok']}/{s['requests']} | "
        f"{s['added_p50_ms']:.2f} | {s['added_p99_ms']:.2f} | {s['p50_ms']:.2f} | "
        f"{s['p99_ms']:.2f} | {s['rps']:.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--compaction-clients", type=int, default=10)
    ap.add_argument("--compaction-requests", type=int, default=4)
    args = ap.parse_args(argv)
    fport, pport = free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE.format(window=WINDOW, port=fport)], cwd=ROOT, env=env
    )
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "glyphfold",
            "serve",
            "--port",
            str(pport),
            "--openai-upstream",
            f"http://127.0.0.1:{fport}",
            "--window",
            f"fake-model={WINDOW}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        direct, via = f"http://127.0.0.1:{fport}", f"http://127.0.0.1:{pport}"
        wait_up(direct + "/v1/models")
        wait_up(via + "/healthz")
        run_load(via, clients=4, requests=10, make=_small)  # warm both processes
        fresh = _interleaved(direct, via, 200)
        c, n = args.clients, args.requests
        cc, cn = args.compaction_clients, args.compaction_requests
        rows = [
            ("direct (no proxy)", c, n, run_load(direct, clients=c, requests=n, make=_small)),
            ("proxy, no compaction", c, n, run_load(via, clients=c, requests=n, make=_small)),
            (
                "proxy, 200k compaction (cold), 1 client",
                1,
                cn * 3,
                run_load(via, clients=1, requests=cn * 3, make=_cold, timeout_s=600),
            ),
            (
                "proxy, 200k compaction (cold)",
                cc,
                cn,
                run_load(via, clients=cc, requests=cn, make=_cold, timeout_s=600),
            ),
            (
                "proxy, 200k session (cached), 1 client",
                1,
                n,
                run_load(via, clients=1, requests=n, make=lambda i, j: _session(100 + i, j)),
            ),
            (
                "proxy, 200k session (cached)",
                cc,
                n,
                run_load(via, clients=cc, requests=n, make=_session, timeout_s=600),
            ),
        ]
        warm = _interleaved(direct, via, 200)  # the cache now holds the 200k histories
    finally:
        for p in (proxy, fake):
            p.terminate()
            p.wait(10)
    print(
        "| scenario | clients x requests | ok | added p50 ms | added p99 ms | e2e p50 ms "
        "| e2e p99 ms | req/s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, cl, rq, res in rows:
        print(_row(name, cl, rq, res))
    print()
    for label, pairs in (("fresh proxy", fresh), ("after the 200k runs", warm)):
        d50, p50 = percentile(pairs[0], 50), percentile(pairs[1], 50)
        g50, g99 = percentile(pairs[2], 50), percentile(pairs[2], 99)
        print(
            f"1 client, direct and proxied requests interleaved (200 each, no compaction, "
            f"{label}): e2e p50 direct {d50:.2f} ms, via proxy {p50:.2f} ms (difference "
            f"{p50 - d50:.2f} ms); the proxy's own time p50 {g50:.3f} ms, p99 {g99:.3f} ms; "
            f"its upstream call p50 {percentile(pairs[3], 50):.2f} ms"
        )
    for name, _, _, res in rows:
        if res.errors or set(res.statuses) != {200}:
            print(f"{name}: statuses {res.statuses}, errors {res.errors[:3]}", file=sys.stderr)
    bad = [name for name, _, _, res in rows if res.errors or set(res.statuses) != {200}]
    if bad:
        print(f"errors in: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
