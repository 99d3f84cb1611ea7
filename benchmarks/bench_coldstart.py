"""Cold start: whole-process CPU of a fresh process's first render, empty and warm cache.

Run: ``python benchmarks/bench_coldstart.py [--repeat 3] [--large 1000000]
[--python OTHER_PYTHON ...]``. Every row is a new process whose CPU time
(user + system, children included) is read with ``getrusage(RUSAGE_CHILDREN)``;
each figure is the least of ``--repeat`` runs. Baselines (``python -c pass``,
``import numpy``, ``import numba``) run in the same invocation, so the rows
compare on a busy machine. ``--python`` adds the same rows for other
interpreters (e.g. a venv holding an older glyphfold), measured side by side.
Results and the commands used are in benchmarks/README.md ("Cold start").

``--omp DIR --rounds 5``: the first page side by side with oh-my-pi (issue 22). Each
round runs, in turn, a fresh ``render_text`` process (the API), a fresh ``glyphfold
render`` (the CLI) and a fresh Bun process running omp's ``renderMany`` (its native
renderer, ``omp_render.ts``) on the same first 20,000 chars, every one writing its
PNG pages to a folder; the kernel cache is warm (filled once before the rounds).
The table gives the median CPU (user + system) and wall of each over the rounds,
and each against omp's whole process. ``--tree PATH`` adds the API and CLI of
another glyphfold source tree (e.g. a ``git archive`` of main) to the same rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

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


OMP_SETUP = "mkdir -p DIR && cd DIR && npm install @oh-my-pi/snapcompact@18.2.3 @oven/bun-linux-x64"

# a fresh process's first page through the API: render, then write the pages, as the CLI does
_API_CHILD = """
import sys
from pathlib import Path
from glyphfold.render.api import render_text
text = Path(sys.argv[1]).read_text(encoding="utf-8")
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for i, page in enumerate(render_text(text).pages, 1):
    (out / f"page-{i:04d}.png").write_bytes(page.png)
"""

# what the ``glyphfold`` console script runs
_CLI_CHILD = "import sys; from glyphfold.cli import main; sys.exit(main())"


def _tree_env(tree: Path | None, cache: str, pycache: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if pycache is not None:
        # an installed package has its bytecode compiled; a source tree under
        # PYTHONDONTWRITEBYTECODE=1 would compile every module in every process
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    env["GLYPHFOLD_CACHE_DIR"] = cache
    env["NUMBA_CACHE_DIR"] = cache
    env.pop("GLYPHFOLD_RENDER_BACKEND", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def omp_rounds(
    omp: Path, rounds: int, trees: dict[str, Path | None], *, bytecode: bool = True
) -> dict[str, list[F.Run]]:
    """Interleaved fresh processes: per tree its API and CLI, then omp; label -> runs.

    ``bytecode``: the children compile each module once (into a pycache folder of the
    run, filled by the first, untimed, process) and read the bytecode after, as an
    installed glyphfold does; False keeps the environment's setting.
    """
    bun = omp / "node_modules/@oven/bun-linux-x64/bin/bun"
    if not bun.exists():
        raise SystemExit(f"no Bun under {omp}: set it up with {OMP_SETUP}")
    driver = omp / "omp_render.ts"  # next to its node_modules, where imports resolve
    shutil.copyfile(Path(__file__).with_name("omp_render.ts"), driver)
    runs: dict[str, list[F.Run]] = {}
    with tempfile.TemporaryDirectory(prefix="glyphfold-cold-") as tmp:
        src = Path(tmp) / "first-20k.txt"
        src.write_text(mixed_transcript(FIRST_PAGE_CHARS), encoding="utf-8")
        py = sys.executable
        cases: list[tuple[str, list[str], dict[str, str] | None]] = []
        for name, tree in trees.items():
            pyc = str(Path(tmp) / f"pycache-{name}") if bytecode else None
            env = _tree_env(tree, str(Path(tmp) / f"cache-{name}"), pyc)
            out = str(Path(tmp) / f"out-{name}")
            cases.append((f"{name} API", [py, "-c", _API_CHILD, str(src), out + "-api"], env))
            if name == "this":  # numpy's BLAS threads spin at load; the CLI asks for one
                blas1 = {**env, "OPENBLAS_NUM_THREADS": "1"}
                api = [py, "-c", _API_CHILD, str(src), out + "-api1"]
                cases.append((f"{name} API, 1 BLAS thread", api, blas1))
            cli = [py, "-c", _CLI_CHILD, "render", str(src), "--out", out + "-cli", "--quiet"]
            cases.append((f"{name} CLI", cli, env))
        cases.append(("omp (Bun)", [str(bun), str(driver), str(src), str(Path(tmp) / "omp")], None))
        for _, args, env in cases:  # fill the kernel caches, Bun's transpiler cache
            F.run_process(args, env)
        for _ in range(rounds):
            for label, args, env in cases:
                runs.setdefault(label, []).append(F.run_process(args, env))
    return runs


def print_omp(runs: dict[str, list[F.Run]]) -> None:
    """Median CPU and wall per case, and each against omp's whole process."""
    omp = runs["omp (Bun)"]
    omp_cpu = statistics.median(r.cpu_s for r in omp)
    omp_wall = statistics.median(r.wall_s for r in omp)
    print(f"| {'first 20k chars to PNG':30s} | CPU ms | wall ms | CPU / omp | wall / omp |")
    print(f"|{'-' * 32}|--------|---------|-----------|------------|")
    for label, rs in runs.items():
        cpu = statistics.median(r.cpu_s for r in rs)
        wall = statistics.median(r.wall_s for r in rs)
        print(
            f"| {label:30s} | {cpu * 1e3:6.0f} | {wall * 1e3:7.0f} "
            f"| {cpu / omp_cpu:8.2f}x | {wall / omp_wall:9.2f}x |"
        )
    print(f"({len(omp)} interleaved rounds, medians; load {os.getloadavg()[0]:.1f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (least CPU kept)")
    parser.add_argument("--large", type=int, default=1_000_000, help="chars of the large case")
    parser.add_argument("--python", action="append", default=[], help="another interpreter")
    parser.add_argument("--omp", type=Path, default=None, help=f"set up by: {OMP_SETUP}")
    parser.add_argument(
        "--no-bytecode",
        dest="bytecode",
        action="store_false",
        help="(--omp) keep PYTHONDONTWRITEBYTECODE: every child compiles every module",
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (--omp)")
    parser.add_argument(
        "--tree", type=Path, action="append", default=[], help="another source tree (--omp)"
    )
    args = parser.parse_args(argv)
    if args.omp is not None:
        here = Path(__file__).resolve().parents[1]
        trees: dict[str, Path | None] = {"this": here}
        trees.update({t.name: t.resolve() for t in args.tree})
        print_omp(omp_rounds(args.omp, args.rounds, trees, bytecode=args.bytecode))
        return 0
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
