"""Safety limits for an agent's tool loop (SPEC §4.6).

- at most ``max_iterations`` model calls per request (default 10);
- when the cap is reached, the history rolls back to its state before the request;
- non-idempotent tools are never retried: eviction can make the model forget
  that a call already ran, and running ``send_email`` twice is worse than
  telling the model it already ran.

Usage::

    guard = LoopGuard(history, non_idempotent={"send_email", "git_push"})
    while guard.next_iteration():
        reply = call_model(history)
        ...
        for call in reply.tool_calls:
            if guard.claim(call.name, call.arguments):
                result = run(call)
            else:
                result = guard.not_retried_text(call.name)
        if done:
            break
    else:
        history = guard.rollback()
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.evict import EvictingHistory
from glyphfold.errors import InputError

__all__ = ["DEFAULT_MAX_ITERATIONS", "LoopGuard"]

DEFAULT_MAX_ITERATIONS = 10


def _call_key(name: str, arguments: Any) -> tuple[str, str]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return name, arguments
    # canonical JSON so {"a":1,"b":2} and {"b":2,"a":1} are the same call
    return name, json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


class LoopGuard:
    """Iteration cap with rollback, and at-most-once execution of non-idempotent tools."""

    def __init__(
        self,
        history: Any,
        *,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        non_idempotent: Iterable[str] = (),
    ) -> None:
        check_int("max_iterations", max_iterations, minimum=1)
        if isinstance(non_idempotent, str):
            msg = "non_idempotent must be a collection of tool names, not one string"
            raise InputError(msg)
        self.max_iterations = max_iterations
        self.non_idempotent = frozenset(non_idempotent)
        self.iterations = 0
        self._history = history
        # an EvictingHistory is restored in place; anything else is deep-copied
        self._snapshot = (
            history.snapshot() if isinstance(history, EvictingHistory) else copy.deepcopy(history)
        )
        self._executed: set[tuple[str, str]] = set()

    def next_iteration(self) -> bool:
        """Count one model call; False once ``max_iterations`` calls were made."""
        if self.iterations >= self.max_iterations:
            return False
        self.iterations += 1
        return True

    @property
    def exhausted(self) -> bool:
        """True when the iteration cap is reached."""
        return self.iterations >= self.max_iterations

    def rollback(self) -> Any:
        """The history as it was before the request (docs/history.md).

        An EvictingHistory is restored in place and returned; any other history
        comes back as a fresh deep copy of the snapshot.
        """
        if isinstance(self._history, EvictingHistory):
            self._history.restore(self._snapshot)
            return self._history
        return copy.deepcopy(self._snapshot)

    def is_idempotent(self, name: str) -> bool:
        """True unless ``name`` was declared non-idempotent."""
        return name not in self.non_idempotent

    def claim(self, name: str, arguments: Any = None) -> bool:
        """True if the call may run now; False for a repeat of a non-idempotent call.

        Idempotent tools may always run. A non-idempotent tool runs at most once
        per (name, arguments) for the life of the guard, rollbacks included:
        rolling back the history does not undo a side effect.
        """
        if self.is_idempotent(name):
            return True
        key = _call_key(name, arguments)
        if key in self._executed:
            return False
        self._executed.add(key)
        return True

    @staticmethod
    def not_retried_text(name: str) -> str:
        """Tool-result text for a refused retry, telling the model it already ran."""
        return (
            f"[not retried: {name} is not idempotent and already ran with these arguments "
            "in this request; check its earlier effect instead of calling it again]"
        )
