"""Commit each conversation passing through the proxy to the transcript store.

Who sees what (issue 21 item 1):

- every client has a *namespace*, a hash of its API key (the key itself is never
  stored); a conversation is stored under ``glyphfold serve <namespace>/<name>``,
  so a client can only ever reach conversations made with its own key
  (``conversation_scope = "shared"`` puts every client in one namespace, for
  deployments whose gateway already authenticates and rotates keys);
- ``<name>`` is the client's ``x-glyphfold-conversation`` header, else a hash of
  its first messages keyed by a secret derived from the API key: not guessable
  from public content (a system prompt and "hi" do not name anyone's transcript);
- a commit appends only when the stored messages are an exact prefix of the
  client's history, compared message by message by their hashes; otherwise the
  history starts a new conversation under the same name (two users who open
  with "hi", a daily job with the same prompt, an edited history, a shorter
  one: each is its own transcript, nothing is grafted or lost).

Whole turns are committed at turn boundaries (SPEC §6.1): every turn before the
newest one as soon as a request shows it complete, and the newest one with the
assistant's final reply (non-streaming). The store is used from one worker thread
(a store handle is not thread-safe); failures are logged, never raised into a
request. The table of known conversations (their message hashes) is bounded; a
conversation it forgot is found again with one query by title.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import glyphfold
from glyphfold.compaction.history.turns import turn_entry_spans
from glyphfold.compaction.history.wire import split_envelope
from glyphfold.errors import ConflictError, GlyphfoldError
from glyphfold.serve.eventlog import EventLog
from glyphfold.serve.providers import ANTHROPIC

__all__ = [
    "CONVERSATION_HEADER",
    "Identity",
    "Recorder",
    "client_identity",
    "conversation_name",
    "final_reply",
    "message_hashes",
]

CONVERSATION_HEADER = "x-glyphfold-conversation"
_TITLE = "glyphfold serve "
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._:@/-]{1,128}$")
# where clients put their API key (OpenAI, Anthropic, Azure, Gemini)
_KEY_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
_DIGEST = 16  # bytes per message hash
# reply metadata a client does not echo back, and breakpoints it moves between turns
_VOLATILE = frozenset({"refusal", "annotations", "audio", "cache_control", "citations"})
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_CANDIDATES = 16  # conversations read per name when the table has forgotten it


@dataclass(frozen=True, slots=True)
class Identity:
    """Whose request this is: ``namespace`` goes into stored titles, ``secret`` never."""

    namespace: str
    secret: bytes


def client_identity(headers: Mapping[str, str], *, shared: bool = False) -> Identity:
    """The client's namespace and naming secret, both derived from its API key header."""
    key = b""
    if not shared:
        value = next((headers[h] for h in _KEY_HEADERS if headers.get(h)), "")
        key = value.encode("utf-8", "surrogateescape")
    ns = hashlib.blake2b(key, digest_size=8, person=b"gf-serve-ns").hexdigest()
    secret = hashlib.blake2b(key, digest_size=32, person=b"gf-serve-name").digest()
    return Identity(ns, secret)


def _split(history: Any) -> tuple[Any, list[Any]]:
    env = split_envelope(history)  # every wire format's envelope (its WireFormat row)
    return env.system, list(env.messages)


def conversation_name(identity: Identity, provider: str, history: Any, header: str | None) -> str:
    """The conversation's name in the client's namespace: its header, else a keyed hash."""
    if header is not None and _SAFE_NAME.match(header):
        return header
    system, messages = _split(history)
    first = next((i for i, m in enumerate(messages) if _role(m) == "user"), len(messages) - 1)
    head = json.dumps([provider, system, messages[: first + 1]], sort_keys=True, default=str)
    digest = hashlib.blake2b(head.encode(), key=identity.secret, digest_size=12).hexdigest()
    return "h:" + digest


def _role(m: Any) -> Any:
    return m.get("role") if isinstance(m, Mapping) else None


