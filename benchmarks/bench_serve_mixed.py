"""Small requests while big compactions and slow clients load the proxy (issue 21, "Done when").

Run: ``python benchmarks/bench_serve_mixed.py [--big 2] [--small-clients 8]
[--slow 200] [--baseline-tree DIR]``. ``glyphfold serve`` runs in its own process in
front of the fake upstream (tests/serve/fake_upstream.py) in another; the clients run
here, all on loopback. While ``--big`` clients each send one ~10 MB history that must
be compacted, and ``--slow`` connections hold half-sent heads or stalled bodies, the
small clients send requests that need no compaction (a 1 KB one and a 330 KB one,
which is priced but fits) one after another until every big compaction is answered.
Reported: p50/p99 of the small requests sent while compactions ran, of the same
requests with the proxy idle (measured right before, the baseline of the same run),
and of the fake upstream alone. Target (issue 21): p99 of a request that needs no
compaction < 1 s while two 10 MB compactions run, on 2 cores.

``--baseline-tree DIR`` runs the same scenario a second time with the proxy imported
from another source tree (e.g. a ``git worktree`` of an older commit), for a
before/after row in the same invocation. Bounded: counts and a 900 s timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from benchmarks.local_servers import free_port, wait_up  # noqa: E402
from tests.serve.histories import openai_history  # noqa: E402
from tests.serve.load import percentile  # noqa: E402

WINDOW = 128_000
TIMEOUT_S = 900.0
FAKE = """
import uvicorn
from tests.serve.fake_upstream import FakeUpstream
uvicorn.run(FakeUpstream(window={window}).app(), host="127.0.0.1", port={port},
            log_level="warning", access_log=False, timeout_keep_alive=75)
