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
from glyphfold.compaction.history.validate import MAX_CACHE_BREAKPOINTS, count_breakpoints
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


# a string this long is hashed on its own, and named in the digest by its hash: the same
# string object seen again (an agent loop resends its history) is not hashed again
_LONG = 256

Strings = dict[int, tuple[str, bytes]]  # id -> (the string, kept alive; its hash)


def _feed(h: Any, o: Any, seen: Strings | None, now: Strings | None) -> None:
    """Hash a wire value or a canonical message into ``h``, prompt-cache markers aside.

    A walk, not ``json.dumps``: strings are hashed as they are (no escaping), which is
    what makes an append cheap next to the request it stands for. ``seen``: the long
    strings of the previous call by identity (strings are immutable, and each entry
    keeps its string alive, so an id names one string); ``now`` collects this call's.
    """
    if isinstance(o, str):
        if len(o) < _LONG:
            b = o.encode("utf-8", "surrogatepass")
            h.update(b"s%d:" % len(b))
            h.update(b)
            return
        hit = seen.get(id(o)) if seen is not None else None
        if hit is not None and hit[0] is o:
            d = hit[1]
        else:
            d = hashlib.blake2b(o.encode("utf-8", "surrogatepass"), digest_size=20).digest()
        if now is not None:
            now[id(o)] = (o, d)
        h.update(b"S")
        h.update(d)
    elif isinstance(o, Mapping):
        keys = sorted(str(k) for k in o if k not in MARKER_KEYS and k != "cachePoint")
        h.update(b"{%d" % len(keys))
        for k in keys:
            _feed(h, k, seen, now)
            _feed(h, o[k], seen, now)
        h.update(b"}")
    elif isinstance(o, (list, tuple)):
        items = [v for v in o if not (isinstance(v, Mapping) and len(v) == 1 and "cachePoint" in v)]
        h.update(b"[%d" % len(items))
        for v in items:
            _feed(h, v, seen, now)
        h.update(b"]")
    elif dataclasses.is_dataclass(o) and not isinstance(o, type):
        h.update(type(o).__name__.encode())
        for f in dataclasses.fields(o):
            if f.name != "meta":  # a framework's own objects ride there; blocks are the content
                _feed(h, f.name, seen, now)
                _feed(h, getattr(o, f.name), seen, now)
    elif o is None or isinstance(o, (bool, int, float)):
        h.update(b"v" + repr(o).encode())
    else:
        h.update(b"r" + repr(o).encode())


def _digest_of(item: Any, seen: Strings | None = None, now: Strings | None = None) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    _feed(h, item, seen, now)
    return h.digest()