def _norm(x: Any) -> Any:
    """A message as compared for identity: what a client may drop when it echoes it is gone."""
    if isinstance(x, Mapping):
        return {
            k: _norm(v)
            for k, v in x.items()
            if k not in _VOLATILE and v is not None and not (isinstance(v, list | dict) and not v)
        }
    if isinstance(x, list):
        items = [_norm(v) for v in x]
        if items and all(
            isinstance(i, dict) and i.get("type") in _TEXT_TYPES and set(i) <= {"type", "text"}
            for i in items
        ):
            return "".join(str(i.get("text", "")) for i in items)  # text blocks = its text
        return items
    return x


def message_hashes(messages: list[Any], system: Any = None) -> bytes:
    """One 16-byte hash per message, concatenated (a prefix of messages is a prefix of bytes).

    A top-level ``system`` (Anthropic) is part of the first message's hash: the same
    messages under another system prompt are another conversation.
    """
    out = bytearray()
    for i, m in enumerate(messages):
        item = [_norm(system), _norm(m)] if i == 0 and system is not None else _norm(m)
        text = json.dumps(item, sort_keys=True, default=str)  # ASCII: surrogates escaped
        out += hashlib.blake2b(text.encode(), digest_size=_DIGEST).digest()
    return bytes(out)


def final_reply(provider: str, response: Any) -> dict[str, Any] | None:
    """The assistant message of a reply that ends its turn, or None (tool calls pending)."""
    if not isinstance(response, Mapping):
        return None
    if provider == ANTHROPIC:
        if response.get("stop_reason") in ("tool_use", "pause_turn", None):
            return None
        content = response.get("content")
        return {"role": "assistant", "content": content} if isinstance(content, list) else None
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    if not isinstance(message, Mapping) or message.get("tool_calls"):
        return None
    if choices[0].get("finish_reason") in ("tool_calls", "function_call", None):
        return None
    return dict(message)


@dataclass(slots=True)
class _Thread:
    """One stored conversation: its id and the hashes of its messages, root to tip."""

    conv_id: str
    hashes: bytes


