"""What every rung shares: the Rung protocol, its context, its outcome, token costing.

A rung is a small object with a ``name``, a ``model_free`` flag and
``apply(history, ctx) -> RungOutcome``. It never mutates its input: it builds a
new canonical :class:`History` (core's model) and reports one ledger entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from glyphfold.compaction.history.messages import History, Message
from glyphfold.compaction.ladder.ledger import LedgerEntry

# metadata key used in canonical ``Message.meta`` and in the wire dict (JSON output)
X_KEY = "x_glyphfold"


@dataclass(frozen=True)
class RungContext:
    """What a rung may consult: the target, the costing, pins, the profile, the original input."""

    target_tokens: int  # the history must end at or under this (budget minus reserve)
    count: Callable[[History], int]  # token estimate of a whole history
    count_message: Callable[[Message], int]  # token estimate of one message
    profile: Any  # glyphfold.render.profiles.Profile
    pinned: frozenset[int] = frozenset()  # id() of pinned Message objects
    original: History | None = None  # the ladder's input, when message-aligned with history
    dry_run: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    tokens: int | None = None  # the estimate of the history this rung receives, if known
    history_id: int | None = None  # id() of that history

    def tokens_of(self, history: History) -> int:
        """The estimate of ``history``, reusing the ladder's figure for its input."""
        if self.tokens is not None and id(history) == self.history_id:
            return self.tokens
        return self.count(history)

    def is_pinned(self, m: Message) -> bool:
        return id(m) in self.pinned or bool(glyphfold_meta(m).get("pin"))


@dataclass(frozen=True)
class RungOutcome:
    """A rung's result: the new history (the input object itself when nothing changed)."""

    history: History
    entry: LedgerEntry | None
    events: tuple[Any, ...] = ()
    pages: tuple[Any, ...] = ()  # rendered snapshot pages (glyphfold.render Page objects)


class Rung(Protocol):
    name: str
    model_free: bool

    def apply(self, history: History, ctx: RungContext) -> RungOutcome: ...


def glyphfold_meta(m: Message) -> Mapping[str, Any]:
    """The message's glyphfold metadata: canonical ``meta`` first, then the wire key."""
    meta = m.meta.get(X_KEY) if m.meta else None
    if isinstance(meta, Mapping):
        return meta
    raw = m.raw.get(X_KEY) if m.raw is not None else None
    return raw if isinstance(raw, Mapping) else {}
