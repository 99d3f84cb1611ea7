"""Whole-process CPU of a fresh process's first render, cold and warm (``glyphfold bench``).

Each case runs a new Python process and reads its CPU time (user + system,
children included) from ``resource.getrusage(RUSAGE_CHILDREN)``, so imports,
font lookups, compilation and the render all count, as a user's first call
pays them. Baselines measured in the same run (``python -c pass``, ``import
numpy``, ``import numba``) put the figures in proportion on a busy machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from glyphfold.errors import GlyphfoldError

# The kernels a render may go through (cache hits and misses are read from them).
KERNELS = (
    "layout_page",
    "skip_dropped",
    "blit_page",
    "blit_page_u64",
    "blit_page_stream",
    "blit_bits",
    "pack_rows",
    "pack_rows_1bit_u64",
    "pack_rows_2bit_u64",
    "mark_seen",
)

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from glyphfold.render.api import render_text
text = open(sys.argv[1], encoding="utf-8").read()
t1 = time.perf_counter()
res = render_text(text, profile=sys.argv[2], font=sys.argv[3] or None)
t2 = time.perf_counter()
K = sys.modules.get("glyphfold.render._kernels")
hits = misses = 0
for name in (__KERNELS__ if K else ()):
    st = getattr(K, name).stats
    hits += sum(st.cache_hits.values())
    misses += sum(st.cache_misses.values())
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_page_ms": (t2 - t1) * 1e3,
                  "backend": "numba" if K else "numpy", "numba_imported": "numba" in sys.modules,
                  "cache_hits": hits, "cache_misses": misses, "pages": len(res.pages)}))
""".replace("__KERNELS__", repr(KERNELS))

BASELINES = {
    "python -c pass": "pass",
    "python -c 'import numpy'": "import numpy",
    "python -c 'import numba'": "import numba",
}


class FreshProcessError(GlyphfoldError, RuntimeError):
    """A fresh-process run that failed (its last stderr line is in the message)."""


@dataclass(frozen=True)
class Run:
    """One fresh process: CPU seconds (user + system, children included), wall seconds."""

    cpu_s: float
    wall_s: float
    info: dict


def run_process(args: list[str], env: dict[str, str] | None = None) -> Run:
    """Run ``args`` in a new process; return its CPU and wall time and its last JSON line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(
        args,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
        cwd=tempfile.gettempdir(),  # a source checkout in the cwd would shadow the install
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        msg = f"a fresh-process run failed (exit {proc.returncode}): {tail}"
        raise FreshProcessError(msg)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.strip().splitlines()
    info = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    info["stderr"] = proc.stderr.strip()
    return Run(cpu, wall, info)


def _env(cache: str, backend: str) -> dict[str, str]:
    env = dict(os.environ)
    env["GLYPHFOLD_CACHE_DIR"] = cache
    # numba's own locator: where a glyphfold that predates GLYPHFOLD_CACHE_DIR caches
    env["NUMBA_CACHE_DIR"] = cache
    env["GLYPHFOLD_RENDER_BACKEND"] = backend
    return env


def render_runs(
    text: str,
    *,
    profile: str,
    font: str = "",
    backend: str = "auto",
    repeat: int = 3,
    python: str = sys.executable,
) -> dict[str, Run]:
    """The best (least CPU) of ``repeat`` fresh renders of ``text``, empty and warm cache.

    ``python`` is the interpreter to run (another install of glyphfold, to compare).
    """
    out: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="glyphfold-bench-") as tmp:
        path = Path(tmp) / "input.txt"
        path.write_text(text, encoding="utf-8")
        args = [python, "-c", _CHILD, str(path), profile, font]
        cold: list[Run] = []
        for i in range(repeat):
            cold.append(run_process(args, _env(str(Path(tmp) / f"empty-{i}"), backend)))
        warm_dir = str(Path(tmp) / "empty-0")  # filled by the first cold run
        warm = [run_process(args, _env(warm_dir, backend)) for _ in range(repeat)]
    out["empty cache"] = min(cold, key=lambda r: r.cpu_s)
    out["warm cache"] = min(warm, key=lambda r: r.cpu_s)
    return out


def baseline_runs(*, repeat: int = 3, python: str = sys.executable) -> dict[str, Run]:
    """The best of ``repeat`` runs of each baseline process."""
    return {
        label: min(
            (run_process([python, "-c", code]) for _ in range(repeat)),
            key=lambda r: r.cpu_s,
        )
        for label, code in BASELINES.items()
    }
