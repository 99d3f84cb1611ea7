"""Pages/s wall of a multi-page render on 1 and 2 threads, interleaved rounds (issue 22).

Run: ``python benchmarks/bench_threads.py [--chars 2000000] [--rounds 5] [--cli]``.
One warm process renders the same text with ``iter_pages(threads=1)`` and
``iter_pages(threads=2)`` in alternation (the order flips every round), each
pass consuming the pages as ``glyphfold render`` does (PNG bytes in hand, none
kept); the table gives the median pages/s wall and CPU seconds of each and the
2-thread / 1-thread ratio. ``--cli`` adds fresh ``glyphfold render --threads N``
processes (pages written to disk) in the same rounds. The machine's load average
is printed: the ratio only means something on an idle box (issue 22;
benchmarks/README.md, "Pages on two threads").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from glyphfold.render.api import iter_pages
from glyphfold.render.warm import warm_up
from glyphfold.samples.mixed_text import mixed_transcript

_CLI = "import sys; from glyphfold.cli import main; sys.exit(main())"


def one_pass(text: str, threads: int, reflow: bool = True) -> tuple[float, float, int]:
    """(wall s, CPU s, pages) of one streamed render on ``threads`` threads."""
    c0, t0 = time.process_time(), time.perf_counter()
    n = sum(1 for _ in iter_pages(text, threads=threads, reflow=reflow))
    return time.perf_counter() - t0, time.process_time() - c0, n


def cli_pass(path: Path, out: Path, threads: int, reflow: bool = True) -> tuple[float, float, int]:
    """(wall s, CPU s, pages) of a fresh ``glyphfold render --threads N`` process."""
    before = os.times()
    t0 = time.perf_counter()
    args = [sys.executable, "-c", _CLI, "render", str(path), "--out", str(out)]
    # cwd: a source tree in the working directory would shadow the one on PYTHONPATH
    args += ["--quiet", "--threads", str(threads), "--reflow" if reflow else "--no-reflow"]
    subprocess.run(args, check=True, cwd=out.parent)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, len(list(out.glob("page-*.png")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="also fresh `glyphfold render` processes")
    ap.add_argument(
        "--no-reflow",
        dest="reflow",
        action="store_false",
        help="a row per line (more, sparser pages; default: reflow, as the CLI)",
    )
    args = ap.parse_args(argv)
    warm_up()
    text = mixed_transcript(args.chars)
    one_pass(text[:200_000], 2)  # the pool, the atlas, first pages
    res: dict[str, list[tuple[float, float, int]]] = {}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="glyphfold-threads-") as tmp:
        path = Path(tmp) / "text.txt"
        path.write_text(text, encoding="utf-8")
        for r in range(args.rounds):
            for threads in (1, 2) if r % 2 == 0 else (2, 1):
                res.setdefault(f"iter_pages threads={threads}", []).append(
                    one_pass(text, threads, args.reflow)
                )
                if args.cli:
                    out = Path(tmp) / f"out{threads}"
                    res.setdefault(f"render --threads {threads}", []).append(
                        cli_pass(path, out, threads, args.reflow)
                    )
    kind = "reflow" if args.reflow else "no reflow"
    print(f"| {args.chars:,} chars, {kind} | pages | pages/s wall | CPU s | wall s |")
    print("|---|---|---|---|---|")
    rate: dict[str, float] = {}
    for label, rs in res.items():
        wall = statistics.median(w for w, _, _ in rs)
        cpu = statistics.median(c for _, c, _ in rs)
        rate[label] = rs[0][2] / wall
        print(f"| {label} | {rs[0][2]} | {rate[label]:,.0f} | {cpu:.2f} | {wall:.2f} |")
    for kind in ("iter_pages threads=", "render --threads "):
        if kind + "1" in rate:
            gain = rate[kind + "2"] / rate[kind + "1"]
            print(f"{kind.strip('= ')}: 2 threads / 1 thread = {gain:.2f}x")
    print(
        f"({args.rounds} interleaved rounds, medians; load {load0:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after; {os.cpu_count()} CPUs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
