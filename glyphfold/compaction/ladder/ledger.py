"""The loss ledger: what each rung removed, where it went, and what it saved (SPEC §5).

Nothing leaves a history without a record. One :class:`LedgerEntry` per rung
that acted; each names the messages it touched (by index in the rung's input
and, when they have one, by id), the characters and tokens that left, where
they went (``stub``, ``placeholder``, ``cleared``, ``snapshot``, ``summary``,
``dropped``, ``trimmed``) and the tokens saved. Entries are plain frozen data so
they serialise to JSON and compare equal across runs (the ladder is deterministic).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from glyphfold.checks import check_choice, check_int

# where removed content went; an explicit set, every writer is checked against it
Destination: TypeAlias = Literal[
    "stub", "placeholder", "cleared", "snapshot", "summary", "dropped", "trimmed"
]
DESTINATIONS: frozenset[str] = frozenset(get_args(Destination))


@dataclass(frozen=True, slots=True)
class Removed:
    """One piece of content that left the history."""

    index: int  # message index in the rung's input history
    dest: str  # one of DESTINATIONS
    chars: int  # characters that left (text, or serialised size of an image)
    tokens: int  # estimated tokens that left
    id: str | None = None  # message id / tool call id when the message has one
    role: str | None = None
    detail: str = ""  # e.g. the stub or placeholder text, or the drop reason

    def __post_init__(self) -> None:
        # the valid case tested inline first: a snapshot writes one row per imaged message
        if type(self.dest) is not str or self.dest not in DESTINATIONS:
            check_choice("ledger destination", self.dest, sorted(DESTINATIONS), error=ValueError)
        if type(self.index) is not int or self.index < 0:
            check_int("ledger index", self.index, minimum=0, error=ValueError)
        if type(self.chars) is not int or self.chars < 0:
            check_int("ledger chars", self.chars, minimum=0, error=ValueError)


@dataclass(frozen=True, slots=True)
class PageRecord:
    """One snapshot page: its size, cost and the span of snapshot source it shows."""

    width: int
    height: int
    image_tokens: int
    png_bytes: int
    source_span: tuple[int, int]  # [start, end) offsets in the snapshot source text


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What one rung did to the history."""

    rung: str
    tokens_before: int
    tokens_after: int
    removed: tuple[Removed, ...] = ()
    pages: tuple[PageRecord, ...] = ()
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_saved(self) -> int:
        """Tokens this rung took off the estimate (never negative in a useful entry)."""
        return self.tokens_before - self.tokens_after

    @property
    def chars_removed(self) -> int:
        return sum(r.chars for r in self.removed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists)."""
        d = asdict(self)
        d["tokens_saved"] = self.tokens_saved
        d["chars_removed"] = self.chars_removed
        return d

    def summary_line(self) -> str:
        """One human line: rung, what left, tokens before -> after."""
        by_dest: dict[str, int] = {}
        for r in self.removed:
            by_dest[r.dest] = by_dest.get(r.dest, 0) + 1
        parts = [f"{n:,} -> {dest}" for dest, n in sorted(by_dest.items())]
        if self.pages:
            parts.append(f"{len(self.pages):,} page(s)")
        if self.note:
            parts.append(self.note)
        what = ", ".join(parts) if parts else "nothing"
        return (
            f"{self.rung}: {what}; {self.tokens_before:,} -> {self.tokens_after:,} tokens "
            f"(saved {self.tokens_saved:,})"
        )


def ledger_to_json(entries: tuple[LedgerEntry, ...] | list[LedgerEntry]) -> list[dict[str, Any]]:
    """Serialise a ledger to a list of JSON-ready dicts."""
    return [e.to_dict() for e in entries]
