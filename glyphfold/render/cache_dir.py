"""Where glyphfold keeps what it computes once per machine (the compiled render kernels).

Never inside the installed package: a site-packages directory may be read-only,
and files the installer did not write survive ``pip uninstall`` (a leftover
``glyphfold/`` directory then shadows a later install as an empty namespace
package). The directory is, first hit wins:

1. ``$GLYPHFOLD_CACHE_DIR``;
2. ``$XDG_CACHE_HOME/glyphfold``;
3. ``~/.cache/glyphfold``;
4. when none of those can be written: ``<temp dir>/glyphfold-<uid>`` (so a
   read-only home still caches for the machine's uptime).

When no candidate is writable, :func:`cache_dir` returns None and the kernels
compile in every process (slower, never wrong).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

ENV_VAR = "GLYPHFOLD_CACHE_DIR"


def candidates() -> list[Path]:
    """The cache directories tried, in order (see the module docstring)."""
    out: list[Path] = []
    env = os.environ.get(ENV_VAR)
    if env:
        out.append(Path(env).expanduser())
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec ignores relative values
        out.append(Path(xdg) / "glyphfold")
    with contextlib.suppress(RuntimeError):  # no $HOME and no passwd entry
        out.append(Path.home() / ".cache" / "glyphfold")
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    out.append(Path(tempfile.gettempdir()) / f"glyphfold-{uid}")
    return out


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def cache_dir(sub: str = "") -> Path | None:
    """Return the first writable cache directory (with ``sub`` appended), or None."""
    for root in candidates():
        path = root / sub if sub else root
        if _writable(path):
            return path
    return None