def content_digests(
    seed: str,
    system: Any,
    items: Sequence[Any],
    *,
    seen: Strings | None = None,
    now: Strings | None = None,
) -> list[bytes]:
    """Chained digests: ``out[k]`` names ``seed`` + ``system`` + ``items[:k+1]``, markers aside.

    Two requests whose messages differ only in ``cache_control`` markers have the same
    digests: a harness that moves its marker to the newest message every turn still
    extends the previous request. ``seen`` / ``now``: see :func:`_feed` (the same
    digests either way).
    """
    h = hashlib.blake2b(seed.encode(), digest_size=20)
    h.update(_digest_of(system, seen, now))
    out: list[bytes] = []
    for m in items:
        h.update(b"\x1e" + _digest_of(m, seen, now))
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
    # the last output's messages (wire), a private copy: x_glyphfold kept, the harness's
    # markers stripped (ours, on the newest snapshot, kept)
    items: list[Any] | None
    history: History | None  # the last output when the input was a canonical History
    tokens: int  # its estimate (without tools)
    nbytes: int = 0  # its size as JSON (what a cache of compactors bounds)
    marks: tuple[int, int] = (0, 0)  # breakpoints the items hold: cache_control, cachePoint


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
        # the estimate prices each message on its own: an append adds the new messages'
        # price to the remembered one (no walk of the whole history)
        self._incremental = type(self.counter) is EstimateRequestCounter
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
        self._strings: Strings = {}  # the last history's long strings (content_digests)
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
            candidate, action, _, new = self._candidate(history, tools)
            return sum(self._price_from_memo(candidate, action, new, tools)) > self.budget

    def reset(self) -> None:
        """Forget the conversation (the next call starts from scratch)."""
        with self._lock:
            self._memo = None
            self._strings = {}

    @property
    def last_digests(self) -> tuple[bytes, ...]:
        """The chained content digests of the last input (serve indexes conversations by them)."""
        memo = self._memo
        return tuple(memo.digests) if memo is not None else ()

    @property
    def nbytes(self) -> int:
        """Bytes the remembered output holds, as JSON (a bound for caches of compactors)."""
        memo = self._memo
        return memo.nbytes if memo is not None else 0

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
    ) -> tuple[Any, Action, list[bytes], list[Any]]:
        """(what would be sent before compacting, its action, the input digests, the
        messages new since the remembered output: empty unless ``"append"``)."""
        system, items = _split(history)
        if known is not None:
            digests = list(known)
        else:
            now: Strings = {}
            digests = content_digests(self.seed, system, items, seen=self._strings, now=now)
            self._strings = now  # the strings of this history only: bounded by it
        memo = self._memo
        n = len(memo.digests) if memo is not None else 0
        if memo is None or n == 0 or n > len(digests) or digests[n - 1] != memo.digests[-1]:
            return history, "none", digests, []
        previous = self._previous(memo, history)
        new = items[n:]
        if memo.history is not None:
            if not new:
                return previous, "hit", digests, []
            joined = _limited([*previous.messages, *new], system, tools)
            return _join(previous, joined), "append", digests, new
        _, prev_items = _split(previous)
        joined = [*prev_items, *new]
        # the caller's breakpoints on the newest messages it sent before (a retry of the
        # same request, a marker on the message before the newest) are placed again
        marked = _callers_markers(joined, items, len(new))
        if marked or not self._within_marker_limit(memo, new, system, tools):
            joined = _limited(joined, system, tools)
        return _join(previous, joined), "append" if new else "hit", digests, new

    def _within_marker_limit(
        self, memo: _Memo, new: list[Any], system: Any, tools: Sequence[Any] | None
    ) -> bool:
        """Do the remembered output's breakpoints, the new messages' and the system's and
        tools' stay within four? (then nothing needs limiting: no walk of the history)"""
        for k, key in enumerate(("cache_control", "cachePoint")):
            fixed = count_breakpoints([system, list(tools or ())], key)
            if fixed + memo.marks[k] + count_breakpoints(new, key) > MAX_CACHE_BREAKPOINTS:
                return False
        return True

    def _previous(self, memo: _Memo, history: Any) -> Any:
        """The remembered output in ``history``'s envelope (a fresh copy: the caller may
        change what it is given without changing what is remembered)."""
        if memo.history is not None:
            return memo.history
        assert memo.items is not None
        items = [_copy(it) for it in memo.items]
        if isinstance(history, Mapping):
            # the envelope's other keys as the caller sends them now (the same content: the
            # digests cover them; markers may have moved)
            key = messages_key(history) or "messages"
            return {**{k: v for k, v in history.items() if k != key}, key: items}
        return items

    def _price(self, history: Any, tools: Sequence[Any] | None) -> int:
        return int(self.counter.count_request(history, tools=tools or None))

    def _price_from_memo(
        self, candidate: Any, action: Action, new: list[Any], tools: Sequence[Any] | None
    ) -> tuple[int, int]:
        """(the candidate's estimate without the tool schemas, the schemas' tokens).

        An append is priced without walking the whole history: the remembered output's
        estimate plus the new messages' (the estimate prices each message on its own). A
        counter that is not the estimate (an exact, provider-side count) prices the
        whole request.
        """
        memo = self._memo
        if memo is None or action not in ("hit", "append") or not self._incremental:
            tokens = self._price(candidate, tools)
            if not tools:
                return tokens, 0
            base = self._price(candidate, None)
            return base, tokens - base
        assert isinstance(self.counter, EstimateRequestCounter)
        tokens = memo.tokens
        if new:
            empty = _join(candidate, [])
            tokens += self._price(_join(candidate, new), None) - self._price(empty, None)
        return tokens, self.counter.count_tools(tools)

    def _fit(
        self, history: Any, tools: Sequence[Any] | None, known: Sequence[bytes] | None = None
    ) -> Fitted[Any]:
        candidate, action, digests, new = self._candidate(history, tools, known)
        base, tools_tokens = self._price_from_memo(candidate, action, new, tools)
        tokens = base + tools_tokens
        if tokens <= self.budget:
            if action == "append":
                self._remember_append(digests, candidate, new, base)
            elif action == "hit":
                assert self._memo is not None
                self._memo.digests = digests
            return Fitted(provider_messages(candidate), candidate, action, tokens)
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
        _, items = _split(out)
        kept = _private(items)
        marks = (count_breakpoints(kept, "cache_control"), count_breakpoints(kept, "cachePoint"))
        self._memo = _Memo(digests, kept, None, tokens, _json_size(out), marks)

    def _remember_append(
        self, digests: list[bytes], candidate: Any, new: list[Any], tokens: int
    ) -> None:
        """The remembered output grows by the new messages (no copy of what it held)."""
        memo = self._memo
        assert memo is not None
        memo.digests = digests
        memo.tokens = tokens
        if memo.history is not None:
            memo.history = candidate  # immutable: kept as it is
            return
        assert memo.items is not None
        memo.items.extend(_private(new))
        memo.nbytes += _json_size(new)


