"""Progress of long work on stderr: a live line on a terminal, nothing otherwise.

``with progress("compacting"):`` shows ``glyphfold: compacting… 3.2 s``, refreshed
a few times a second, and clears it when the step ends. Off when stderr is not a
terminal (pipes, CI logs, tests) and with ``--quiet``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from glyphfold.commands._term import escape

_state = {"enabled": False}
REFRESH_S = 0.25


def configure(*, quiet: bool) -> None:
    """Turn progress on for this process when stderr is a terminal and not ``--quiet``."""
    isatty = getattr(sys.stderr, "isatty", lambda: False)
    _state["enabled"] = not quiet and bool(isatty())


def enabled() -> bool:
    """True when progress lines are shown."""
    return _state["enabled"]


@contextmanager
def progress(what: str) -> Iterator[None]:
    """Show ``what`` with the elapsed seconds while the block runs (terminal only)."""
    if not _state["enabled"]:
        yield
        return
    label = escape(what)
    stop = threading.Event()
    t0 = time.monotonic()

    def tick() -> None:
        while not stop.wait(REFRESH_S):
            sys.stderr.write(f"\r\x1b[Kglyphfold: {label}… {time.monotonic() - t0:.1f} s")
            sys.stderr.flush()

    sys.stderr.write(f"\r\x1b[Kglyphfold: {label}…")
    sys.stderr.flush()
    thread = threading.Thread(target=tick, name="glyphfold-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
