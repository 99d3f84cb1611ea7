"""The transcript store: one implementation of the session tree over any SQL backend.

Backends (``sqlite.py``, ``postgres.py``) only open connections and run
transactions; every rule of SPEC §6 lives here, once, so the two cannot drift.

Concurrency model: ``commit_turn`` is one transaction that locks the
conversation row, compares the tip with the tip the caller expects, appends the
whole turn and moves the tip (compare-and-set). The loser of a race gets
``ConflictError`` and nothing of its turn is written.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.events import CheckpointDropped, EventBus, default_bus, publish
from glyphfold.compaction.history.messages import History, to_wire
from glyphfold.compaction.history.tokens import (
    DEFAULT_PROFILE,
    TokenCounter,
    estimate_history_tokens,
)
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.compaction.store import canon, schema
from glyphfold.compaction.store.records import (
    Branch,
    Checkpoint,
    CompactionRecord,
    Conversation,
    Rewind,
    StoredMessage,
)

from glyphfold.errors import (
    ConflictError,
    HistoryFormatError,
    InputError,
    NotFoundError,
    StoreError,
)

DUMP_FORMAT = "glyphfold-transcript"
DUMP_VERSION = 1
WIRE_FORMATS = ("openai", "anthropic")

_MESSAGE_COLUMNS = (
    "id, conversation_id, parent_id, depth, role, turn_start, ends_turn, "
    "tool_call_ids, tool_result_ids, tokens, payload, created_at"
)
_CONVERSATION_COLUMNS = (
    "c.id, c.title, c.format, c.tip_id, "
    "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id), "
    "c.created_at, c.updated_at, c.forked_from, c.forked_from_message"
)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


class Tx(ABC):
    """One open transaction; SQL uses ``?`` placeholders in every dialect."""

    @abstractmethod
    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; return the number of rows changed."""

    @abstractmethod
    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute an INSERT and return the new row's ``id``."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None


