"""Which path renders: the numba kernels or the numpy path (the one place this is decided).

A fresh process pays about a second of CPU to import numba and dispatch its
first kernel, even with a warm cache (and seconds more to compile with an empty
one); the numpy path (:mod:`glyphfold.render.vector`) renders about a million
characters in half a second of CPU, the kernels in a tenth (measured in
benchmarks/README.md, "Cold start"). So the kernels are loaded only once they
pay for themselves:

* once they are loaded in this process (or :func:`glyphfold.warm_up` loaded
  them), every render uses them;
* until then, the numpy path renders, and this module counts the characters it
  has laid out; when a render would take that count past
  :data:`KERNELS_AFTER_CHARS`, the kernels are loaded and take over.

A one-shot process (a CLI call, a script) thus never waits for numba; a
long-running harness switches to the kernels after a few large renders.
``GLYPHFOLD_RENDER_BACKEND=numba`` or ``=numpy`` forces one path (for
benchmarks and checks; both give byte-identical pages).
"""

from __future__ import annotations

import os
import sys
import threading
from types import ModuleType

from glyphfold.errors import InputError

ENV_VAR = "GLYPHFOLD_RENDER_BACKEND"
MODES = ("auto", "numba", "numpy")
# Characters the numpy path lays out before the kernels are worth loading: at about
# 0.5 s of CPU per million characters it has then spent what loading costs (~1 s).
KERNELS_AFTER_CHARS = 2_000_000
_KERNELS = "glyphfold.render._kernels"
_spent = 0  # characters laid out by the numpy path in this process
_spent_lock = threading.Lock()


def mode() -> str:
    """The backend mode from ``$GLYPHFOLD_RENDER_BACKEND`` (default ``auto``)."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in MODES:
        msg = f"${ENV_VAR} must be one of {', '.join(MODES)}, got {value!r}"
        raise InputError(msg)
    return value


def kernels_loaded() -> bool:
    """Whether this process has imported the numba kernels already."""
    return _KERNELS in sys.modules


def use_kernels(n_chars: int) -> bool:
    """Whether a layout of ``n_chars`` characters should run on the numba kernels.

    In ``auto`` mode a "no" is also a promise to pay: the characters count towards
    :data:`KERNELS_AFTER_CHARS`.
    """
    global _spent
    m = mode()
    if m != "auto":
        return m == "numba"
    if kernels_loaded():
        return True
    with _spent_lock:
        if _spent + n_chars > KERNELS_AFTER_CHARS:
            return True
        _spent += n_chars
    return False


def numpy_chars() -> int:
    """Characters the numpy path has laid out in this process so far."""
    return _spent


def kernels() -> ModuleType:
    """Import and return the numba kernel module (kernels compile or load on first call)."""
    from glyphfold.render import _kernels

    return _kernels