"""
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench"}


def _bodies(big: int) -> tuple[bytes, bytes, list[bytes]]:
    small = json.dumps(
        {"model": "fake-model", "messages": [{"role": "user", "content": "hello " * 150}]}
    ).encode()
    medium = json.dumps(
        {"model": "fake-model", "messages": openai_history(20, chars=16_000)}
    ).encode()
    bigs = [
        json.dumps(
            {"model": "fake-model", "messages": openai_history(300, chars=33_000, seed=7 + i)}
        ).encode()
        for i in range(big)
    ]
    return small, medium, bigs


async def _slow_heads(port: int, n: int, stop: asyncio.Event) -> int:
    """``n`` connections that send half a head, then nothing; how many the proxy closed."""
    writers = []
    for _ in range(n):
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            continue
        w.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        writers.append((_r, w))
    await stop.wait()
    closed = 0
    for r, w in writers:
        closed += r.at_eof()
        w.close()
    return closed


async def _stalled_bodies(port: int, n: int, stop: asyncio.Event) -> None:
    """``n`` uploads that announce 30 MB, send 1 MB and stall."""
    writers = []
    for _ in range(n):
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            continue
        w.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 31457280\r\n\r\n" + b" " * (1 << 20)
        )
        writers.append(w)
    await stop.wait()
    for w in writers:
        w.close()


async def _small_client(
    http: httpx.AsyncClient, url: str, body: bytes, stop: asyncio.Event, out: list[float]
) -> None:
    for _ in range(2000):
        if stop.is_set():
            return
        t = time.perf_counter()
        r = await http.post(url + "/v1/chat/completions", content=body, headers=HEADERS)
        if r.status_code == 200 and not stop.is_set():
            out.append((time.perf_counter() - t) * 1000)


async def _scenario(url: str, port: int, args: argparse.Namespace, bodies) -> dict[str, object]:
    small, medium, bigs = bodies
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=TIMEOUT_S, limits=limits, trust_env=False) as http:
        # idle baseline: the same small requests with nothing else running
        idle: dict[str, list[float]] = {"1 KB": [], "330 KB": []}
        for name, body in (("1 KB", small), ("330 KB", medium)):
            for _ in range(40):
                t = time.perf_counter()
                r = await http.post(url + "/v1/chat/completions", content=body, headers=HEADERS)
                r.raise_for_status()
                idle[name].append((time.perf_counter() - t) * 1000)
        stop = asyncio.Event()
        busy: dict[str, list[float]] = {"1 KB": [], "330 KB": []}
        slow = asyncio.gather(
            _slow_heads(port, args.slow, stop), _stalled_bodies(port, args.stalled, stop)
        )

        async def big_one(body: bytes) -> tuple[int, float, str]:
            t = time.perf_counter()
            r = await http.post(url + "/v1/chat/completions", content=body, headers=HEADERS)
            return r.status_code, time.perf_counter() - t, r.headers.get("x-glyphfold-rungs", "")

        big_tasks = [asyncio.ensure_future(big_one(b)) for b in bigs]
        await asyncio.sleep(0.5)  # the big bodies are in; compaction starts
        smalls = [
            asyncio.ensure_future(
                _small_client(
                    http,
                    url,
                    medium if k % 4 == 3 else small,
                    stop,
                    busy["330 KB" if k % 4 == 3 else "1 KB"],
                )
            )
            for k in range(args.small_clients)
        ]
        t0 = time.perf_counter()
        big_results = await asyncio.wait_for(asyncio.gather(*big_tasks), TIMEOUT_S)
        busy_s = time.perf_counter() - t0
        stop.set()
        await asyncio.gather(*smalls)
        closed, _ = await slow
        health = await http.get(url + "/healthz")
        health.raise_for_status()
    return {
        "idle": idle,
        "busy": busy,
        "big": big_results,
        "busy_s": busy_s,
        "slow_closed": closed,
    }


def _start(tree: Path, fport: int, pport: int, config: Path | None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    extra = ["--config", str(config)] if config is not None else []
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "glyphfold",
            "serve",
            *extra,
            "--port",
            str(pport),
            "--openai-upstream",
            f"http://127.0.0.1:{fport}",
            "--window",
            f"fake-model={WINDOW}",
            "--log-level",
            "critical",
        ],
        cwd=tree,
        env=env,
        stderr=subprocess.DEVNULL,
    )


def _print(label: str, res: dict[str, object]) -> None:
    print(f"\n### {label}")
    print(f"big compactions (status, seconds, rungs): {res['big']}")
    print(
        f"compactions ran {res['busy_s']:.1f} s; half-open heads closed by the proxy: "
        f"{res['slow_closed']}"
    )
    print("| requests | proxy state | n | p50 ms | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|---:|")
    for state in ("idle", "busy"):
        for name, lat in res[state].items():  # type: ignore[attr-defined]
            if lat:
                print(
                    f"| {name}, no compaction | {state} | {len(lat)} | {percentile(lat, 50):.1f} "
                    f"| {percentile(lat, 99):.1f} | {max(lat):.1f} |"
                )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", type=int, default=2, help="concurrent ~10 MB compactions")
    ap.add_argument("--small-clients", type=int, default=8)
    ap.add_argument("--slow", type=int, default=200, help="connections holding half a head")
    ap.add_argument("--stalled", type=int, default=10, help="stalled 30 MB uploads")
    ap.add_argument("--baseline-tree", type=Path, help="also run the proxy from this tree")
    ap.add_argument(
        "--threads-too",
        action="store_true",
        help="also run this tree with compact_in = 'thread' (the ladder in the proxy process)",
    )
    ap.add_argument(
        "--warm-s", type=float, default=15.0, help="wait after start-up (workers warm up)"
    )
    args = ap.parse_args(argv)
    bodies = _bodies(args.big)
    print(
        f"bodies: small {len(bodies[0])} B, medium {len(bodies[1])} B, big "
        f"{[len(b) for b in bodies[2]]} B; load {os.getloadavg()}"
    )
    fport = free_port()
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE.format(window=WINDOW, port=fport)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        wait_up(f"http://127.0.0.1:{fport}/v1/models")
        threads_cfg = Path(tempfile.mkdtemp()) / "threads.toml"
        threads_cfg.write_text('compact_in = "thread"\n')
        trees: list[tuple[str, Path, Path | None]] = [("this tree", ROOT, None)]
        if args.baseline_tree:
            trees.append((f"baseline {args.baseline_tree}", args.baseline_tree, None))
        if args.threads_too:
            trees.append(("this tree, compact_in = thread", ROOT, threads_cfg))
        for label, tree, config in trees:
            pport = free_port()
            proxy = _start(tree, fport, pport, config)
            try:
                url = f"http://127.0.0.1:{pport}"
                wait_up(url + "/healthz")
                time.sleep(args.warm_s)  # start-up warm-up (where the tree has one) finishes
                load = os.getloadavg()
                res = asyncio.run(_scenario(url, pport, args, bodies))
            finally:
                proxy.terminate()
                proxy.wait(30)
            _print(label, res)
            print(f"load average before / after: {load} / {os.getloadavg()}")
    finally:
        fake.terminate()
        fake.wait(30)
    print(f"\nload after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
