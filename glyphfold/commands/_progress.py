"""Progress of long work on stderr: a live line on a terminal, nothing otherwise.

``with progress("compacting"):`` shows ``glyphfold: compacting… 3.2 s``, refreshed
a few times a second, and clears it when the step ends. Off when stderr is not a
terminal (pipes, CI logs, tests) and with ``--quiet``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
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


def fraction_status(done: Callable[[], tuple[int, float]], unit: str) -> Callable[[float], str]:
    """A status for :func:`progress`: ``12 pages, 34%, ETA 5.1 s`` from ``done()``
    returning (units done, fraction of the work done 0..1)."""

    def status(elapsed: float) -> str:
        count, frac = done()
        eta = f", ETA {elapsed * (1 - frac) / frac:.1f} s" if 0 < frac < 1 else ""
        return f"{count:,} {unit}, {frac:.0%}{eta}, {elapsed:.1f} s"

    return status


@contextmanager
def progress(what: str, status: Callable[[float], str] | None = None) -> Iterator[None]:
    """Show ``what`` with the elapsed seconds while the block runs (terminal only).

    ``status(elapsed)`` (e.g. :func:`fraction_status`) replaces the bare seconds.
    """
    if not _state["enabled"]:
        yield
        return
    label = escape(what)
    stop = threading.Event()
    t0 = time.monotonic()

    def tick() -> None:
        while not stop.wait(REFRESH_S):
            elapsed = time.monotonic() - t0
            shown = escape(status(elapsed)) if status is not None else f"{elapsed:.1f} s"
            sys.stderr.write(f"\r\x1b[Kglyphfold: {label}… {shown}")
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
