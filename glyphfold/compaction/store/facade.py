"""The :class:`Store` facade: one public API over the store's concerns.

Each method validates nothing itself and delegates to the module of its concern:
``conversations`` (rows, handle state), ``tree`` (commit, paths, branch, fork),
``checkpoints`` (checkpoint, rewind), ``compactions`` (record, restore),
``resume``, ``dump`` (export, dump, load, import) and ``integrity`` (check);
``schema`` creates and upgrades the tables. Backends (``sqlite.py``,
``postgres.py``) only open connections and run transactions, so every rule of
SPEC §6 is written once and the two backends cannot drift.

Concurrency model: ``commit_turn`` is one transaction that locks the
conversation row, compares the tip with the tip the caller expects, appends the
whole turn and moves the tip (compare-and-set). The loser of a race gets
``ConflictError`` and nothing of its turn is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from glyphfold.compaction.history.events import CheckpointDropped, EventBus, default_bus
from glyphfold.compaction.history.tokens import DEFAULT_PROFILE, TokenCounter
from glyphfold.compaction.store import checkpoints as _checkpoints
from glyphfold.compaction.store import compactions as _compactions
from glyphfold.compaction.store import conversations as _conversations
from glyphfold.compaction.store import dump as _dump
from glyphfold.compaction.store import integrity as _integrity
from glyphfold.compaction.store import resume as _resume
from glyphfold.compaction.store import schema
from glyphfold.compaction.store import tree as _tree
from glyphfold.compaction.store.backend import Backend
from glyphfold.compaction.store.conversations import Ctx
from glyphfold.compaction.store.records import (
    Branch,
    Checkpoint,
    CompactionRecord,
    Conversation,
    Rewind,
    StoredMessage,
)
from glyphfold.compaction.store.rows import UNSET


class Store:
    """A transcript store: conversations as trees of messages with a current tip.

    Not thread-safe: open one ``Store`` per thread or process (connections are
    cheap). Use it as a context manager or call :meth:`close`.
    """

    def __init__(self, backend: Backend, *, bus: EventBus | None = None) -> None:
        self._backend = backend
        self._bus = bus
        self._ctx = Ctx(backend, bus)
        try:
            schema.open_schema(backend)
        except BaseException:
            backend.close()
            raise

    # -- lifecycle ---------------------------------------------------------

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._backend.dialect

    @property
    def where(self) -> str:
        """Where the store lives (password redacted)."""
        return self._backend.where

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def subscribe(self, callback: Callable[[object], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for this store's events (on its bus); returns unsubscribe."""
        return (self._bus if self._bus is not None else default_bus).subscribe(
            callback, types=(CheckpointDropped,)
        )

    def schema_version(self) -> int:
        """The schema version of the open store."""
        with self._backend.read() as tx:
            return schema.read_version(tx, where=self.where)

    # -- conversations -----------------------------------------------------

    def create_conversation(self, *, title: str | None = None) -> str:
        """Create an empty conversation and return its id."""
        return _conversations.create(self._ctx, title)

    def conversations(self) -> list[Conversation]:
        """Every conversation, most recently updated first."""
        return _conversations.list_all(self._ctx)

    def conversations_titled(self, title: str, *, limit: int = 16) -> list[Conversation]:
        """Up to ``limit`` conversations titled exactly ``title``, most recently updated first
        (one query; the proxy's recorder finds its conversations with it)."""
        return _conversations.titled(self._ctx, title, limit)

    def conversation(self, conversation: str) -> Conversation:
        """One conversation; ``NotFoundError`` when the id does not exist."""
        with self._backend.read() as tx:
            return _conversations.get(self._ctx, tx, conversation)

    def resolve(self, prefix: str) -> str:
        """The conversation id that is ``prefix`` or starts with it (for humans typing ids)."""
        return _conversations.resolve(self._ctx, prefix)

    def tip(self, conversation: str) -> int | None:
        """The id of the conversation's current tip (None while it is empty)."""
        tip = self.conversation(conversation).tip_id
        self._ctx.seen[conversation] = tip
        return tip

    # -- messages ----------------------------------------------------------

    def commit_turn(
        self,
        conversation: str,
        messages: Sequence[dict[str, Any]] | dict[str, Any],
        *,
        expected_tip: int | None = UNSET,
    ) -> list[int]:
        """Append one whole turn after the tip in one transaction; return the new ids.

        ``messages`` is a list of wire messages (OpenAI or Anthropic), an
        Anthropic ``{"system": ..., "messages": [...]}`` dict, or a canonical
        ``History`` (stored as its wire form). The tip moves
        only if it still is ``expected_tip`` (default: the tip this handle last
        saw, or the current tip if it never looked): otherwise
        ``ConflictError`` and nothing is written (docs/store.md).
        """
        return _tree.commit_turn(self._ctx, conversation, messages, expected_tip)

    def path(self, conversation: str, *, message_id: int | None = UNSET) -> list[dict[str, Any]]:
        """The messages root -> tip (or -> ``message_id``), wire dicts exactly as committed."""
        return _tree.path(self._ctx, conversation, message_id, records=False)

    def path_records(
        self, conversation: str, *, message_id: int | None = UNSET
    ) -> list[StoredMessage]:
        """Like :meth:`path` with ids, parents and canonical columns."""
        return _tree.path(self._ctx, conversation, message_id, records=True)

    def get_message(self, message_id: int) -> StoredMessage:
        """One stored message by id."""
        return _tree.get_message(self._ctx, message_id)

    def messages(self, conversation: str) -> list[StoredMessage]:
        """Every message of the conversation on every branch, oldest first."""
        return _tree.all_messages(self._ctx, conversation)

    # -- branch / fork -----------------------------------------------------

    def branch(self, conversation: str, message_id: int | None) -> None:
        """Move the tip to an earlier turn boundary (None: before the first message).

        Writes nothing but the pointer: the path left behind stays and is
        listed by :meth:`branches` (docs/store.md).
        """
        _tree.branch(self._ctx, conversation, message_id)

    def branches(self, conversation: str) -> list[Branch]:
        """Every branch tip (leaf) of the conversation, the current one first."""
        return _tree.branches(self._ctx, conversation)

    def fork(
        self, conversation: str, message_id: int | None = UNSET, *, title: str | None = None
    ) -> str:
        """Copy root -> ``message_id`` (default: the tip) into a new conversation, new ids.

        Checkpoints on the copied path come along (re-pointed to the copies).
        Later messages of either conversation never appear in the other (docs/store.md).
        """
        return _tree.fork(self._ctx, conversation, message_id, title)

    # -- checkpoints / rewind ----------------------------------------------

    def checkpoint(
        self, conversation: str, label: str, *, message_id: int | None = UNSET
    ) -> Checkpoint:
        """Label the tip (or ``message_id``, a turn boundary) so :meth:`rewind` can return."""
        return _checkpoints.checkpoint(self._ctx, conversation, label, message_id)

    def checkpoints(self, conversation: str) -> list[Checkpoint]:
        """Every checkpoint of the conversation, dropped ones included, oldest first."""
        return _checkpoints.list_checkpoints(self._ctx, conversation)

    def rewind(self, conversation: str, label: str, *, digest: str | None = None) -> Rewind:
        """Move the tip back to checkpoint ``label`` and keep a digest of what was explored.

        The digest is ``digest`` or a default listing of the abandoned path's
        tool calls. A checkpoint dropped by a compaction raises
        ``NotFoundError``: it is never re-pointed elsewhere (docs/store.md).
        """
        return _checkpoints.rewind(self._ctx, conversation, label, digest)

    def rewinds(self, conversation: str) -> list[Rewind]:
        """Every rewind of the conversation with its digest, oldest first."""
        return _checkpoints.list_rewinds(self._ctx, conversation)

    # -- compactions -------------------------------------------------------

    def record_compaction(
        self,
        conversation: str,
        ledger: Any,
        snapshot_sources: Iterable[str],
        replaced_message_ids: Iterable[int],
    ) -> CompactionRecord:
        """Store a ladder run: its ledger, snapshot source text and the messages it replaced.

        Checkpoints whose message was replaced are marked dropped (never
        re-pointed); each emits a :class:`CheckpointDropped` event and is listed
        in the record's ``dropped_checkpoints``.
        """
        return _compactions.record(
            self._ctx, conversation, ledger, snapshot_sources, replaced_message_ids
        )

    def compactions(self, conversation: str) -> list[CompactionRecord]:
        """Every stored compaction of the conversation, oldest first."""
        return _compactions.list_compactions(self._ctx, conversation)

    def compaction(self, compaction_id: int) -> CompactionRecord:
        """One stored compaction by id."""
        with self._backend.read() as tx:
            return _compactions.load(self._ctx, tx, compaction_id)

    def restore_compaction(self, compaction_id: int) -> list[dict[str, Any]]:
        """The wire messages a compaction replaced, in order (to restore or re-render them)."""
        return _compactions.restore(self._ctx, compaction_id)

    # -- resume / export ---------------------------------------------------

    def resume(
        self,
        conversation: str,
        *,
        budget: int,
        counter: TokenCounter | None = None,
        profile: Any = DEFAULT_PROFILE,
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The most recent messages root -> tip that fit ``budget`` tokens, as a wire history.

        Leading system messages are kept; the cut falls on a turn boundary
        (core's segmentation) whose first message is never an orphan tool
        result; the most recent turn is always kept, even alone over budget
        (docs/store.md). Stored per-message estimates pick the cut without
        reading old payloads; core's ``estimate_history_tokens`` (with
        ``counter`` / ``profile``) then has the last word on the result.
        """
        return _resume.resume(
            self._ctx, conversation, budget=budget, counter=counter, profile=profile
        )

    def export(
        self, conversation: str, *, format: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The working history at the tip as a wire history (as committed)."""
        return _dump.export(self._ctx, conversation, format)

    # -- dump / load (import) ----------------------------------------------

    def dump(self, conversation: str) -> dict[str, Any]:
        """The whole conversation tree (every branch, checkpoints) as JSON-ready data."""
        return _dump.dump(self._ctx, conversation)

    def load(self, data: dict[str, Any], *, title: str | None = None) -> str:
        """Import a :meth:`dump` as a new conversation (new ids); validated before writing."""
        return _dump.load(self._ctx, data, title)

    def import_history(
        self, history: list[dict[str, Any]] | dict[str, Any], *, title: str | None = None
    ) -> str:
        """Import a plain wire history as a new conversation, one commit per turn."""
        return _dump.import_history(self._ctx, history, title)

    # -- integrity ---------------------------------------------------------

    def check(self) -> list[str]:
        """Problems found in the store (empty when sound): parent chains, tips, SQLite pages."""
        return _integrity.check(self._ctx)
