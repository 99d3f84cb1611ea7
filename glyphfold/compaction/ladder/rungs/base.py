"""What every rung shares: the Rung protocol, its context, its outcome.

A rung is a small object with a ``name``, a ``model_free`` flag and
``apply(history, ctx) -> RungOutcome``. It never mutates its input: it builds a
new canonical :class:`History` (the history core's model) and reports one ledger
entry. Helpers every rung needs (regions, costs, tool names) are in
:mod:`glyphfold.compaction.ladder.rungs.common`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from glyphfold.compaction.history.markers import pinned_by_meta
from glyphfold.compaction.history.model import History, Message
from glyphfold.compaction.ladder.ledger import LedgerEntry
from glyphfold.render.profiles import Profile

__all__ = ["Rung", "RungContext", "RungOutcome"]


@dataclass(frozen=True)
class RungContext:
    """What a rung may consult: the target, the costing, the regions, pins, the profile."""

    target_tokens: int  # the history must end at or under this (budget minus reserve)
    count: Callable[[History], int]  # token estimate of a whole history
    count_message: Callable[[Message], int]  # token estimate of one message (images sent)
    profile: Profile  # the provider profile pages are priced and sized for
    # per-message estimates of a history, as ``count`` prices them (position-aware)
    costs: Callable[[History], tuple[int, ...]] | None = None
    pinned: frozenset[int] = frozenset()  # id() of pinned Message objects (frozen included)
    # id() of the frozen prefix's messages (SPEC §5.10): earlier snapshot blocks and the
    # text before them, kept byte for byte; only the snapshot rung may merge them
    frozen: frozenset[int] = frozenset()
    dry_run: bool = False
    reactive: bool = False  # recovery after an overflow (SPEC §3.6), not a proactive run
    tokens: int | None = None  # the estimate of the history this rung receives, if known
    history_id: int | None = None  # id() of that history
    # the tail (SPEC §1): the newest messages, a suffix no rung touches; the ladder
    # fixes it once per run (every rung keeps it, so its length holds for each input)
    tail_messages: int = 1
    min_saving_tokens: int = 0  # a rung that cannot save this much does not act

    def tokens_of(self, history: History) -> int:
        """The estimate of ``history``, reusing the ladder's figure for its input."""
        if self.tokens is not None and id(history) == self.history_id:
            return self.tokens
        return self.count(history)

    def message_costs(self, history: History) -> tuple[int, ...]:
        """Per-message estimates of ``history`` (sum + system = :attr:`count`)."""
        if self.costs is not None:
            return self.costs(history)
        return tuple(self.count_message(m) for m in history.messages)

    def is_pinned(self, m: Message) -> bool:
        """Pinned by the caller (``pinned``) or by its own ``x_glyphfold`` metadata."""
        return id(m) in self.pinned or pinned_by_meta(m)

    def need(self, history: History) -> int:
        """Tokens this rung should take off (at least the minimum saving), 0 if it fits."""
        over = self.tokens_of(history) - self.target_tokens
        return max(over, self.min_saving_tokens) if over > 0 else 0


@dataclass(frozen=True)
class RungOutcome:
    """A rung's result: the new history (the input object itself when nothing changed)."""

    history: History
    entry: LedgerEntry | None
    events: tuple[Any, ...] = ()
    pages: tuple[Any, ...] = ()  # rendered snapshot pages (glyphfold.render Page objects)


class Rung(Protocol):
    """One rung of the ladder (docs/architecture.md: a rung = one module + one registry row).

    ``name`` is its registry name (``--rungs``, ``LadderConfig``, the ledger);
    ``model_free`` is False when it calls a model (recovery after an overflow may not
    use it, SPEC §5.1). ``apply`` returns a new history that fits ``ctx.target_tokens``
    as closely as the rung can without removing more than the target needs (SPEC §5.6),
    never touches the head, the tail (``ctx.tail_messages``) or pinned steps, never
    mutates its input, and returns the input object itself with ``entry=None`` when it
    changed nothing; every message it removes is accounted for in its ledger entry.
    """

    name: str
    model_free: bool

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        """Shorten ``history`` toward ``ctx.target_tokens``; see the class docstring."""
        ...
