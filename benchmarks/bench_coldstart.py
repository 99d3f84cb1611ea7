"""Cold start: whole-process CPU of a fresh process's first render, empty and warm cache.

Run: ``python benchmarks/bench_coldstart.py [--repeat 3] [--large 1000000]
[--python OTHER_PYTHON ...]``. Every row is a new process whose CPU time
(user + system, children included) is read with ``getrusage(RUSAGE_CHILDREN)``;
each figure is the least of ``--repeat`` runs. Baselines (``python -c pass``,
``import numpy``, ``import numba``) run in the same invocation, so the rows
compare on a busy machine. ``--python`` adds the same rows for other
interpreters (e.g. a venv holding an older glyphfold), measured side by side.
Results and the commands used are in benchmarks/README.md ("Cold start").
"""

from __future__ import annotations

import argparse
import sys

from glyphfold.commands import _bench_fresh as F
from glyphfold.samples.mixed_text import mixed_transcript

FIRST_PAGE_CHARS = 20_000


def rows(python: str, repeat: int, large: int) -> list[tuple[str, F.Run]]:
    """(label, run) for the baselines and each render case, with interpreter ``python``."""
    out = list(F.baseline_runs(repeat=repeat, python=python).items())
    cases = [
        (FIRST_PAGE_CHARS, "auto", "first render, 20k chars"),
        (FIRST_PAGE_CHARS, "numba", "first render, 20k chars, kernels forced"),
    ]
    if large:
        cases.append((large, "auto", f"first render, {large // 1000}k chars"))
    for n, backend, label in cases:
        text = mixed_transcript(n)
        runs = F.render_runs(
            text, profile="anthropic", backend=backend, repeat=repeat, python=python
        )
        out += [(f"{label}, {cache}", r) for cache, r in runs.items()]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (least CPU kept)")
    parser.add_argument("--large", type=int, default=1_000_000, help="chars of the large case")
    parser.add_argument("--python", action="append", default=[], help="another interpreter")
    args = parser.parse_args(argv)
    for python in [sys.executable, *args.python]:
        print(f"## {python}")
        print(f"| {'case':52s} | {'CPU s':>7s} | {'wall s':>7s} | path |")
        print(f"|{'-' * 54}|{'-' * 9}|{'-' * 9}|------|")
        for label, r in rows(python, args.repeat, args.large):
            path = r.info.get("backend", "")
            if path == "numba":
                path += f", {r.info['cache_misses']} kernel compilations"
            print(f"| {label:52s} | {r.cpu_s:7.3f} | {r.wall_s:7.3f} | {path} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
