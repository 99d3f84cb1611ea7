"""Plain records the store returns (frozen dataclasses, no database handles)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class Conversation:
    """One conversation: its id, current branch tip and provenance."""

    id: str
    title: str | None
    format: str | None  # "openai" | "anthropic" | None until a message says which
    tip_id: int | None
    message_count: int  # every stored message, on every branch
    created_at: float
    updated_at: float
    forked_from: str | None = None
    forked_from_message: int | None = None


class StoredMessage(NamedTuple):
    """A stored message: the wire payload exactly as committed plus canonical columns.

    A NamedTuple rather than a frozen dataclass: paths of 10k messages are built
    from it and a frozen dataclass's ``__init__`` costs 4x more per row.
    """

    id: int
    conversation_id: str
    parent_id: int | None
    depth: int  # 0 for a root message
    role: str
    turn_start: bool  # a real user message (SPEC §1): a turn begins here
    ends_turn: bool  # last message of a commit_turn: a clean turn boundary
    tool_call_ids: tuple[str, ...]
    tool_result_ids: tuple[str, ...]
    tokens: int
    payload: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class Branch:
    """A leaf of the session tree, i.e. the tip of one branch."""

    tip_id: int
    length: int  # messages root -> tip
    is_current: bool
    fork_point: int | None  # deepest message shared with the current path (None: none)
    abandoned_ids: tuple[int, ...]  # messages of this branch not on the current path


@dataclass(frozen=True)
class Checkpoint:
    """A label on a clean turn boundary; ``dropped_by`` names the compaction that removed it."""

    conversation_id: str
    label: str
    message_id: int | None  # None: the empty conversation (before the first message)
    created_at: float
    dropped_by: int | None = None

    @property
    def dropped(self) -> bool:
        return self.dropped_by is not None


@dataclass(frozen=True)
class Rewind:
    """What a rewind did: where the tip was, where it is now, and the digest kept."""

    id: int
    conversation_id: str
    label: str
    from_tip: int | None
    to_message: int | None
    digest: str
    abandoned_ids: tuple[int, ...]
    created_at: float


@dataclass(frozen=True)
class CompactionRecord:
    """A stored compaction: ledger, snapshot source text and the messages it replaced."""

    id: int
    conversation_id: str
    tip_id: int | None
    ledger: Any
    snapshot_sources: tuple[str, ...]
    replaced_message_ids: tuple[int, ...]
    dropped_checkpoints: tuple[str, ...]
    created_at: float
