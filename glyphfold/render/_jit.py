"""How the render kernels are compiled: flags, where the cache lives, the compile notice.

Imported by ``_kernels`` only, so importing it means numba is wanted.

* ``kernel``: the decorator every kernel is compiled with (the one set of flags).
* The kernels cache in :func:`glyphfold.render.cache_dir.cache_dir` (``kernels/``),
  never next to the installed sources: a locator placed first in numba's list
  claims this package's kernel modules (``_kernels``, ``codes``) and nothing else.
* The first compilation in a process logs one record on the ``glyphfold.render`` logger,
  a warning the CLI prints on stderr (compiling costs
  seconds once per machine; silence would look like a hang). ``notice = None``
  turns it off.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from numba import njit
from numba.core import caching, event

from glyphfold.render.cache_dir import cache_dir

KERNEL_FILE = Path(__file__).with_name("_kernels.py")
# The kernels compile functions of both files (``codes`` holds the rules the numpy
# path shares); a cached kernel is valid while neither file has changed.
KERNEL_FILES = (KERNEL_FILE, Path(__file__).with_name("codes.py"))
CACHE_DIR = cache_dir("kernels")
kernel = njit(cache=CACHE_DIR is not None, nogil=True, boundscheck=False)


class KernelCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Caches glyphfold's kernel module in the user's cache directory."""

    def __init__(self, py_func, py_file) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        assert CACHE_DIR is not None
        self._cache_path = str(CACHE_DIR / self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> tuple[tuple[float, int], ...]:
        """Modification time and size of every kernel source file, not just this one.

        numba keys a cache entry on its own file only; a kernel that inlines a
        rule of ``codes`` must be recompiled when ``codes`` changes.
        """
        return tuple((st.st_mtime, st.st_size) for st in map(os.stat, KERNEL_FILES))

    @classmethod
    def from_function(cls, py_func, py_file):
        if CACHE_DIR is None or not _is_kernel_file(py_file):
            return None  # not ours: numba's own locators decide
        return super().from_function(py_func, py_file)


def _is_kernel_file(py_file: str) -> bool:
    try:
        return any(os.path.samefile(py_file, f) for f in KERNEL_FILES)
    except OSError:
        return False


def _install_locator() -> None:
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # type: ignore[attr-defined]
    if KernelCacheLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, KernelCacheLocator)


_log = logging.getLogger("glyphfold.render")


def _log_notice(message: str) -> None:
    _log.warning(message)  # a record, silent unless logging is configured (the CLI shows it)


notice: Callable[[str], None] | None = _log_notice


class _CompileNotice(event.Listener):
    """Says once per process that the kernels are being compiled (cache misses only)."""

    def __init__(self) -> None:
        self.said = False
        self.lock = threading.Lock()

    def on_start(self, ev) -> None:
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        if fn is None or not _is_kernel_file(fn.__code__.co_filename):
            return
        with self.lock:
            if self.said:
                return
            self.said = True
        if notice is not None:
            where = f"cached in {CACHE_DIR}" if CACHE_DIR else "no writable cache directory"
            notice(
                "glyphfold: compiling the render kernels for this machine "
                f"(once, a few seconds; {where})"
            )

    def on_end(self, ev) -> None:
        """Nothing to say when a compilation ends (the notice is one line)."""


_install_locator()
event.register("numba:compile", _CompileNotice())