class Backend(ABC):
    """A database connection: transactions and the few dialect differences."""

    dialect: str
    #: suffix that row-locks a SELECT inside a write transaction ("" where the
    #: whole write transaction is already exclusive, as in SQLite)
    for_update: str = ""

    @abstractmethod
    def read(self) -> AbstractContextManager[Tx]:
        """A consistent read-only snapshot."""

    @abstractmethod
    def write(self, *, schema_lock: bool = False) -> AbstractContextManager[Tx]:
        """One write transaction, committed on success and rolled back on error."""

    #: a query listing the names of the tables in the store's schema
    tables_sql: str

    def tables(self, tx: Tx | None = None) -> set[str]:
        """Names of the tables that exist (checked before anything is written)."""
        if tx is not None:
            return {r[0] for r in tx.all(self.tables_sql)}
        with self.read() as own:
            return {r[0] for r in own.all(self.tables_sql)}

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def where(self) -> str:
        """The store's location for messages (password redacted)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    msg = f"cannot store a {type(value).__name__} in a ledger; give JSON-compatible data"
    raise TypeError(msg)


class Store:
    """A transcript store: conversations as trees of messages with a current tip.

    Not thread-safe: open one ``Store`` per thread or process (connections are
    cheap). Use it as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        bus: EventBus | None = None,
    ) -> None:
        self._backend = backend
        self._bus = bus
        # conversation -> the tip this handle last saw; the default expectation
        # of commit_turn's compare-and-set
        self._seen: dict[str, int | None] = {}
        try:
            self._open_schema()
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

    # -- schema ------------------------------------------------------------

    def _read_version(self, tx: Tx) -> int:
        row = tx.one(f"SELECT value FROM {schema.META_TABLE} WHERE key = ?", ("schema_version",))
        if row is None:
            msg = f"{self.where} has a {schema.META_TABLE} table without a schema version"
            raise StoreError(msg)
        try:
            return int(row[0])
        except ValueError:
            msg = f"{self.where} has a non-numeric schema version {row[0]!r}"
            raise StoreError(msg) from None

    def _open_schema(self, target: int = schema.SCHEMA_VERSION) -> None:
        tables = self._backend.tables()
        if schema.META_TABLE in tables:
            with self._backend.read() as tx:
                found = self._read_version(tx)
            schema.check_version(found, where=self.where)
            if found >= target:
                return
        elif tables - {"sqlite_sequence"}:
            msg = (
                f"{self.where} already holds other tables ({', '.join(sorted(tables)[:5])}) "
                "and is not a glyphfold store; point --db at a new file or database"
            )
            raise StoreError(msg)
        with self._backend.write(schema_lock=True) as tx:
            # re-read under the lock: another process may have migrated meanwhile
            found = 0
            if schema.META_TABLE in self._backend.tables(tx):
                found = self._read_version(tx)
                schema.check_version(found, where=self.where)
            for migration in schema.pending(found, target):
                schema.apply(tx.run, migration, self.dialect)
                tx.run(f"DELETE FROM {schema.META_TABLE} WHERE key = ?", ("schema_version",))
                tx.run(
                    f"INSERT INTO {schema.META_TABLE} (key, value) VALUES (?, ?)",
                    ("schema_version", str(migration.version)),
                )

    def schema_version(self) -> int:
        """The schema version of the open store."""
        with self._backend.read() as tx:
            return self._read_version(tx)

    # -- conversations -----------------------------------------------------

    def create_conversation(self, *, title: str | None = None) -> str:
        """Create an empty conversation and return its id."""
        if title is not None and not isinstance(title, str):
            msg = f"title must be a string or None, got {type(title).__name__}"
            raise InputError(msg)
        conversation_id = uuid.uuid4().hex
        now = time.time()
        with self._backend.write() as tx:
            tx.run(
                "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (conversation_id, title, now, now),
            )
        self._seen[conversation_id] = None
        return conversation_id

    def conversations(self) -> list[Conversation]:
        """Every conversation, most recently updated first."""
        with self._backend.read() as tx:
            rows = tx.all(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c "
                "ORDER BY c.updated_at DESC, c.id"
            )
        return [Conversation(*r) for r in rows]

    def conversation(self, conversation: str) -> Conversation:
        """One conversation; ``NotFoundError`` when the id does not exist."""
        with self._backend.read() as tx:
            return self._conversation(tx, conversation)

    def _conversation(self, tx: Tx, conversation: str) -> Conversation:
        if not isinstance(conversation, str):
            msg = f"conversation id must be a string, got {type(conversation).__name__}"
            raise InputError(msg)
        row = tx.one(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?", (conversation,)
        )
        if row is None:
            msg = (
                f"no conversation {conversation!r} in {self.where}; "
                "`glyphfold sessions` lists them"
            )
            raise NotFoundError(msg)
        return Conversation(*row)

    def _lock(self, tx: Tx, conversation: str) -> None:
        """Serialise writers on one conversation (PostgreSQL row lock; SQLite's write
        transaction is already exclusive), so pointer moves never interleave with a commit."""
        if self._backend.for_update:
            tx.all(
                "SELECT id FROM conversations WHERE id = ?" + self._backend.for_update,
                (conversation,),
            )

    def resolve(self, prefix: str) -> str:
        """The conversation id that is ``prefix`` or starts with it (for humans typing ids)."""
        with self._backend.read() as tx:
            if tx.one("SELECT id FROM conversations WHERE id = ?", (prefix,)):
                return prefix
            pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = tx.all(
                "SELECT id FROM conversations WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
                (pattern,),
            )
        if not rows:
            msg = f"no conversation {prefix!r} in {self.where}; `glyphfold sessions` lists them"
            raise NotFoundError(msg)
        if len(rows) > 1:
            ids = ", ".join(r[0][:12] for r in rows)
            msg = f"conversation prefix {prefix!r} is ambiguous ({ids}...); type more characters"
            raise InputError(msg)
        return rows[0][0]

    def tip(self, conversation: str) -> int | None:
        """The id of the conversation's current tip (None while it is empty)."""
        tip = self.conversation(conversation).tip_id
        self._seen[conversation] = tip
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
        ``ConflictError`` and nothing is written (SPEC §6.1).
        """
        system: Any = UNSET
        if isinstance(messages, History):
            messages = to_wire(messages)  # the store keeps wire payloads
        if isinstance(messages, dict):
            if set(messages) - {"system", "messages"} or "messages" not in messages:
                msg = (
                    "commit_turn takes a list of messages or an Anthropic "
                    f"{{'system': ..., 'messages': [...]}} dict, got keys {sorted(messages)}"
                )
                raise HistoryFormatError(msg)
            if "system" in messages:
                system = messages["system"]
            messages = messages["messages"]
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            msg = f"commit_turn needs a list of message dicts, got {type(messages).__name__}"
            raise HistoryFormatError(msg)
        if not messages:
            msg = "commit_turn needs at least one message (a turn is never empty)"
            raise InputError(msg)
        turn_format = canon.signal_format(messages, anthropic_envelope=system is not UNSET)
        canons = canon.canon_messages(messages, format=turn_format)
        payloads = [_dumps(m) for m in messages]  # serialise before locking: fail early
        system_json = None if system is UNSET else _dumps(system)
        if expected_tip is UNSET:
            expected_tip = self._seen.get(conversation, UNSET)
        now = time.time()
        with self._backend.write() as tx:
            row = tx.one(
                "SELECT tip_id, format, system_json FROM conversations WHERE id = ?"
                + self._backend.for_update,
                (conversation,),
            )
            if row is None:
                self._conversation(tx, conversation)  # raises NotFoundError
            tip, conv_format, conv_system = row  # type: ignore[misc]
            if expected_tip is not UNSET and tip != expected_tip:
                msg = (
                    f"conversation {conversation} moved: its tip is {tip}, this writer expected "
                    f"{expected_tip}; re-read it (path/resume/tip) and commit again"
                )
                raise ConflictError(msg)
            new_format = conv_format
            if turn_format is not None:
                if conv_format is not None and conv_format != turn_format:
                    msg = (
                        f"conversation {conversation} holds {conv_format} messages; "
                        f"this turn is {turn_format}"
                    )
                    raise HistoryFormatError(msg)
                new_format = turn_format
            if system_json is not None and conv_system is not None and conv_system != system_json:
                msg = f"conversation {conversation} already has a different system prompt"
                raise InputError(msg)
            depth = 0
            if tip is not None:
                parent_row = tx.one("SELECT depth FROM messages WHERE id = ?", (tip,))
                depth = parent_row[0] + 1 if parent_row else 0
            parent = tip
            ids: list[int] = []
            last = len(messages) - 1
            for i, (c, payload) in enumerate(zip(canons, payloads, strict=True)):
                parent = tx.insert(
                    f"INSERT INTO messages ({_MESSAGE_COLUMNS.split(', ', 1)[1]}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation,
                        parent,
                        depth + i,
                        c.role,
                        int(c.turn_start),
                        int(i == last),
                        _dumps(list(c.tool_call_ids)),
                        _dumps(list(c.tool_result_ids)),
                        c.tokens,
                        payload,
                        now,
                    ),
                )
                ids.append(parent)
            tx.run(
                "UPDATE conversations SET tip_id = ?, format = ?, system_json = ?, updated_at = ? "
                "WHERE id = ?",
                (parent, new_format, conv_system or system_json, now, conversation),
            )
        self._seen[conversation] = ids[-1]
        return ids

    def _path_rows(
        self, tx: Tx, conversation: str, start: int | None, *, columns: str = _MESSAGE_COLUMNS
    ) -> list[tuple[Any, ...]]:
        """Rows of ``columns`` for the messages root -> ``start``.

        One indexed scan of the conversation, then a walk up the parent
        pointers in Python: one round trip and no per-row join (on SQLite at
        10k messages the recursive CTE took 34 ms, this scan 12 ms). Abandoned
        branches are read too; conversations are linear in practice.
        """
        if start is None:
            return []
        rows = tx.all(
            f"SELECT id, parent_id, {columns} FROM messages WHERE conversation_id = ?",
            (conversation,),
        )
        by_id = {r[0]: r for r in rows}
        if start not in by_id:
            msg = f"message {start} is not in conversation {conversation}"
            raise NotFoundError(msg)
        chain: list[tuple[Any, ...]] = []
        node = by_id.get(start)
        while node is not None:
            chain.append(node[2:])
            node = by_id.get(node[1]) if node[1] is not None else None
        chain.reverse()
        return chain

    def path(self, conversation: str, *, message_id: int | None = UNSET) -> list[dict[str, Any]]:
        """The messages root -> tip (or -> ``message_id``), wire dicts exactly as committed."""
        with self._backend.read() as tx:
            conv = self._conversation(tx, conversation)
            start = conv.tip_id if message_id is UNSET else message_id
            if message_id is not UNSET and message_id is not None:
                self._message_in(tx, conversation, message_id)
            rows = self._path_rows(tx, conversation, start, columns="payload")
        if message_id is UNSET:
            self._seen[conversation] = conv.tip_id
        return _loads_many([r[0] for r in rows])

    def path_records(
        self, conversation: str, *, message_id: int | None = UNSET
    ) -> list[StoredMessage]:
        """Like :meth:`path` with ids, parents and canonical columns."""
        with self._backend.read() as tx:
            conv = self._conversation(tx, conversation)
            start = conv.tip_id if message_id is UNSET else message_id
            if message_id is not UNSET and message_id is not None:
                self._message_in(tx, conversation, message_id)
            rows = self._path_rows(tx, conversation, start)
        if message_id is UNSET:
            self._seen[conversation] = conv.tip_id
        return _messages(rows)

    def _message_in(self, tx: Tx, conversation: str, message_id: int) -> StoredMessage:
        if not isinstance(message_id, int) or isinstance(message_id, bool):
            msg = f"message id must be an int, got {message_id!r}"
            raise InputError(msg)
        row = tx.one(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if row is None or row[1] != conversation:
            msg = f"no message {message_id} in conversation {conversation}"
            raise NotFoundError(msg)
        return _message(row)

    def get_message(self, message_id: int) -> StoredMessage:
        """One stored message by id."""
        with self._backend.read() as tx:
            row = tx.one(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if row is None:
            msg = f"no message {message_id} in {self.where}"
            raise NotFoundError(msg)
        return _message(row)

    def messages(self, conversation: str) -> list[StoredMessage]:
        """Every message of the conversation on every branch, oldest first."""
        with self._backend.read() as tx:
            self._conversation(tx, conversation)
            rows = tx.all(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY id",
                (conversation,),
            )
        return _messages(rows)

    # -- branch / fork -----------------------------------------------------

    def branch(self, conversation: str, message_id: int | None) -> None:
        """Move the tip to an earlier turn boundary (None: before the first message).

        Writes nothing but the pointer: the path left behind stays and is
        listed by :meth:`branches` (SPEC §6.4).
        """
        with self._backend.write() as tx:
            self._lock(tx, conversation)
            self._conversation(tx, conversation)
            if message_id is not None:
                target = self._message_in(tx, conversation, message_id)
                if not target.ends_turn:
                    msg = (
                        f"message {message_id} is inside a turn (not its last message); branch to "
                        "a turn boundary so no tool call is left without its result"
                    )
                    raise InputError(msg)
            tx.run(
                "UPDATE conversations SET tip_id = ?, updated_at = ? WHERE id = ?",
                (message_id, time.time(), conversation),
            )
        self._seen[conversation] = message_id

    def branches(self, conversation: str) -> list[Branch]:
        """Every branch tip (leaf) of the conversation, the current one first."""
        stored = self.messages(conversation)
        conv = self.conversation(conversation)
        return _branches(stored, conv.tip_id)

    def fork(
        self, conversation: str, message_id: int | None = UNSET, *, title: str | None = None
    ) -> str:
        """Copy root -> ``message_id`` (default: the tip) into a new conversation, new ids.

        Checkpoints on the copied path come along (re-pointed to the copies).
        Later messages of either conversation never appear in the other (SPEC §6.5).
        """
        now = time.time()
        new_id = uuid.uuid4().hex
        with self._backend.write() as tx:
            conv = self._conversation(tx, conversation)
            start = conv.tip_id if message_id is UNSET else message_id
            if start is not None:
                target = self._message_in(tx, conversation, start)
                if not target.ends_turn:
                    msg = f"message {start} is inside a turn; fork at a turn boundary"
                    raise InputError(msg)
            rows = _messages(self._path_rows(tx, conversation, start))
            tx.run(
                "INSERT INTO conversations (id, title, format, system_json, forked_from, "
                "forked_from_message, created_at, updated_at) "
                "SELECT ?, ?, format, system_json, id, ?, ?, ? FROM conversations WHERE id = ?",
                (new_id, title if title is not None else conv.title, start, now, now, conversation),
            )
            mapping: dict[int, int] = {}
            parent: int | None = None
            for m in rows:
                parent = tx.insert(
                    f"INSERT INTO messages ({_MESSAGE_COLUMNS.split(', ', 1)[1]}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        new_id,
                        parent,
                        m.depth,
                        m.role,
                        int(m.turn_start),
                        int(m.ends_turn),
                        _dumps(list(m.tool_call_ids)),
                        _dumps(list(m.tool_result_ids)),
                        m.tokens,
                        _dumps(m.payload),
                        now,
                    ),
                )
                mapping[m.id] = parent
            for label, target_id, created in tx.all(
                "SELECT label, message_id, created_at FROM checkpoints "
                "WHERE conversation_id = ? AND dropped_by IS NULL ORDER BY label",
                (conversation,),
            ):
                if target_id is None or target_id in mapping:
                    tx.run(
                        "INSERT INTO checkpoints (conversation_id, label, message_id, created_at) "
                        "VALUES (?, ?, ?, ?)",
                        (new_id, label, mapping.get(target_id), created),
                    )
            tx.run("UPDATE conversations SET tip_id = ? WHERE id = ?", (parent, new_id))
        self._seen[new_id] = parent
        return new_id

    # -- checkpoints / rewind ----------------------------------------------

    def checkpoint(
        self, conversation: str, label: str, *, message_id: int | None = UNSET
    ) -> Checkpoint:
        """Label the tip (or ``message_id``, a turn boundary) so :meth:`rewind` can return."""
        if not isinstance(label, str) or not label.strip():
            msg = f"checkpoint label must be a non-empty string, got {label!r}"
            raise InputError(msg)
        now = time.time()
        with self._backend.write() as tx:
            self._lock(tx, conversation)
            conv = self._conversation(tx, conversation)
            target = conv.tip_id if message_id is UNSET else message_id
            if target is not None:
                stored = self._message_in(tx, conversation, target)
                if not stored.ends_turn:
                    msg = f"message {target} is inside a turn; checkpoints label turn boundaries"
                    raise InputError(msg)
            if tx.one(
                "SELECT 1 FROM checkpoints WHERE conversation_id = ? AND label = ?",
                (conversation, label),
            ):
                msg = f"checkpoint {label!r} already exists in conversation {conversation}"
                raise InputError(msg)
            tx.run(
                "INSERT INTO checkpoints (conversation_id, label, message_id, created_at) "
                "VALUES (?, ?, ?, ?)",
                (conversation, label, target, now),
            )
        return Checkpoint(conversation, label, target, now)

    def checkpoints(self, conversation: str) -> list[Checkpoint]:
        """Every checkpoint of the conversation, dropped ones included, oldest first."""
        with self._backend.read() as tx:
            self._conversation(tx, conversation)
            rows = tx.all(
                "SELECT conversation_id, label, message_id, created_at, dropped_by "
                "FROM checkpoints WHERE conversation_id = ? ORDER BY created_at, label",
                (conversation,),
            )
        return [Checkpoint(*r) for r in rows]

    def rewind(self, conversation: str, label: str, *, digest: str | None = None) -> Rewind:
        """Move the tip back to checkpoint ``label`` and keep a digest of what was explored.

        The digest is ``digest`` or a default listing of the abandoned path's
        tool calls. A checkpoint dropped by a compaction raises
        ``NotFoundError``: it is never re-pointed elsewhere (SPEC §6.6).
        """
        if digest is not None and not isinstance(digest, str):
            msg = f"digest must be a string or None, got {type(digest).__name__}"
            raise InputError(msg)
        now = time.time()
        with self._backend.write() as tx:
            self._lock(tx, conversation)
            conv = self._conversation(tx, conversation)
            row = tx.one(
                "SELECT message_id, dropped_by FROM checkpoints "
                "WHERE conversation_id = ? AND label = ?",
                (conversation, label),
            )
            if row is None:
                known = [
                    r[0]
                    for r in tx.all(
                        "SELECT label FROM checkpoints WHERE conversation_id = ? "
                        "AND dropped_by IS NULL ORDER BY label",
                        (conversation,),
                    )
                ]
                msg = (
                    f"no checkpoint {label!r} in conversation {conversation}; "
                    f"known: {', '.join(map(repr, known)) or 'none'}"
                )
                raise NotFoundError(msg)
            target, dropped_by = row
            if dropped_by is not None:
                msg = (
                    f"checkpoint {label!r} was dropped: compaction {dropped_by} replaced its "
                    "message, and a checkpoint is never moved elsewhere"
                )
                raise NotFoundError(msg)
            old_path = _messages(self._path_rows(tx, conversation, conv.tip_id))
            keep = {r[0] for r in self._path_rows(tx, conversation, target, columns="id")}
            abandoned = [m for m in old_path if m.id not in keep]
            text = digest if digest is not None else _default_digest(label, abandoned, conv.format)
            tx.run(
                "UPDATE conversations SET tip_id = ?, updated_at = ? WHERE id = ?",
                (target, now, conversation),
            )
            ids = tuple(m.id for m in abandoned)
            rewind_id = tx.insert(
                "INSERT INTO rewinds (conversation_id, label, from_tip, to_message, digest, "
                "abandoned_ids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conversation, label, conv.tip_id, target, text, _dumps(list(ids)), now),
            )
        self._seen[conversation] = target
        return Rewind(rewind_id, conversation, label, conv.tip_id, target, text, ids, now)

    def rewinds(self, conversation: str) -> list[Rewind]:
        """Every rewind of the conversation with its digest, oldest first."""
        with self._backend.read() as tx:
            self._conversation(tx, conversation)
            rows = tx.all(
                "SELECT id, conversation_id, label, from_tip, to_message, digest, abandoned_ids, "
                "created_at FROM rewinds WHERE conversation_id = ? ORDER BY id",
                (conversation,),
            )
        return [Rewind(*r[:6], tuple(json.loads(r[6])), r[7]) for r in rows]

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
        sources = list(snapshot_sources)
        for i, s in enumerate(sources):
            if not isinstance(s, str):
                msg = f"snapshot source {i} is a {type(s).__name__}, expected str"
                raise InputError(msg)
        replaced = list(dict.fromkeys(replaced_message_ids))
        for r in replaced:
            if not isinstance(r, int) or isinstance(r, bool):
                msg = f"replaced message ids must be ints, got {r!r}"
                raise InputError(msg)
        try:
            ledger_json = json.dumps(
                ledger, ensure_ascii=False, separators=(",", ":"), default=_default
            )
        except (TypeError, ValueError) as exc:
            msg = f"ledger is not JSON-serialisable: {exc}"
            raise InputError(msg) from None
        now = time.time()
        events: list[CheckpointDropped] = []
        with self._backend.write() as tx:
            self._lock(tx, conversation)
            conv = self._conversation(tx, conversation)
            for r in replaced:
                self._message_in(tx, conversation, r)
            hit = sorted(
                (label, mid)
                for label, mid in tx.all(
                    "SELECT label, message_id FROM checkpoints "
                    "WHERE conversation_id = ? AND dropped_by IS NULL AND message_id IS NOT NULL",
                    (conversation,),
                )
                if mid in set(replaced)
            )
            dropped = tuple(label for label, _ in hit)
            compaction_id = tx.insert(
                "INSERT INTO compactions (conversation_id, tip_id, ledger, dropped_checkpoints, "
                "created_at) VALUES (?, ?, ?, ?, ?)",
                (conversation, conv.tip_id, ledger_json, _dumps(list(dropped)), now),
            )
            for i, s in enumerate(sources):
                tx.run(
                    "INSERT INTO compaction_sources (compaction_id, idx, source_text) "
                    "VALUES (?, ?, ?)",
                    (compaction_id, i, s),
                )
            for r in replaced:
                tx.run(
                    "INSERT INTO compaction_messages (compaction_id, message_id) VALUES (?, ?)",
                    (compaction_id, r),
                )
            for label, mid in hit:
                tx.run(
                    "UPDATE checkpoints SET dropped_by = ? WHERE conversation_id = ? AND label = ?",
                    (compaction_id, conversation, label),
                )
                events.append(CheckpointDropped(conversation, label, mid, compaction_id))
        for event in events:
            publish(event, self._bus)
        return CompactionRecord(
            compaction_id,
            conversation,
            conv.tip_id,
            json.loads(ledger_json),
            tuple(sources),
            tuple(replaced),
            dropped,
            now,
        )

    def compactions(self, conversation: str) -> list[CompactionRecord]:
        """Every stored compaction of the conversation, oldest first."""
        with self._backend.read() as tx:
            self._conversation(tx, conversation)
            ids = [
                r[0]
                for r in tx.all(
                    "SELECT id FROM compactions WHERE conversation_id = ? ORDER BY id",
                    (conversation,),
                )
            ]
            return [self._compaction(tx, i) for i in ids]

    def compaction(self, compaction_id: int) -> CompactionRecord:
        """One stored compaction by id."""
        with self._backend.read() as tx:
            return self._compaction(tx, compaction_id)

    def _compaction(self, tx: Tx, compaction_id: int) -> CompactionRecord:
        row = tx.one(
            "SELECT id, conversation_id, tip_id, ledger, dropped_checkpoints, created_at "
            "FROM compactions WHERE id = ?",
            (compaction_id,),
        )
        if row is None:
            msg = f"no compaction {compaction_id} in {self.where}"
            raise NotFoundError(msg)
        sources = tx.all(
            "SELECT source_text FROM compaction_sources WHERE compaction_id = ? ORDER BY idx",
            (compaction_id,),
        )
        replaced = tx.all(
            "SELECT message_id FROM compaction_messages WHERE compaction_id = ? "
            "ORDER BY message_id",
            (compaction_id,),
        )
        return CompactionRecord(
            row[0],
            row[1],
            row[2],
            json.loads(row[3]),
            tuple(s[0] for s in sources),
            tuple(r[0] for r in replaced),
            tuple(json.loads(row[4])),
            row[5],
        )

    def restore_compaction(self, compaction_id: int) -> list[dict[str, Any]]:
        """The wire messages a compaction replaced, in order (to restore or re-render them)."""
        with self._backend.read() as tx:
            record = self._compaction(tx, compaction_id)
            rows = [
                tx.one(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (m,))
                for m in record.replaced_message_ids
            ]
        return [_message(r).payload for r in rows if r is not None]

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
        (SPEC §6.2, §2.4). Stored per-message estimates pick the cut without
        reading old payloads; core's ``estimate_history_tokens`` (with
        ``counter`` / ``profile``) then has the last word on the result.
        """
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
            msg = f"budget must be an int >= 0 (tokens), got {budget!r}"
            raise InputError(msg)
        with self._backend.read() as tx:
            conv = self._conversation(tx, conversation)
            meta = self._path_rows(
                tx,
                conversation,
                conv.tip_id,
                columns="id, role, turn_start, tokens",
            )
            lead, keep_from = _resume_cut(meta, budget, lambda ids: self._tool_ids(tx, ids))
            ids = [r[0] for r in meta[:lead]] + [r[0] for r in meta[keep_from:]]
            payloads = self._payloads(tx, ids)
            system = self._system(tx, conversation)
        self._seen[conversation] = conv.tip_id
        wire = _wire(conv.format, system, payloads)
        # the stored estimates are per message; the position-aware estimate decides
        starts = [i for i in range(keep_from, len(meta)) if meta[i][2]]
        for start in starts[1:]:
            if estimate_history_tokens(wire, counter=counter, profile=profile) <= budget:
                break
            kept = payloads[:lead] + payloads[lead + start - keep_from :]
            calls, results = self._tool_ids_of(kept, conv.format)
            if not results <= calls:
                continue  # this cut would orphan a tool result: try the next turn
            wire = _wire(conv.format, system, kept)
        return wire

    @staticmethod
    def _tool_ids_of(payloads: list[dict[str, Any]], fmt: str | None) -> tuple[set[str], set[str]]:
        canons = canon.canon_messages(payloads, format=fmt)
        return (
            {c for m in canons for c in m.tool_call_ids},
            {r for m in canons for r in m.tool_result_ids},
        )

    def _tool_ids(self, tx: Tx, ids: Sequence[int]) -> tuple[set[str], set[str]]:
        """Tool-call ids and tool-result ids carried by the messages ``ids``."""
        calls: set[str] = set()
        results: set[str] = set()
        chunk = 500  # stay under SQLite's bound-parameter limit
        for i in range(0, len(ids), chunk):
            part = list(ids[i : i + chunk])
            marks = ", ".join("?" * len(part))
            for c, r in tx.all(
                "SELECT tool_call_ids, tool_result_ids FROM messages "
                f"WHERE id IN ({marks}) AND (tool_call_ids <> '[]' OR tool_result_ids <> '[]')",
                part,
            ):
                calls.update(json.loads(c))
                results.update(json.loads(r))
        return calls, results

    def _payloads(self, tx: Tx, ids: list[int]) -> list[dict[str, Any]]:
        out: dict[int, str] = {}
        chunk = 500  # stay under SQLite's bound-parameter limit
        for i in range(0, len(ids), chunk):
            part = ids[i : i + chunk]
            marks = ", ".join("?" * len(part))
            out.update(tx.all(f"SELECT id, payload FROM messages WHERE id IN ({marks})", part))
        return _loads_many([out[i] for i in ids])

    def _system(self, tx: Tx, conversation: str) -> Any:
        row = tx.one("SELECT system_json FROM conversations WHERE id = ?", (conversation,))
        return UNSET if row is None or row[0] is None else json.loads(row[0])

    def export(
        self, conversation: str, *, format: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The working history at the tip as a wire history (as committed)."""
        if format is not None and format not in WIRE_FORMATS:
            msg = f"unknown export format {format!r}; use one of {', '.join(WIRE_FORMATS)}"
            raise InputError(msg)
        with self._backend.read() as tx:
            conv = self._conversation(tx, conversation)
            rows = self._path_rows(tx, conversation, conv.tip_id, columns="payload")
            payloads = _loads_many([r[0] for r in rows])
            system = self._system(tx, conversation)
        wire = _wire(conv.format, system, payloads)
        if format is None or format == conv.format or conv.format is None:
            return wire
        # core's converter moves the system prompt and regroups tool results;
        # its output passes the target provider's rules (tested)
        return convert_history(wire, to=format)

    # -- dump / load (import) ----------------------------------------------

    def dump(self, conversation: str) -> dict[str, Any]:
        """The whole conversation tree (every branch, checkpoints) as JSON-ready data."""
        conv = self.conversation(conversation)
        with self._backend.read() as tx:
            system = self._system(tx, conversation)
        stored = self.messages(conversation)
        return {
            "format": DUMP_FORMAT,
            "version": DUMP_VERSION,
            "conversation": {
                "id": conv.id,
                "title": conv.title,
                "wire_format": conv.format,
                "tip": conv.tip_id,
                **({} if system is UNSET else {"system": system}),
            },
            "messages": [
                {"id": m.id, "parent": m.parent_id, "ends_turn": m.ends_turn, "payload": m.payload}
                for m in stored
            ],
            "checkpoints": [
                {"label": c.label, "message": c.message_id}
                for c in self.checkpoints(conversation)
                if not c.dropped
            ],
        }

    def load(self, data: dict[str, Any], *, title: str | None = None) -> str:
        """Import a :meth:`dump` as a new conversation (new ids); validated before writing."""
        messages, tip, checkpoints, system, old_title = _validate_dump(data)
        payloads = [m["payload"] for m in messages]
        conv_format = canon.signal_format(payloads, anthropic_envelope=system is not UNSET)
        declared = (data.get("conversation") or {}).get("wire_format")
        if declared is not None and conv_format is not None and declared != conv_format:
            msg = f"dump declares {declared} messages but they are {conv_format}"
            raise InputError(msg)
        conv_format = conv_format or (declared if declared in WIRE_FORMATS else None)
        canons = canon.canon_messages(payloads, format=conv_format)
        new_id = uuid.uuid4().hex
        now = time.time()
        with self._backend.write() as tx:
            tx.run(
                "INSERT INTO conversations (id, title, format, system_json, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    new_id,
                    title if title is not None else old_title,
                    conv_format,
                    None if system is UNSET else _dumps(system),
                    now,
                    now,
                ),
            )
            mapping: dict[Any, int] = {}
            depth: dict[Any, int] = {}
            for m, c in zip(messages, canons, strict=True):
                parent = m.get("parent")
                d = 0 if parent is None else depth[parent] + 1
                mapping[m["id"]] = tx.insert(
                    f"INSERT INTO messages ({_MESSAGE_COLUMNS.split(', ', 1)[1]}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        new_id,
                        None if parent is None else mapping[parent],
                        d,
                        c.role,
                        int(c.turn_start),
                        int(bool(m.get("ends_turn", True))),
                        _dumps(list(c.tool_call_ids)),
                        _dumps(list(c.tool_result_ids)),
                        c.tokens,
                        _dumps(m["payload"]),
                        now,
                    ),
                )
                depth[m["id"]] = d
            for cp in checkpoints:
                tx.run(
                    "INSERT INTO checkpoints (conversation_id, label, message_id, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    (new_id, cp["label"], mapping.get(cp.get("message")), now),
                )
            tx.run(
                "UPDATE conversations SET tip_id = ? WHERE id = ?",
                (None if tip is None else mapping[tip], new_id),
            )
        return new_id

    def import_history(
        self, history: list[dict[str, Any]] | dict[str, Any], *, title: str | None = None
    ) -> str:
        """Import a plain wire history as a new conversation, one commit per turn."""
        system: Any = UNSET
        messages: Any = history
        if isinstance(history, dict):
            if "messages" not in history:
                msg = "a dict history needs a 'messages' list (Anthropic wire format)"
                raise HistoryFormatError(msg)
            system = history.get("system", UNSET)
            messages = history["messages"]
        if not isinstance(messages, list) or not messages:
            msg = "import_history needs a non-empty list of messages"
            raise HistoryFormatError(msg)
        segments = segment_turns(history)
        # leading system messages (and anything before the first turn) join the first turn
        bounds = [0, *(t.start for t in segments.turns[1:]), len(messages)]
        conversation = self.create_conversation(title=title)
        first = True
        for a, b in itertools.pairwise(bounds):
            if a == b:
                continue
            chunk: Any = messages[a:b]
            if first and system is not UNSET:
                chunk = {"system": system, "messages": chunk}
            first = False
            self.commit_turn(conversation, chunk)
        return conversation

    # -- integrity ---------------------------------------------------------

    def check(self) -> list[str]:
        """Problems found in the store (empty when sound): parent chains, tips, SQLite pages."""
        problems: list[str] = []
        with self._backend.read() as tx:
            if self.dialect == "sqlite":
                result = [r[0] for r in tx.all("PRAGMA integrity_check")]
                if result != ["ok"]:
                    problems.extend(f"sqlite: {r}" for r in result)
            for mid, parent in tx.all(
                "SELECT m.id, m.parent_id FROM messages m LEFT JOIN messages p "
                "ON p.id = m.parent_id WHERE m.parent_id IS NOT NULL "
                "AND (p.id IS NULL OR p.conversation_id <> m.conversation_id "
                "OR p.depth <> m.depth - 1)"
            ):
                problems.append(f"message {mid}: bad parent {parent}")
            for cid, tip in tx.all(
                "SELECT c.id, c.tip_id FROM conversations c LEFT JOIN messages m "
                "ON m.id = c.tip_id WHERE c.tip_id IS NOT NULL "
                "AND (m.id IS NULL OR m.conversation_id <> c.id OR m.ends_turn = 0)"
            ):
                problems.append(f"conversation {cid}: tip {tip} is not a turn boundary it owns")
        return problems


# -- pure helpers ----------------------------------------------------------


def _message(row: tuple[Any, ...]) -> StoredMessage:
    return StoredMessage(
        id=row[0],
        conversation_id=row[1],
        parent_id=row[2],
        depth=row[3],
        role=row[4],
        turn_start=bool(row[5]),
        ends_turn=bool(row[6]),
        tool_call_ids=tuple(json.loads(row[7])),
        tool_result_ids=tuple(json.loads(row[8])),
        tokens=row[9],
        payload=json.loads(row[10]),
        created_at=row[11],
    )


def _loads_many(texts: Sequence[str]) -> list[Any]:
    # one C-level parse of a JSON array instead of one json.loads call per row
    # (each stored text is a complete JSON value written by _dumps)
    return json.loads("[" + ",".join(texts) + "]") if texts else []


def _messages(rows: Sequence[tuple[Any, ...]]) -> list[StoredMessage]:
    payloads = _loads_many([r[10] for r in rows])
    calls = _loads_many([r[7] for r in rows])
    results = _loads_many([r[8] for r in rows])
    return [
        StoredMessage(
            r[0], r[1], r[2], r[3], r[4], bool(r[5]), bool(r[6]), tuple(c), tuple(t), r[9], p, r[11]
        )
        for r, p, c, t in zip(rows, payloads, calls, results, strict=True)
    ]


def _wire(fmt: str | None, system: Any, payloads: list[dict[str, Any]]) -> Any:
    if fmt == "anthropic" and system is not UNSET:
        return {"system": system, "messages": payloads}
    return payloads


def _resume_cut(
    meta: Sequence[tuple[Any, ...]],
    budget: int,
    tool_ids: Callable[[Sequence[int]], tuple[set[str], set[str]]],
) -> tuple[int, int]:
    """(end of the kept prefix, start of the kept suffix) over the path's metadata rows.

    Rows are ``(id, role, turn_start, tokens)``; ``tool_ids(ids)`` returns the
    tool-call and tool-result ids of those messages (fetched only for the kept
    part, which is usually small).
    """
    n = len(meta)
    lead = 0
    while lead < n and meta[lead][1] in ("system", "developer"):
        lead += 1
    starts = [i for i in range(lead, n) if meta[i][2]]
    if not starts:
        return lead, lead  # one turn (or none): keep everything
    total = sum(r[3] for r in meta[:lead])
    # candidate cuts newest first; the newest turn is always kept (SPEC §2.4)
    keep_from = starts[-1]
    total += sum(r[3] for r in meta[keep_from:])
    for s in reversed(starts[:-1]):
        extra = sum(r[3] for r in meta[s:keep_from])
        if total + extra > budget:
            break
        total += extra
        keep_from = s
    if keep_from == starts[0] and total + sum(r[3] for r in meta[lead:keep_from]) <= budget:
        keep_from = lead  # everything fits: keep any pre-turn messages too
    # never start on an orphan: widen to an earlier turn until every result's call is kept
    while keep_from > lead:
        calls, results = tool_ids([r[0] for r in meta[keep_from:]])
        if results <= calls:
            break
        earlier = [s for s in starts if s < keep_from]
        keep_from = earlier[-1] if earlier else lead
    return lead, keep_from


def _branches(stored: list[StoredMessage], tip: int | None) -> list[Branch]:
    by_id = {m.id: m for m in stored}
    has_child = {m.parent_id for m in stored if m.parent_id is not None}
    current: list[int] = []
    node = tip
    while node is not None:
        current.append(node)
        node = by_id[node].parent_id
    on_current = set(current)
    leaves = [m.id for m in stored if m.id not in has_child]
    if tip is not None and tip not in leaves:
        leaves.append(tip)  # the tip after a branch back is a branch of its own
    out: list[Branch] = []
    for leaf in leaves:
        chain: list[int] = []
        node = leaf
        while node is not None:
            chain.append(node)
            node = by_id[node].parent_id
        fork = next((c for c in chain if c in on_current), None)
        abandoned = tuple(reversed([c for c in chain if c not in on_current]))
        out.append(Branch(leaf, len(chain), leaf == tip, fork, abandoned))
    out.sort(key=lambda b: (not b.is_current, -b.tip_id))
    return out


def _default_digest(label: str, abandoned: Sequence[StoredMessage], fmt: str | None) -> str:
    if not abandoned:
        return f"rewound to {label!r}: nothing had been explored since it"
    turns = sum(1 for m in abandoned if m.turn_start)
    calls = canon.tool_call_summaries([m.payload for m in abandoned], format=fmt)
    head = (
        f"rewound to {label!r}: the abandoned branch had {len(abandoned)} messages "
        f"in {max(turns, 1)} turn(s)"
    )
    if not calls:
        return head + " and made no tool calls"
    shown = calls[:20]
    more = f"; and {len(calls) - len(shown)} more" if len(calls) > len(shown) else ""
    return f"{head} and made {len(calls)} tool call(s): " + "; ".join(shown) + more


def _validate_dump(data: Any) -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]], Any, Any]:
    if not isinstance(data, dict) or data.get("format") != DUMP_FORMAT:
        msg = f"not a glyphfold transcript dump (expected \"format\": {DUMP_FORMAT!r})"
        raise InputError(msg)
    if data.get("version") != DUMP_VERSION:
        msg = f"transcript dump version {data.get('version')!r} is not supported ({DUMP_VERSION})"
        raise InputError(msg)
    conv = data.get("conversation") or {}
    messages = data.get("messages")
    if not isinstance(messages, list):
        msg = "transcript dump has no 'messages' list"
        raise InputError(msg)
    seen: set[Any] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "id" not in m or not isinstance(m.get("payload"), dict):
            msg = f"dump message {i} needs an 'id' and a 'payload' dict"
            raise InputError(msg)
        if m["id"] in seen:
            msg = f"dump message {i} repeats id {m['id']!r}"
            raise InputError(msg)
        parent = m.get("parent")
        if parent is not None and parent not in seen:
            msg = (
                f"dump message {i} (id {m['id']!r}) names parent {parent!r}, which is not an "
                "earlier message of the file; nothing was imported"
            )
            raise InputError(msg)
        seen.add(m["id"])
    tip = conv.get("tip")
    if tip is not None and tip not in seen:
        msg = f"dump tip {tip!r} is not one of its messages"
        raise InputError(msg)
    mid_turn = {m["id"] for m in messages if not m.get("ends_turn", True)}
    if tip in mid_turn:
        msg = f"dump tip {tip!r} is inside a turn (ends_turn false); a tip is a turn boundary"
        raise InputError(msg)
    checkpoints = data.get("checkpoints") or []
    for cp in checkpoints:
        if not isinstance(cp, dict) or not isinstance(cp.get("label"), str):
            msg = f"dump checkpoint {cp!r} needs a 'label'"
            raise InputError(msg)
        if cp.get("message") is not None and cp["message"] not in seen:
            msg = f"dump checkpoint {cp['label']!r} names unknown message {cp['message']!r}"
            raise InputError(msg)
    system = conv.get("system", UNSET)
    return messages, tip, checkpoints, system, conv.get("title")
