"""One compiled specialisation per kernel: a warm cache never compiles again (issue 22).

numba compiles a kernel once per tuple of argument types; a read-only code point
array (what ``to_codepoints`` returns) and a writable one (a folded or recomposed
copy) used to be two types, so real sessions compiled ``layout_page`` a second
time in a process that had a warm cache. The render boundary now hands every
kernel the same types.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from glyphfold.render import backend
from glyphfold.render.api import plan_text, render_text

REALDATA = Path(os.environ.get("GLYPHFOLD_REALDATA", "/work/shared/realdata"))

# text kinds that take different paths through the layout: ASCII, tabs and blank
# runs (folded), CJK (wide), ANSI escapes, combining marks (recomposed: a writable
# copy of the code points), emoji, CR/LF breaks
KINDS = (
    "plain ascii text " * 40,
    "\tindented\n\n\n    code   with   runs  \n" * 30,
    "国语 wide 国语 " * 60,
    "\x1b[31mred\x1b[0m and \x1b]0;title\x07 " * 40,
    "cafe\u0301 e\u0301te\u0301 " * 50,
    "done ✅ 😀 → ok\r\n" * 40,
)

_CHILD = """
import json, sys
from numba.core import event
from glyphfold.render import _kernels as K
counted = []
class L(event.Listener):
    def on_start(self, ev):
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        if fn is not None and fn.__module__ == K.__name__:
            counted.append(fn.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", L())
exec(sys.argv[1])
print(json.dumps(counted))
"""

_WARM = "import glyphfold; glyphfold.warm_up()"

_REAL = """
import glob, json
import glyphfold
from glyphfold.render.api import render_text
for t in {kinds!r}:
    render_text(t, collapse=True, reflow=True)
    render_text(t)
files = sorted(glob.glob({realdata!r} + "/*.json"))[:12]
for f in files:
    try:
        h = json.load(open(f))
        glyphfold.compact(h, budget=3000)
    except Exception:
        pass
"""


def _child(code: str, cache: Path) -> tuple[list[str], str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("XDG_CACHE_HOME", "NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")
    }
    env.update(GLYPHFOLD_CACHE_DIR=str(cache), GLYPHFOLD_RENDER_BACKEND="numba")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, code],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(not REALDATA.is_dir(), reason="no real sessions here")
def test_a_warm_cache_compiles_nothing_on_real_sessions(tmp_path):
    """warm_up in one process; real sessions and other text kinds in the next: 0 compiled."""
    compiled, _ = _child(_WARM, tmp_path)
    assert "layout_page" in compiled and "collapse_whitespace" in compiled
    again, err = _child(_REAL.format(kinds=KINDS, realdata=str(REALDATA)), tmp_path)
    assert again == [], f"compiled again on a warm cache: {again}"
    assert "compiling" not in err


_COLD = """
import glyphfold
from glyphfold.render.api import plan_text, render_text
glyphfold.warm_up()
for t in {kinds!r}:
    for opts in ({{}}, {{"collapse": True, "reflow": True}}, {{"bits": 2}}, {{"shape": "dense"}}):
        render_text(t, **opts)
        plan_text(t, **opts)
"""


@pytest.mark.skipif(
    os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="no compiled specialisations without JIT"
)
def test_a_cold_cache_compiles_each_kernel_once(tmp_path):
    """On an empty cache every kernel compiles once, callees included (a warm cache
    loads the callers whole and would hide a callee typed two ways: the row index of
    ``_lower_halves`` once reached it as the literal 0 and once as int64)."""
    compiled, _ = _child(_COLD.format(kinds=KINDS), tmp_path)
    assert "layout_page" in compiled
    twice = sorted({name for name in compiled if compiled.count(name) > 1})
    assert not twice, f"compiled more than once on a cold cache: {twice}"


@pytest.mark.skipif(
    os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="no compiled specialisations without JIT"
)
def test_each_kernel_has_one_specialisation(monkeypatch):
    """Every text kind and option reaches each kernel with the same argument types."""
    monkeypatch.setenv(backend.ENV_VAR, "numba")
    K = backend.kernels()
    for text in KINDS:
        for opts in ({}, {"collapse": True, "reflow": True}, {"bits": 2}, {"shape": "dense"}):
            render_text(text, **opts)
            plan_text(text, **opts)
    many = {
        name: d.signatures
        for name in dir(K)
        if len(getattr(d := getattr(K, name), "signatures", ())) > 1
    }
    assert not many, f"kernels compiled for more than one type tuple: {sorted(many)}"
