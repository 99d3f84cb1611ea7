"""The proxy's JSON-lines event log: one line per request and per notable event.

Lines carry numbers, model names, routes and rung names, never a header, a key or
message text; callers pass only those fields (the log does not filter for them).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import IO, Any

__all__ = ["EventLog"]


class EventLog:
    """Append JSON lines to a file (``"-"``: standard error); ``None`` logs nothing."""

    def __init__(self, target: str | None) -> None:
        self._lock = threading.Lock()
        self._own = False
        self._out: IO[str] | None = None
        if target == "-":
            self._out = sys.stderr
        elif target is not None:
            self._out = open(target, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
            self._own = True

    def write(self, event: str, **fields: Any) -> None:
        """Log one event (``ts`` and ``event`` first, then ``fields``)."""
        if self._out is None:
            return
        line = json.dumps(
            {"ts": round(time.time(), 6), "event": event, **fields},
            ensure_ascii=False,
            separators=(",", ":"),
            default=str,
        )
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()

    def close(self) -> None:
        """Close the file if this log opened it."""
        if self._own and self._out is not None:
            self._out.close()
        self._out = None