class Recorder:
    """Turn-boundary commits of proxied conversations into one transcript store.

    ``max_tracked_bytes`` bounds the table of known conversations (16 bytes per
    stored message, least recently used forgotten first).
    """

    def __init__(
        self, url: str, log: EventLog, *, shared: bool = False, max_tracked_bytes: int = 16 << 20
    ) -> None:
        self._url = url
        self._log = log
        self.shared = shared
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="glyphfold-store")
        self._store: Any = None
        self._threads: OrderedDict[str, list[_Thread]] = OrderedDict()  # title -> threads
        self._tracked = 0
        self._max_tracked = max_tracked_bytes
        self._pending: set[asyncio.Future[Any]] = set()

    def identity(self, headers: Mapping[str, str]) -> Identity:
        """The namespace and naming secret of the client that sent ``headers``."""
        return client_identity(headers, shared=self.shared)

    def open(self) -> None:
        """Open the store now (in its thread), so a bad --db fails at start-up."""
        self._pool.submit(self._open).result()

    def _open(self) -> Any:
        if self._store is None:
            self._store = glyphfold.open_store(self._url)
        return self._store

    def record(
        self,
        provider: str,
        identity: Identity,
        name: str,
        history: Any,
        reply: dict[str, Any] | None,
    ) -> None:
        """Schedule the commits this request makes possible (returns at once)."""
        title = f"{_TITLE}{identity.namespace}/{name}"
        fut = asyncio.get_running_loop().run_in_executor(
            self._pool, self._record, provider, title, history, reply
        )
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)

    async def drain(self) -> None:
        """Wait for every scheduled commit."""
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def aclose(self) -> None:
        """Finish pending commits and close the store."""
        await self.drain()
        await asyncio.get_running_loop().run_in_executor(self._pool, self._close)
        self._pool.shutdown(wait=True)

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    @property
    def tracked_bytes(self) -> int:
        """Bytes of message hashes the table holds now (bounded by ``max_tracked_bytes``)."""
        return self._tracked

    # -- in the store thread -------------------------------------------------------

    def _known(self, store: Any, title: str, *, reload: bool = False) -> list[_Thread]:
        """The conversations stored under ``title`` (from the table, else one query)."""
        threads = None if reload else self._threads.get(title)
        if threads is not None:
            self._threads.move_to_end(title)
            return threads
        self._forget(title)
        threads = []
        for c in store.conversations_titled(title, limit=_CANDIDATES):
            system, messages = _split(store.export(c.id))
            threads.append(_Thread(c.id, message_hashes(messages, system)))
        self._threads[title] = threads
        self._grow(sum(len(t.hashes) for t in threads))
        return threads

    def _forget(self, title: str) -> None:
        old = self._threads.pop(title, None)
        if old is not None:
            self._tracked -= sum(len(t.hashes) for t in old)

    def _grow(self, nbytes: int) -> None:
        self._tracked += nbytes
        while self._tracked > self._max_tracked and len(self._threads) > 1:
            oldest = next(iter(self._threads))
            self._forget(oldest)

    def _record(
        self, provider: str, title: str, history: Any, reply: dict[str, Any] | None
    ) -> None:
        name = title.split("/", 1)[-1]
        try:
            store = self._open()
            system, messages = _split(history)
            hashes = message_hashes(messages, system)
            for attempt in (0, 1):
                threads = self._known(store, title, reload=attempt > 0)
                # the longest stored conversation whose messages are a prefix of the client's
                best = max(
                    (t for t in threads if hashes.startswith(t.hashes)),
                    key=lambda t: len(t.hashes),
                    default=None,
                )
                try:
                    n, new = self._commit(store, provider, title, best, history, reply, hashes)
                    break
                except ConflictError:  # another replica committed first: re-read, once
                    if attempt:
                        raise
            if n:
                self._log.write(
                    "store_commit",
                    conversation=name,
                    messages=n,
                    new_conversation=new,
                    others_under_name=len(threads) - (0 if new else 1),
                )
        except (GlyphfoldError, OSError, ValueError, RecursionError) as exc:
            self._log.write(
                "store_error", conversation=name, error=type(exc).__name__, detail=str(exc)[:300]
            )

    def _commit(
        self,
        store: Any,
        provider: str,
        title: str,
        thread: _Thread | None,
        history: Any,
        reply: dict[str, Any] | None,
        hashes: bytes,
    ) -> tuple[int, bool]:
        """Commit what is complete beyond ``thread`` (a new conversation when None).

        Returns (messages written, whether a new conversation was started).
        """
        env = split_envelope(history)
        system, messages = env.system, list(env.messages)
        done = 0 if thread is None else len(thread.hashes) // _DIGEST
        _fmt, spans, n_turns = turn_entry_spans(history)  # wire-entry ranges of the turns
        cuts = [b for _a, b in spans[:-1] if b > done]
        chunks: list[list[Any]] = []
        start = done
        for cut in cuts:
            chunks.append(messages[start:cut])
            start = cut
        if reply is not None and n_turns:
            chunks.append([*messages[start:], reply])
        chunks = [c for c in chunks if c]
        if not chunks:
            return 0, False
        new = thread is None
        if thread is None:
            thread = _Thread(store.create_conversation(title=title), b"")
            self._known(store, title).insert(0, thread)
        written = 0
        for chunk in chunks:
            payload: Any = chunk
            if done + written == 0 and env.system_key is not None:
                # the system prompt goes with the first turn, under the format's own key
                payload = {env.system_key: env.system, env.messages_key: chunk}
            store.commit_turn(thread.conv_id, payload)
            at = done + written
            added = hashes[at * _DIGEST : (at + len(chunk)) * _DIGEST]
            if len(added) < len(chunk) * _DIGEST:  # the reply, which the client has not sent
                rest = chunk[len(added) // _DIGEST :]
                added += message_hashes(rest, system if at + len(chunk) == len(rest) else None)
            thread.hashes += added
            self._grow(len(added))
            written += len(chunk)
        return written, new
