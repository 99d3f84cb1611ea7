"""Commit each conversation passing through the proxy to the transcript store.

A conversation is named by the client's ``x-glyphfold-conversation`` header, else
by a hash of its first messages (the leading system prompt and the first user
message). Whole turns are committed at turn boundaries (SPEC §6.1): every turn
before the newest one as soon as a request shows it complete, and the newest one
with the assistant's final reply (non-streaming). The store is used from one
worker thread (a store handle is not thread-safe); failures are logged, never
raised into a request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import glyphfold
from glyphfold.compaction.history.turns import turn_entry_spans
from glyphfold.compaction.history.wire import split_envelope
from glyphfold.errors import ConflictError, GlyphfoldError
from glyphfold.serve.eventlog import EventLog
from glyphfold.serve.providers import ANTHROPIC

__all__ = ["CONVERSATION_HEADER", "Recorder", "conversation_key", "final_reply"]

CONVERSATION_HEADER = "x-glyphfold-conversation"
_TITLE = "glyphfold serve "
_SAFE_KEY = re.compile(r"^[A-Za-z0-9._:@/-]{1,128}$")


def conversation_key(provider: str, history: Any, header: str | None) -> str:
    """The conversation's name: the client's header, else a hash of its first messages."""
    if header is not None and _SAFE_KEY.match(header):
        return header
    env = split_envelope(history)
    system, messages = env.system, env.messages
    first = next((i for i, m in enumerate(messages) if _role(m) == "user"), len(messages) - 1)
    head = json.dumps([provider, system, messages[: first + 1]], sort_keys=True, default=str)
    return "h:" + hashlib.blake2b(head.encode(), digest_size=12).hexdigest()


def _role(m: Any) -> Any:
    return m.get("role") if isinstance(m, Mapping) else None


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


class Recorder:
    """Turn-boundary commits of proxied conversations into one transcript store."""

    def __init__(self, url: str, log: EventLog) -> None:
        self._url = url
        self._log = log
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="glyphfold-store")
        self._store: Any = None
        self._convs: dict[str, tuple[str, int]] = {}  # key -> (store id, messages committed)
        self._pending: set[asyncio.Future[Any]] = set()

    def open(self) -> None:
        """Open the store now (in its thread), so a bad --db fails at start-up."""
        self._pool.submit(self._open).result()

    def _open(self) -> Any:
        if self._store is None:
            self._store = glyphfold.open_store(self._url)
        return self._store

    def record(self, provider: str, key: str, history: Any, reply: dict[str, Any] | None) -> None:
        """Schedule the commits this request makes possible (returns at once)."""
        fut = asyncio.get_running_loop().run_in_executor(
            self._pool, self._record, provider, key, history, reply
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

    # -- in the store thread -------------------------------------------------------

    def _lookup(self, store: Any, key: str) -> tuple[str, int]:
        known = self._convs.get(key)
        if known is not None:
            return known
        title = _TITLE + key
        conv = next((c for c in store.conversations() if c.title == title), None)
        if conv is None:
            found = (store.create_conversation(title=title), 0)
        else:
            found = (conv.id, self._committed(store, conv.id))
        self._convs[key] = found
        return found

    @staticmethod
    def _committed(store: Any, conv_id: str) -> int:
        tip = store.tip(conv_id)
        return 0 if tip is None else store.get_message(tip).depth + 1

    def _record(self, provider: str, key: str, history: Any, reply: dict[str, Any] | None) -> None:
        try:
            store = self._open()
            for attempt in (0, 1):
                conv_id, done = self._lookup(store, key)
                try:
                    n = self._commit(store, provider, key, conv_id, done, history, reply)
                    break
                except ConflictError:  # another replica committed first: re-read, once
                    self._convs[key] = (conv_id, self._committed(store, conv_id))
                    if attempt:
                        raise
            if n:
                self._log.write("store_commit", conversation=key, messages=n)
        except (GlyphfoldError, OSError, ValueError) as exc:
            self._log.write(
                "store_error", conversation=key, error=type(exc).__name__, detail=str(exc)[:300]
            )

    def _commit(
        self,
        store: Any,
        provider: str,
        key: str,
        conv_id: str,
        done: int,
        history: Any,
        reply: dict[str, Any] | None,
    ) -> int:
        """Commit what is complete beyond ``done``; return how many messages were written."""
        env = split_envelope(history)
        messages = env.messages
        if done > len(messages):
            self._log.write(
                "store_skipped",
                conversation=key,
                reason="the client's history is shorter than its transcript",
            )
            return 0
        _fmt, spans, n_turns = turn_entry_spans(history)  # wire-entry ranges of the turns
        cuts = [b for _a, b in spans[:-1] if b > done]
        chunks = []
        start = done
        for cut in cuts:
            chunks.append(messages[start:cut])
            start = cut
        if reply is not None and n_turns:
            chunks.append([*messages[start:], reply])
        written = 0
        for chunk in chunks:
            payload: Any = chunk
            if done + written == 0 and env.system_key is not None:
                # the system prompt goes with the first turn, under the format's own key
                payload = {env.system_key: env.system, env.messages_key: chunk}
            store.commit_turn(conv_id, payload)
            written += len(chunk)
            self._convs[key] = (conv_id, done + written)
        return written