# how far back from the newest message a caller's breakpoint is carried onto the output
_MARKED_REACH = 8


def _callers_markers(joined: list[Any], items: list[Any], n_new: int) -> int:
    """Put the caller's marked messages in place of the remembered ones they equal.

    The remembered output keeps no harness breakpoint (each request brings its own);
    one on a message the output holds unchanged (the same content, markers aside, at
    the same distance from the end, before any snapshot block) is restored by taking
    the caller's message there. Returns how many messages were taken (``joined`` is
    changed in place).
    """
    taken = 0
    for j in range(n_new + 1, min(len(items), len(joined), _MARKED_REACH) + 1):
        mine, theirs = joined[-j], items[-j]
        if _is_snapshot_item(mine):
            break
        if not (
            count_breakpoints([theirs], "cache_control")
            or count_breakpoints([theirs], "cachePoint")
        ):
            continue
        if _digest_of(mine) == _digest_of(theirs):  # unchanged by the ladder
            joined[-j] = theirs
            taken += 1
    return taken


def _limited(items: list[Any], system: Any, tools: Sequence[Any] | None) -> list[Any]:
    """Ours on the newest block + the harness's on its newest messages, within the limit
    of four (system and tools count; theirs are never touched)."""
    out = items
    for key in ("cache_control", "cachePoint"):
        fixed = count_breakpoints([system, list(tools or ())], key)
        out = limit_wire_markers(out, fixed=fixed, key=key)
    return out


def _private(items: list[Any]) -> list[Any]:
    """A copy of output messages to remember: a harness's markers on the messages were
    placed for this request (the next request's come with its new messages, so the
    four-breakpoint limit holds); ours, on the newest snapshot, stays (it marks the
    frozen prefix)."""
    return [_copy(it) if _is_snapshot_item(it) else _copy(_unmarked(it)) for it in items]


def _copy(o: Any) -> Any:
    """A copy of a wire value's containers (dicts and lists; strings and numbers shared)."""
    if isinstance(o, Mapping):
        return {k: _copy(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_copy(v) for v in o]
    return o


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as JSON; a value JSON cannot hold is refused (TypeError)."""
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    # surrogatepass: a lone surrogate in a tool result is counted, not refused (issue 21)
    return len(data.encode("utf-8", "surrogatepass"))


def _jsonable(o: Any) -> Any:
    if isinstance(o, Mapping):
        return dict(o)
    msg = f"cannot remember a {type(o).__name__} in a compacted history"
    raise TypeError(msg)
