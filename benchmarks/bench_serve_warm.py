"""The proxy's first request and first compaction, with and without the start-up warm-up
(issue 21 item 9).

Run: ``python benchmarks/bench_serve_warm.py [--rounds 3]``. Each row is a fresh
process (cold and warm interleaved, so both see the same machine load) that builds the
proxy app, optionally runs ``Proxy.warm_up()`` and waits for it (what ``glyphfold
serve`` does in the background at start-up), then times its first pricing of a small
request and its first compaction of a ~30k-token history (snapshot rung, window 20,000).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from glyphfold.serve import ServeConfig, create_app
from glyphfold.serve.fit import fit_request, price
from glyphfold.serve.providers import ENDPOINTS
from glyphfold.serve.proxy import Trace
from tests.serve.histories import openai_history

cfg = ServeConfig(openai_upstream="http://127.0.0.1:9", anthropic_upstream=None,
                  warm_up=False, windows={"m": 20000}, profiles={"m": "openai-tile"})
proxy = create_app(cfg).state.proxy
if sys.argv[1] == "warm":
    proxy.warm_up()
    for t in proxy.warm_threads:
        t.join() if hasattr(t, "join") else t.result()
ep = ENDPOINTS["/v1/chat/completions"]
small = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
t = time.perf_counter()
price(proxy._context(ep, small, json.dumps(small).encode(), Trace("c", "openai")))
p = time.perf_counter() - t
big = {"model": "m", "messages": openai_history(30, chars=4000)}
t = time.perf_counter()
fit = fit_request(proxy._context(ep, big, json.dumps(big).encode(), Trace("c", "openai")))
c = time.perf_counter() - t
print(f"{p * 1000:.1f} {c * 1000:.0f} {','.join(fit.rungs)}")
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"load {os.getloadavg()}")
    print("| start-up | first pricing ms | first compaction ms | rungs |")
    print("|---|---:|---:|---|")
    for _ in range(args.rounds):
        for mode in ("cold", "warm"):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, mode],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=True,
            ).stdout.split()
            print(f"| {mode} | {out[0]} | {out[1]} | {out[2]} |")
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
