"""FIFO eviction with exact per-message token counts and on_evict callbacks (SPEC §4).

Each message is held with its token count and a running total. When
``total + prompt_overhead > max_safe_tokens`` the oldest messages are evicted
until it fits; recent messages are untouched (SPEC §4.1). System prompts are not
in the FIFO: they, the dynamic context and the tool prompt form the
``prompt_overhead``, recomputed every iteration (SPEC §4.2).

Unlike the seed's pure FIFO, eviction cuts only where the remaining history
still starts validly, as the format's row says (``WireFormat.can_start``): never
between a tool call and its results; for Anthropic and Bedrock only before a user
message (the first message must be one); for Gemini never right before a message
with function calls. The newest such unit is never evicted.
``pure_fifo=True`` restores the seed's message-by-message behaviour; it is
UNSAFE: it can leave an orphan tool result at the front, which providers reject.

``on_evict(state, evicted)`` callbacks run *before* the eviction is committed:
if one raises, nothing is evicted and the error propagates, so a failed
persistence never loses messages.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.events import EventBus, MessagesEvicted, publish
from glyphfold.compaction.history.messages import parse_message
from glyphfold.compaction.history.model import FORMATS, OPENAI, Message
from glyphfold.compaction.history.tokens import (
    DEFAULT_PROFILE,
    TokenCounter,
    estimate_message_tokens,
)
from glyphfold.compaction.history.wire import message_signal, wire_format
from glyphfold.errors import HistoryFormatError, InputError
from glyphfold.render.profiles import ProfileArg

__all__ = ["DEFAULT_MAX_SAFE_TOKENS", "EvictingHistory", "EvictionSnapshot"]

DEFAULT_MAX_SAFE_TOKENS = 8_000

OnEvict = Callable[[Any, list[Any]], Any]


def _check_tokens(name: str, value: Any) -> int:
    return check_int(name, value, minimum=0, unit="tokens")


@dataclass(frozen=True, slots=True)
class EvictionSnapshot:
    """A point-in-time copy of an EvictingHistory (for rollback, SPEC §4.6)."""

    wire: tuple[Any, ...]
    parsed: tuple[Message, ...]
    tokens: tuple[int, ...]
    format: str | None


class EvictingHistory:
    """A FIFO chat history (user/assistant/tool messages) with exact token counts."""

    def __init__(
        self,
        messages: Iterable[Any] = (),
        *,
        format: str = "auto",
        max_safe_tokens: int = DEFAULT_MAX_SAFE_TOKENS,
        pure_fifo: bool = False,
        counter: TokenCounter | None = None,
        profile: ProfileArg = DEFAULT_PROFILE,
        on_evict: OnEvict | Sequence[OnEvict] | None = None,
        bus: EventBus | None = None,
    ) -> None:
        if format != "auto" and format not in FORMATS:
            msg = f"format must be 'auto' or one of {', '.join(FORMATS)}, got {format!r}"
            raise InputError(msg)
        self.max_safe_tokens = _check_tokens("max_safe_tokens", max_safe_tokens)
        if not isinstance(pure_fifo, bool):
            msg = f"pure_fifo must be a bool, got {pure_fifo!r}"
            raise InputError(msg)
        self.pure_fifo = pure_fifo
        self.counter = counter
        self.profile = profile
        self.bus = bus
        self._format: str | None = None if format == "auto" else format
        self._wire: list[Any] = []
        self._parsed: list[Message] = []
        self._tokens: list[int] = []
        self._total = 0
        self._callbacks: list[OnEvict] = []
        if on_evict is not None:
            for fn in [on_evict] if callable(on_evict) else list(on_evict):
                self.on_evict(fn)
        self.extend(messages)

    # ------------------------------------------------------------------ contents

    @property
    def format(self) -> str:
        """The wire format (OpenAI until a message says otherwise)."""
        return self._format or OPENAI

    @property
    def messages(self) -> list[Any]:
        """The held wire messages, oldest first (the very dicts that were appended)."""
        return list(self._wire)

    @property
    def tokens(self) -> tuple[int, ...]:
        """Token count of each held message."""
        return tuple(self._tokens)

    @property
    def total_tokens(self) -> int:
        """Running total of the held messages' tokens."""
        return self._total

    def __len__(self) -> int:
        return len(self._wire)

    def append(self, message: Any, *, tokens: int | None = None) -> None:
        """Add one wire message; ``tokens`` is its exact count (else the counter's estimate)."""
        index = len(self._wire)
        signal = message_signal(message)
        if signal is not None:
            if self._format is None:
                self._format = signal
            elif signal != self._format:
                msg = f"message {index}: {signal} format in a {self._format} history"
                raise HistoryFormatError(msg, index=index)
        parsed = parse_message(self._format or OPENAI, index, message)
        if parsed.role == "system":
            msg = (
                f"message {index}: system messages are not in the FIFO (docs/history.md); "
                "count them in prompt_overhead instead"
            )
            raise HistoryFormatError(msg, index=index)
        if tokens is None:
            tokens = estimate_message_tokens(
                parsed,
                images_sent=True,
                tool_results_by_bytes=False,
                profile=self.profile,
                counter=self.counter,
            )
        else:
            _check_tokens("tokens", tokens)
        self._wire.append(message)
        self._parsed.append(parsed)
        self._tokens.append(tokens)
        self._total += tokens

    def extend(self, messages: Iterable[Any]) -> None:
        """Append several wire messages."""
        for m in messages:
            self.append(m)

    def on_evict(self, fn: OnEvict) -> OnEvict:
        """Register ``fn(state, evicted_messages)`` (usable as a decorator)."""
        if not callable(fn):
            msg = f"on_evict callback must be callable, got {type(fn).__name__}"
            raise InputError(msg)
        self._callbacks.append(fn)
        return fn

    def prompt_overhead(
        self, system_prompt: str = "", dynamic_context: str = "", tool_prompt: str = ""
    ) -> int:
        """Tokens of system prompt + dynamic context + tool prompt (docs/history.md)."""
        if self.counter is not None:
            return sum(self.counter.count(t) for t in (system_prompt, dynamic_context, tool_prompt))
        return sum(-(-len(t) // 4) for t in (system_prompt, dynamic_context, tool_prompt))

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> EvictionSnapshot:
        """Capture the current contents (messages are shared, never mutated by glyphfold)."""
        return EvictionSnapshot(
            tuple(self._wire), tuple(self._parsed), tuple(self._tokens), self._format
        )

    def restore(self, snap: EvictionSnapshot) -> None:
        """Return to a snapshot's contents: the rollback of docs/history.md (LoopGuard)."""
        self._wire = list(snap.wire)
        self._parsed = list(snap.parsed)
        self._tokens = list(snap.tokens)
        self._format = snap.format
        self._total = sum(self._tokens)

    # ------------------------------------------------------------------ eviction

    def _cut_ok(self, c: int) -> bool:
        """True when the history may start at message ``c`` (its format's row says how)."""
        return wire_format(self._format or OPENAI).can_start(self._parsed[c])

    def plan_eviction(self, max_safe_tokens: int | None = None, prompt_overhead: int = 0) -> int:
        """How many of the oldest messages an eviction would remove now (0: it fits)."""
        limit = self.max_safe_tokens if max_safe_tokens is None else max_safe_tokens
        _check_tokens("max_safe_tokens", limit)
        _check_tokens("prompt_overhead", prompt_overhead)
        target = self._total + prompt_overhead
        if target <= limit:
            return 0
        n = len(self._tokens)
        if self.pure_fifo:  # the seed's algorithm, exactly
            remove = 0
            for tok in self._tokens:
                target -= tok
                remove += 1
                if target <= limit:
                    break
            return remove
        best = 0
        for c in range(1, n):
            target -= self._tokens[c - 1]
            if self._cut_ok(c):
                best = c
                if target <= limit:
                    return c
        return best  # cannot fit: evict all that can go safely, keep the newest unit

    def _take(self, count: int) -> tuple[list[Any], int]:
        return self._wire[:count], sum(self._tokens[:count])

    def _commit(self, count: int, tokens: int, overhead: int, limit: int) -> None:
        del self._wire[:count]
        del self._parsed[:count]
        del self._tokens[:count]
        self._total -= tokens
        publish(MessagesEvicted(count, tokens, self._total, overhead, limit), self.bus)

    def evict_old_messages(
        self,
        max_safe_tokens: int | None = None,
        prompt_overhead: int = 0,
        *,
        state: Any = None,
    ) -> list[Any]:
        """Evict the oldest messages until ``total + prompt_overhead`` fits; return them.

        Sync callbacks only; an async ``on_evict`` needs :meth:`aevict_old_messages`.
        """
        limit = self.max_safe_tokens if max_safe_tokens is None else max_safe_tokens
        count = self.plan_eviction(limit, prompt_overhead)
        if count == 0:
            return []
        evicted, tokens = self._take(count)
        for fn in self._callbacks:
            result = fn(state, list(evicted))
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                msg = (
                    f"on_evict callback {fn!r} is async; call aevict_old_messages / "
                    "apush_assistant from async code"
                )
                raise InputError(msg)
        self._commit(count, tokens, prompt_overhead, limit)
        return evicted

    async def aevict_old_messages(
        self,
        max_safe_tokens: int | None = None,
        prompt_overhead: int = 0,
        *,
        state: Any = None,
    ) -> list[Any]:
        """Async :meth:`evict_old_messages`: awaits async callbacks, calls sync ones."""
        limit = self.max_safe_tokens if max_safe_tokens is None else max_safe_tokens
        count = self.plan_eviction(limit, prompt_overhead)
        if count == 0:
            return []
        evicted, tokens = self._take(count)
        for fn in self._callbacks:
            result = fn(state, list(evicted))
            if inspect.isawaitable(result):
                await result
        self._commit(count, tokens, prompt_overhead, limit)
        return evicted

    def push_assistant(
        self,
        message: Any,
        *,
        tokens: int | None = None,
        prompt_overhead: int = 0,
        state: Any = None,
    ) -> list[Any]:
        """Append an assistant message, then run the eviction check (docs/history.md)."""
        self.append(message, tokens=tokens)
        return self.evict_old_messages(prompt_overhead=prompt_overhead, state=state)

    async def apush_assistant(
        self,
        message: Any,
        *,
        tokens: int | None = None,
        prompt_overhead: int = 0,
        state: Any = None,
    ) -> list[Any]:
        """Async :meth:`push_assistant`."""
        self.append(message, tokens=tokens)
        return await self.aevict_old_messages(prompt_overhead=prompt_overhead, state=state)
