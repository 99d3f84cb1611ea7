"""One conversation's compactor: compact once, then append (SPEC §5.10, docs/ladder.md).

An agent loop sends its whole history before every model call. Compacting it from
scratch each time changes the request's leading part at every step, so the
provider's prompt cache never hits. A :class:`Compactor` remembers what it was
given last and what it sent:

- a history that extends the previous one (the same messages, compared without
  ``cache_control`` markers, plus new ones) is answered with the previous compacted
  output BYTE FOR BYTE plus the new messages, while that stays within ``budget``
  (``action="append"``; the same history again: ``"hit"``);
- when it passes ``budget`` (the high watermark) the ladder compacts it to the lower
  ``target`` (``low * budget``: hysteresis), so many steps append before the next
  compaction (``"compact"``). The snapshot pages already sent stay frozen in place
  (SPEC §5.10): the next compaction images only the newly old steps, as a new block;
- ``budget`` is a target, the model's ``window`` the hard limit: a history the
  ladder cannot bring to the target (one tool result bigger than the budget) is
  compacted as far as the floor allows and still sent when that fits the window.

Thread-safe (one lock per conversation); inputs are never mutated.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Generic, Literal

from glyphfold.checks import check_int
from glyphfold.compaction.history.budget import effective_context_budget
from glyphfold.compaction.history.counters import EstimateRequestCounter, RequestCounter
from glyphfold.compaction.history.markers import SNAPSHOT, X_KEY
from glyphfold.compaction.history.messages import HistoryT
from glyphfold.compaction.history.model import History
from glyphfold.compaction.history.validate import count_breakpoints
from glyphfold.compaction.history.wire import messages_key
from glyphfold.compaction.ladder.api import compact, floor_tokens
from glyphfold.compaction.ladder.breakpoints import limit_wire_markers
from glyphfold.compaction.ladder.provider import provider_messages
from glyphfold.compaction.ladder.registry import focus_problem
from glyphfold.compaction.ladder.result import CompactionResult
from glyphfold.errors import ContextOverflowError, InputError
from glyphfold.render.profiles import ProfileArg, get_profile

__all__ = [
    "DEFAULT_LOW_WATERMARK",
    "MARKER_KEYS",
    "Compactor",
    "Fitted",
    "content_digests",
    "needs_compaction",
]

# After a compaction the history is brought to this fraction of the budget, so the
# following steps append to an unchanged prefix. Chosen by measurement
# (benchmarks/bench_loop.py, docs/ladder.md "Across a loop"): lower means fewer
# compactions but more of the history as pages sooner.
DEFAULT_LOW_WATERMARK = 0.4

# prompt-cache markers: not content (a harness moves them every turn)
MARKER_KEYS = frozenset({"cache_control", "prompt_cache_breakpoint"})

Action = Literal["none", "hit", "append", "compact"]

# options that the compactor decides itself and cannot be passed through to compact()
_OWN = ("budget", "window", "ratio", "dry_run", "reserve")


def _feed(h: Any, o: Any) -> None:
    """Hash a wire value or a canonical message into ``h``, prompt-cache markers aside.

    A walk, not ``json.dumps``: strings are hashed as they are (no escaping), which is
    what makes an append cheap next to the request it stands for.
    """
    if isinstance(o, str):
        b = o.encode("utf-8", "surrogatepass")
        h.update(b"s%d:" % len(b))
        h.update(b)
    elif isinstance(o, Mapping):
        keys = sorted(str(k) for k in o if k not in MARKER_KEYS and k != "cachePoint")
        h.update(b"{%d" % len(keys))
        for k in keys:
            _feed(h, k)
            _feed(h, o[k])
        h.update(b"}")
    elif isinstance(o, (list, tuple)):
        items = [v for v in o if not (isinstance(v, Mapping) and len(v) == 1 and "cachePoint" in v)]
        h.update(b"[%d" % len(items))
        for v in items:
            _feed(h, v)
        h.update(b"]")
    elif dataclasses.is_dataclass(o) and not isinstance(o, type):
        h.update(type(o).__name__.encode())
        for f in dataclasses.fields(o):
            if f.name != "meta":  # a framework's own objects ride there; blocks are the content
                _feed(h, f.name)
                _feed(h, getattr(o, f.name))
    elif o is None or isinstance(o, (bool, int, float)):
        h.update(b"v" + repr(o).encode())
    else:
        h.update(b"r" + repr(o).encode())


def _digest_of(item: Any) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    _feed(h, item)
    return h.digest()


def content_digests(seed: str, system: Any, items: Sequence[Any]) -> list[bytes]:
    """Chained digests: ``out[k]`` names ``seed`` + ``system`` + ``items[:k+1]``, markers aside.

    Two requests whose messages differ only in ``cache_control`` markers have the same
    digests: a harness that moves its marker to the newest message every turn still
    extends the previous request.
    """
    h = hashlib.blake2b(seed.encode(), digest_size=20)
    h.update(_digest_of(system))
    out: list[bytes] = []
    for m in items:
        h.update(b"\x1e" + _digest_of(m))
        out.append(h.copy().digest())
    return out


def _split(history: Any) -> tuple[Any, list[Any]]:
    """(everything but the messages, the messages) of a wire history or a History."""
    if isinstance(history, History):
        return (history.format, history.system, tuple(sorted(history.extra))), list(
            history.messages
        )
    if isinstance(history, Mapping):
        key = messages_key(history)
        if key is None:
            msg = "a dict history needs a 'messages', 'input' or 'contents' list"
            raise InputError(msg)
        return {k: v for k, v in history.items() if k != key}, list(history[key])
    if isinstance(history, list):
        return None, list(history)
    msg = f"history must be a list, a dict or a History, got {type(history).__name__}"
    raise InputError(msg)


def _join(like: Any, items: list[Any]) -> Any:
    """``like`` (same kind) with ``items`` as its messages."""
    if isinstance(like, History):
        return like.replace_messages(items)
    if isinstance(like, Mapping):
        key = messages_key(like) or "messages"
        return {**like, key: items}
    return items


def _unmarked(item: Any) -> Any:
    """A wire message without prompt-cache markers (the same object when it has none)."""
    if isinstance(item, Mapping):
        if not any(k in MARKER_KEYS for k in item) and not any(
            isinstance(v, (list, Mapping)) for v in item.values()
        ):
            return item
        return {k: _unmarked(v) for k, v in item.items() if k not in MARKER_KEYS}
    if isinstance(item, list):
        return [
            _unmarked(v)
            for v in item
            if not (isinstance(v, Mapping) and len(v) == 1 and "cachePoint" in v)
        ]
    return item


def _is_snapshot_item(item: Any) -> bool:
    if isinstance(item, Mapping):
        meta = item.get(X_KEY)
        return isinstance(meta, Mapping) and meta.get("kind") == SNAPSHOT
    return False


def needs_compaction(
    history: Any,
    *,
    budget: int | None = None,
    window: int | None = None,
    ratio: float | None = None,
    profile: ProfileArg = "anthropic",
    tools: Sequence[Any] | None = None,
    counter: RequestCounter | None = None,
) -> bool:
    """Does this request need compacting for this model now? (the public trigger)

    True when the history, with the tool schemas ``tools`` priced as text, passes
    ``budget`` tokens (or the budget of ``window`` and ``ratio``, as
    :func:`glyphfold.effective_context_budget` resolves it). ``counter`` prices the
    request (default: the estimate under ``profile``, every image billed).
    """
    limit = _resolve_budget(budget, window, ratio)
    price = counter or EstimateRequestCounter(profile=profile)
    return price.count_request(history, tools=tools or None) > limit


def _resolve_budget(budget: int | None, window: int | None, ratio: float | None) -> int:
    if budget is None and window is None:
        msg = "give budget= (tokens) or window= (the model's context window), or both"
        raise InputError(msg)
    if ratio is not None and window is None:
        msg = "ratio= applies to window=; give window= or drop ratio="
        raise InputError(msg)
    if budget is None:
        check_int("window", window, minimum=1, unit="tokens")
        assert window is not None
        return effective_context_budget(context_window=window, context_compact_ratio=ratio)
    return check_int("budget", budget, minimum=1, unit="tokens")


@dataclasses.dataclass(frozen=True)
class Fitted(Generic[HistoryT]):
    """What one call of a :class:`Compactor` returns.

    ``messages`` is ready to send (``x_glyphfold`` keys removed, the same kind as the
    input); ``compacted`` is the same history with the snapshot sources kept (what a
    reactive recovery or a store needs). ``action``: ``"none"`` (under the budget,
    nothing compacted yet: the input itself), ``"hit"`` (the same history as last time),
    ``"append"`` (the previous output byte for byte plus the new messages),
    ``"compact"`` (the ladder ran; its result in ``result``). ``tokens``: the estimate
    of what is sent, tool schemas included.
    """

    messages: HistoryT
    compacted: HistoryT
    action: Action
    tokens: int
    result: CompactionResult[HistoryT] | None = None
    over_budget: bool = False  # sent over the budget (inside the window: the floor)

    @property
    def compactions(self) -> int:
        """1 when this call compacted, else 0 (summed over a loop: its compactions)."""
        return int(self.action == "compact")


@dataclasses.dataclass
class _Memo:
    digests: list[bytes]  # chained content digests of the last input
    data: bytes | None  # the last output (wire), JSON, x_glyphfold kept, markers stripped
    history: History | None  # the last output when the input was a canonical History
    tokens: int  # its estimate (without tools)


class Compactor:
    """One conversation's compactor: compact at ``budget``, to ``low * budget``, then append.

    ``budget`` (tokens) is the high watermark, a target; ``window`` the model's context
    window, the hard limit (with ``reserve`` tokens kept for the reply). Give either
    or both: ``window`` alone sets the budget as :func:`glyphfold.effective_context_budget`
    does (``ratio``). ``low`` (0 < low <= 1, default :data:`DEFAULT_LOW_WATERMARK`) is
    the fraction of the budget a compaction brings the history to. ``counter`` prices
    requests (a RequestCounter; default: the estimate under ``profile``). ``namespace``
    goes into the content digests (a proxy keeps providers apart with it). Other keyword
    options go to :func:`glyphfold.compact` (``rungs``, ``summarizer``, ``config``,
    ``pins``, ``renderer``, ``bus``, ``image_policy``...).

    Call it with the whole history before each model call; send ``.messages``::

        compactor = glyphfold.Compactor(budget=100_000)
        fitted = compactor(history, tools=tools)
        client.messages.create(messages=fitted.messages, ...)
    """

    def __init__(
        self,
        budget: int | None = None,
        *,
        window: int | None = None,
        ratio: float | None = None,
        low: float = DEFAULT_LOW_WATERMARK,
        reserve: int = 0,
        profile: ProfileArg = "anthropic",
        counter: RequestCounter | None = None,
        namespace: str = "",
        **compact_options: Any,
    ) -> None:
        self.namespace = namespace
        self.budget = _resolve_budget(budget, window, ratio)
        if isinstance(low, bool) or not isinstance(low, (int, float)) or not 0 < low <= 1:
            msg = f"low must be a fraction of the budget in (0, 1], got {low!r}"
            raise InputError(msg)
        check_int("reserve", reserve, minimum=0, unit="tokens")
        self.window = window
        self.reserve = reserve
        if window is not None:
            if window - reserve < 1:
                msg = f"reserve ({reserve}) leaves nothing of the window ({window}); lower it"
                raise InputError(msg)
            self.budget = min(self.budget, window - reserve)
        self.low = float(low)
        self.target = max(1, int(self.budget * self.low))
        get_profile(profile)  # an unknown profile fails here, not mid-run
        self.profile = profile
        if counter is not None and not hasattr(counter, "count_request"):
            msg = f"counter must have count_request(history, tools=...), got {counter!r}"
            raise InputError(msg)
        self.counter: RequestCounter = counter or EstimateRequestCounter(profile=profile)
        for bad in (*_OWN, "format", "profile"):
            if bad in compact_options:
                msg = f"{bad}= is the compactor's own; it cannot be passed through to compact()"
                raise InputError(msg)
        problem = focus_problem(
            compact_options.get("focus"),
            compact_options.get("rungs"),
            compact_options.get("summarizer"),
        )
        if problem is not None:
            raise InputError(problem)  # here, not at the first compaction 20 steps later
        self.options = compact_options
        self._memo: _Memo | None = None
        self._lock = threading.Lock()
        self.compactions = 0  # how many times this conversation was compacted

    # ------------------------------------------------------------------ public

    @property
    def hard_limit(self) -> int:
        """The most a request may hold: the window less the reserve, else the budget."""
        return self.window - self.reserve if self.window is not None else self.budget

    @property
    def seed(self) -> str:
        """What the output depends on besides the history (part of the content digests)."""
        rungs = self.options.get("rungs")
        focus = self.options.get("focus")  # another focus, another summary (absent: as before)
        return (
            f"{self.namespace}|{self.profile}|{self.budget}|{self.target}|{self.hard_limit}"
            f"|{rungs!r}" + ("" if focus is None else f"|focus={focus!r}")
        )

    def digests(self, history: Any) -> list[bytes]:
        """The chained content digests of ``history`` under this compactor's options."""
        system, items = _split(history)
        return content_digests(self.seed, system, items)

    def adopt(self, history: Any, compacted: Any) -> None:
        """Remember ``compacted`` as the output for ``history`` (e.g. after a reactive
        recovery made it smaller): the next history that extends ``history`` appends to it."""
        with self._lock:
            tokens = self._price(compacted, None)
            self._remember(self.digests(history), compacted, tokens)

    def needs_compaction(self, history: Any, *, tools: Sequence[Any] | None = None) -> bool:
        """Would this history (as this compactor would send it) pass the budget now?"""
        with self._lock:
            candidate, _, _, _ = self._candidate(history, tools)
        return self._price(candidate, tools) > self.budget

    def reset(self) -> None:
        """Forget the conversation (the next call starts from scratch)."""
        with self._lock:
            self._memo = None

    @property
    def last_digests(self) -> tuple[bytes, ...]:
        """The chained content digests of the last input (serve indexes conversations by them)."""
        memo = self._memo
        return tuple(memo.digests) if memo is not None else ()

    @property
    def nbytes(self) -> int:
        """Bytes the remembered output holds (a bound for caches of compactors)."""
        memo = self._memo
        return len(memo.data) if memo is not None and memo.data is not None else 0

    def __call__(
        self,
        history: HistoryT,
        *,
        tools: Sequence[Any] | None = None,
        digests: Sequence[bytes] | None = None,
    ) -> Fitted[HistoryT]:
        """The history to send for ``history`` (the whole conversation so far).

        ``digests``: ``self.digests(history)`` when the caller computed them already.
        """
        with self._lock:
            return self._fit(history, tools, digests)

    async def afit(
        self, history: HistoryT, *, tools: Sequence[Any] | None = None
    ) -> Fitted[HistoryT]:
        """:meth:`__call__` in a worker thread (the event loop never blocks on the ladder)."""
        import asyncio

        return await asyncio.to_thread(self.__call__, history, tools=tools)

    # ------------------------------------------------------------------ the work

    def _candidate(
        self,
        history: Any,
        tools: Sequence[Any] | None = None,
        known: Sequence[bytes] | None = None,
    ) -> tuple[Any, Action, list[bytes], bool]:
        """(what would be sent before compacting, its action, the input digests, memo used)."""
        system, items = _split(history)
        digests = list(known) if known is not None else content_digests(self.seed, system, items)
        memo = self._memo
        n = len(memo.digests) if memo is not None else 0
        if memo is None or n == 0 or n > len(digests) or digests[n - 1] != memo.digests[-1]:
            return history, "none", digests, False
        previous = self._previous(memo, history)
        if n == len(digests):
            return previous, "hit", digests, True
        _, prev_items = _split(previous)
        joined = [*prev_items, *items[n:]]
        return _join(previous, _limited(joined, system, tools)), "append", digests, True

    def _previous(self, memo: _Memo, history: Any) -> Any:
        if memo.history is not None:
            return memo.history
        assert memo.data is not None
        previous = json.loads(memo.data.decode("utf-8", "surrogatepass"))
        if isinstance(history, Mapping) and isinstance(previous, dict):
            # the envelope's other keys as the caller sends them now (the same content: the
            # digests cover them; markers may have moved)
            key = messages_key(previous) or "messages"
            return {**{k: v for k, v in history.items() if k != key}, key: previous[key]}
        return previous

    def _price(self, history: Any, tools: Sequence[Any] | None) -> int:
        return int(self.counter.count_request(history, tools=tools or None))

    def _fit(
        self, history: Any, tools: Sequence[Any] | None, known: Sequence[bytes] | None = None
    ) -> Fitted[Any]:
        candidate, action, digests, from_memo = self._candidate(history, tools, known)
        tokens = self._price(candidate, tools)
        if tokens <= self.budget:
            if from_memo:
                self._remember(digests, candidate, tokens)
            return Fitted(provider_messages(candidate), candidate, action, tokens)
        tools_tokens = tokens - self._price(candidate, None) if tools else 0
        result, over = self._compact(candidate, tools_tokens)
        self.compactions += 1
        out = result.messages
        if not isinstance(out, History):
            system, items = _split(out)
            limited = _limited(items, system, tools)
            if limited is not items:
                out = _join(out, limited)
        sent = self._price(out, tools)
        self._remember(digests, out, sent - tools_tokens)
        return Fitted(provider_messages(out), out, "compact", sent, result, over_budget=over)

    def _compact(self, candidate: Any, tools_tokens: int) -> tuple[CompactionResult[Any], bool]:
        """Compact to the target; past it, as far as the floor allows within the window."""
        target = self.target - tools_tokens
        hard = self.hard_limit - tools_tokens
        if hard < 1:
            msg = f"the tool schemas alone ({tools_tokens:,} tokens) fill the limit ({hard:,})"
            raise ContextOverflowError(msg, estimate=tools_tokens, window=self.hard_limit)
        try:
            return self._ladder(candidate, max(1, target)), False
        except ContextOverflowError as exc:
            first = exc
        pins = self.options.get("pins", ())
        floor = floor_tokens(candidate, profile=self.profile, pins=pins)
        budget = self.budget - tools_tokens
        for limit in sorted({min(hard, max(target, floor)), budget, hard}):
            if limit < max(target, 1) or limit > hard:
                continue
            try:
                return self._ladder(candidate, limit), limit > budget
            except ContextOverflowError:
                continue
        raise first

    def _ladder(self, candidate: Any, budget: int) -> CompactionResult[Any]:
        return compact(candidate, budget=budget, profile=self.profile, **self.options)

    def _remember(self, digests: list[bytes], out: Any, tokens: int) -> None:
        if isinstance(out, History):
            self._memo = _Memo(digests, None, out, tokens)
            return
        # a harness's markers on the messages were placed for this request; the next
        # request's come with its new messages (so the four-breakpoint limit holds).
        # Ours, on the newest snapshot, stays: it marks the frozen prefix.
        _, items = _split(out)
        out = _join(out, [it if _is_snapshot_item(it) else _unmarked(it) for it in items])
        data = json.dumps(out, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
        # surrogatepass: a lone surrogate in a tool result round-trips (issue 21 item 8)
        self._memo = _Memo(digests, data.encode("utf-8", "surrogatepass"), None, tokens)


def _limited(items: list[Any], system: Any, tools: Sequence[Any] | None) -> list[Any]:
    """Ours on the newest block + the harness's on its newest messages, within the limit
    of four (system and tools count; theirs are never touched)."""
    out = items
    for key in ("cache_control", "cachePoint"):
        fixed = count_breakpoints([system, list(tools or ())], key)
        out = limit_wire_markers(out, fixed=fixed, key=key)
    return out


def _jsonable(o: Any) -> Any:
    if isinstance(o, Mapping):
        return dict(o)
    msg = f"cannot remember a {type(o).__name__} in a compacted history"
    raise TypeError(msg)
