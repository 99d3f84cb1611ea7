"""A warm kernel cache plus every real session: how many kernels compile (issue 22).

Run: ``python benchmarks/bench_kernels_compiled.py [DIR]`` (default DIR: the real
sessions, as ``bench_real_sessions.py`` finds them). On an empty cache folder a
first process runs ``glyphfold.warm_up()``; a second process, kernels forced
(``GLYPHFOLD_RENDER_BACKEND=numba``), then compacts every session of DIR at 50% and
20% of its estimate and runs ``recover()`` on it, as ``bench_real_sessions.py``
does, while a numba event listener counts the kernels compiled. The target is 0
(issue 22; one specialisation per kernel, ``tests/render/test_specialisation.py``).
Exit status 1 when anything compiled.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_LISTEN = """
import json, sys
from numba.core import event
from glyphfold.render import _kernels as K
compiled = []
class L(event.Listener):
    def on_start(self, ev):
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        if fn is not None and fn.__module__ == K.__name__:
            compiled.append(fn.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", L())
"""

_WARM = (
    _LISTEN
    + """
import glyphfold
glyphfold.warm_up()
print(json.dumps({"compiled": compiled}))
"""
)

_SESSIONS = (
    _LISTEN
    + """
sys.path.insert(0, sys.argv[1])
from bench_real_sessions import load_sessions
from glyphfold.compaction.history.tokens import token_costs
from glyphfold.compaction.ladder.api import compact, recover
from glyphfold.errors import ContextOverflowError
from glyphfold.render.profiles import get_profile
profile = get_profile("anthropic")
sessions = load_sessions([__import__("pathlib").Path(sys.argv[2])])
calls = raised = 0
by_session = {}
for name, h in sessions:
    est = token_costs(h, profile=profile, image_policy="all").total
    before = len(compiled)
    for budget in (est // 2, est // 5, None):
        calls += 1
        try:
            if budget is None:
                recover(h, profile=profile)
            else:
                compact(h, budget=max(budget, 1), profile=profile)
        except ContextOverflowError:
            raised += 1
    if len(compiled) > before:
        by_session[name] = compiled[before:]
print(json.dumps({"sessions": len(sessions), "calls": calls, "raised": raised,
                  "compiled": compiled, "by_session": by_session}))
"""
)


def child(code: str, cache: Path, *args: str) -> tuple[dict, str]:
    """Run ``code`` in a fresh process on the kernel cache ``cache``; (its JSON, stderr)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("XDG_CACHE_HOME", "NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")
    }
    env.update(GLYPHFOLD_CACHE_DIR=str(cache), GLYPHFOLD_RENDER_BACKEND="numba")
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", type=Path, default=None, help="folder of real sessions")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from bench_real_sessions import default_dirs

    folder = args.dir or next((d for d in default_dirs() if d.is_dir()), None)
    if folder is None or not folder.is_dir():
        print("no real sessions here: nothing to check")
        return 0
    with tempfile.TemporaryDirectory(prefix="glyphfold-kernels-") as tmp:
        t0 = time.perf_counter()
        warm, _ = child(_WARM, Path(tmp))
        t1 = time.perf_counter()
        run, err = child(_SESSIONS, Path(tmp), str(HERE), str(folder))
        t2 = time.perf_counter()
    print(f"warm_up on an empty cache: {len(warm['compiled'])} compilations ({t1 - t0:.1f} s)")
    print(
        f"then {run['sessions']} sessions of {folder}, {run['calls']} calls "
        f"(compact at 50% and 20% of the estimate, recover; {run['raised']} raised), "
        f"{t2 - t1:.1f} s: {len(run['compiled'])} kernels compiled"
    )
    for name, kernels in run["by_session"].items():
        print(f"  {name}: {', '.join(kernels)}")
    if "compiling" in err:
        print("stderr printed the compile notice")
    print(f"(load {os.getloadavg()[0]:.1f})")
    return 1 if run["compiled"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
