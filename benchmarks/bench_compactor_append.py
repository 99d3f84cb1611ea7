"""What one append costs in a plain loop's ``glyphfold.Compactor`` (issue 19 item 2, SPEC §5.10).

Run: ``python benchmarks/bench_compactor_append.py [--baseline-tree DIR] [--rounds 3]``.
The agent loop of ``bench_loop.py`` (2-8k-token tool results, a 64k window, the
proxy's budget) runs in-process, no server: before each model call the whole history
goes through one Compactor, as the README's loop does. Timed: every call that
appends (the previous output byte for byte plus the new messages), per API format.
Each round runs this tree and, with ``--baseline-tree`` (e.g. ``git worktree add`` or
``git archive`` of an older commit), that tree, each in a fresh process, one after the
other (interleaved rounds: the machine is shared, compare within a round).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _reply(api: str, step: int) -> Any:
    if api.startswith("messages"):
        return [{"type": "tool_use", "id": f"call_{step}", "name": "bash", "input": {"cmd": "ls"}}]
    if api == "responses":
        return [
            {
                "type": "function_call",
                "id": f"fc_{step}",
                "call_id": f"call_{step}",
                "name": "bash",
                "arguments": '{"cmd": "ls"}',
            }
        ]
    call = {"id": f"call_{step}", "type": "function"}
    call["function"] = {"name": "bash", "arguments": '{"cmd": "ls"}'}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def child(api: str, steps: int, window: int) -> None:
    """One loop in this process; prints {"append_ms": [...], "compactions": n}."""
    import glyphfold  # the tree under test (PYTHONPATH), before bench_loop puts this one first

    sys.path.insert(0, str(HERE))
    import bench_loop as loop

    conv = loop.Conversation(api, "http://127.0.0.1:9", "bench", steps)
    anthropic = api.startswith("messages")
    reserve = loop.MAX_TOKENS if anthropic else 0
    overhead = -(-len(json.dumps(conv.tools(), separators=(",", ":"))) // 4)
    budget = min(int(window * 0.9), window - reserve) - overhead
    compactor = glyphfold.Compactor(
        budget,
        window=window,
        reserve=reserve,
        profile="anthropic" if anthropic else "openai",
    )
    times: list[float] = []
    compactions = 0
    for step in range(steps):
        history = conv.history()
        tools = conv.tools()
        t0 = time.perf_counter()
        fitted = compactor(history, tools=tools)
        dt = (time.perf_counter() - t0) * 1000
        compactions += fitted.compactions
        if fitted.action == "append":
            times.append(dt)
        conv.extend(_reply(api, step), step)
    print(
        json.dumps({"append_ms": times, "compactions": compactions, "module": glyphfold.__file__})
    )


def _run(tree: Path, api: str, steps: int, window: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(HERE / Path(__file__).name), "--child", api]
    cmd += ["--steps", str(steps), "--window", str(window)]
    out = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=True)
    got = dict(json.loads(out.stdout.strip().splitlines()[-1]))
    if not str(got["module"]).startswith(str(tree)):
        msg = f"the child imported {got['module']}, not the tree {tree}"
        raise RuntimeError(msg)
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apis", default="messages,chat,responses")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--window", type=int, default=64_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-tree", default="")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.steps, args.window)
        return 0
    trees = {"this tree": HERE.parent}
    if args.baseline_tree:
        trees["baseline"] = Path(args.baseline_tree).resolve()
    print(f"load {os.getloadavg()[0]:.1f}; {args.steps} steps, window {args.window:,}")
    print("| api | round | tree | appends | compactions | append p50 ms | append p90 ms |")
    print("|---|---|---|---|---|---|---|")
    p50s: dict[tuple[str, str], list[float]] = {}
    for api in args.apis.split(","):
        for r in range(args.rounds):
            for name, tree in trees.items():
                got = _run(tree, api, args.steps, args.window)
                ms = sorted(got["append_ms"])
                p50 = statistics.median(ms) if ms else float("nan")
                p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))] if ms else float("nan")
                p50s.setdefault((api, name), []).append(p50)
                print(
                    f"| {api} | {r + 1} | {name} | {len(ms)} | {got['compactions']} | "
                    f"{p50:.2f} | {p90:.2f} |",
                    flush=True,
                )
    if args.baseline_tree:
        for api in args.apis.split(","):
            ratios = [
                a / b
                for a, b in zip(p50s[(api, "this tree")], p50s[(api, "baseline")], strict=True)
            ]
            print(
                f"{api}: append p50 this tree / baseline, per round: "
                + ", ".join(f"{x:.3f}" for x in ratios)
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
