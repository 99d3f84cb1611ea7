"""Steps and the one head / middle / tail splitter every rung uses (SPEC §1, §5.5).

A **step** is an assistant message together with the tool results that answer its
calls: the run of ``tool`` messages after it (OpenAI), or the user message that
carries its ``tool_result`` blocks (Anthropic), or a ``[Tool results]`` user
message (tool output written as text). An assistant message without calls is a
step of its own. To cover every message, the other messages are one-message units
of their own kind: a real user message (``"user"``), a system message
(``"system"``), a message glyphfold inserted (``"marker"``). A cut between two
units never separates a call from its result.

:func:`split_regions` cuts a history into

- the **head**: the leading messages and the first real user message (the task and
  its constraints), extended to a server-side compaction block when there is one
  (what precedes it is dropped by the provider; the block is never moved);
- the **tail**: the newest units, at least the newest one, and as many more as fit
  ``tail_tokens``;
- the **middle**: everything between, inside turns too: a single long turn has a
  middle.

It also reports where the real user messages lie; the newest one reaches the model
as text wherever it is (SPEC §5.5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from glyphfold.checks import check_int
from glyphfold.compaction.history.markers import is_marker
from glyphfold.compaction.history.messages import coerce
from glyphfold.compaction.history.model import OPENAI, History, Message
from glyphfold.compaction.history.provider_blocks import compaction_barrier
from glyphfold.compaction.history.turns import is_turn_start
from glyphfold.errors import InputError

__all__ = ["Region", "Regions", "Step", "StepKind", "segment_steps", "split_regions"]

StepKind: TypeAlias = Literal["step", "user", "system", "marker"]
Region: TypeAlias = Literal["head", "middle", "tail"]


@dataclass(frozen=True, slots=True)
class Step:
    """``messages[start:end]``: one step (or one user, system or marker message)."""

    start: int
    end: int
    kind: StepKind

    def __len__(self) -> int:
        return self.end - self.start

    @property
    def indices(self) -> range:
        """The message indices of the step."""
        return range(self.start, self.end)


def _answers(m: Message) -> bool:
    """True for a message that belongs to the step before it (a tool result)."""
    if m.role == "tool":
        return True
    return m.role == "user" and not is_marker(m) and not is_turn_start(m)


def _kind(m: Message) -> StepKind:
    if is_marker(m):
        return "marker"
    if m.role == "assistant":
        return "step"
    if m.role == "system":
        return "system"
    if is_turn_start(m):
        return "user"
    return "step"  # a tool result with no assistant before it: its own (orphan) step


def segment_steps(history: Any) -> tuple[Step, ...]:
    """Split every message of a history (wire or canonical) into steps (SPEC §1)."""
    h, _ = coerce(history, plain=OPENAI)  # plain text splits alike in any format
    return _segment(h.messages)


def _segment(msgs: Sequence[Message]) -> tuple[Step, ...]:
    out: list[Step] = []
    i, n = 0, len(msgs)
    while i < n:
        m = msgs[i]
        kind = _kind(m)
        j = i + 1
        if kind == "step":
            while j < n and _answers(msgs[j]):
                j += 1
        out.append(Step(i, j, kind))
        i = j
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Regions:
    """Head ``[:head_end]``, middle ``[head_end:tail_start]``, tail ``[tail_start:]``.

    ``steps`` covers every message; ``users`` are the indices of the real user
    messages, ``newest_user`` the newest of them (None: there is none);
    ``barrier`` the index of the message holding the newest compaction block.
    """

    steps: tuple[Step, ...]
    head_end: int
    tail_start: int
    users: tuple[int, ...]
    newest_user: int | None
    barrier: int | None = None

    @property
    def middle(self) -> range:
        """Indices of the middle's messages."""
        return range(self.head_end, self.tail_start)

    @property
    def middle_steps(self) -> tuple[Step, ...]:
        """The steps of the middle, oldest first."""
        return tuple(s for s in self.steps if self.head_end <= s.start < self.tail_start)

    @property
    def tail_steps(self) -> tuple[Step, ...]:
        """The steps of the tail, oldest first."""
        return tuple(s for s in self.steps if s.start >= self.tail_start)

    def region_of(self, i: int) -> Region:
        """Where message ``i`` lies."""
        if i < self.head_end:
            return "head"
        return "middle" if i < self.tail_start else "tail"

    def users_in(self, region: Region) -> tuple[int, ...]:
        """The real user messages that lie in ``region``."""
        return tuple(i for i in self.users if self.region_of(i) == region)

    @property
    def request(self) -> tuple[int, ...]:
        """The request: the newest real user message and the real user messages right
        before it, with nothing between them (a harness that ends with a summary, a caveat
        and a command sends them as consecutive user messages). It reaches the model as
        text wherever it lies (SPEC §5.5)."""
        if self.newest_user is None:
            return ()
        k = next(j for j, s in enumerate(self.steps) if s.start == self.newest_user)
        out = [self.newest_user]
        while k > 0 and self.steps[k - 1].kind == "user":
            k -= 1
            out.append(self.steps[k].start)
        return tuple(reversed(out))

    @property
    def newest_user_in_middle(self) -> bool:
        """True when the newest real user message lies in the middle (it stays text)."""
        return self.newest_user is not None and self.region_of(self.newest_user) == "middle"


def _head_end(msgs: Sequence[Message], users: Sequence[int], barrier: int | None) -> int:
    if users:
        end = users[0] + 1
    else:  # no real user message: the head is the leading system messages
        end = 0
        while end < len(msgs) and msgs[end].role == "system":
            end += 1
    if barrier is not None:
        end = max(end, barrier + 1)
    return end


def _segmented(history: History) -> tuple[tuple[Step, ...], tuple[int, ...], int | None]:
    """(steps, real user messages, compaction barrier) of ``history``, kept on it: the
    rungs of one run and the snapshot's tails split the same history again and again."""
    hit = history._steps if isinstance(history, History) else None
    if hit is None:
        msgs = history.messages
        steps = _segment(msgs)
        bar = compaction_barrier(msgs)
        users = tuple(s.start for s in steps if s.kind == "user")
        hit = (steps, users, bar[0] if bar is not None else None)
        if isinstance(history, History):
            object.__setattr__(history, "_steps", hit)
    return hit


def split_regions(
    history: History,
    *,
    costs: Sequence[int] | None = None,
    tail_tokens: int | None = None,
    tail_messages: int | None = None,
) -> Regions:
    """Cut ``history`` into head, middle and tail at step boundaries (SPEC §1, §5.5).

    Give the tail as ``tail_tokens`` with ``costs`` (the per-message estimates,
    ``token_costs(h).messages``): the newest step plus every older step while the
    tail stays within ``tail_tokens`` (0: the newest step only); or as
    ``tail_messages``, a suffix of that many messages (widened to a step boundary).
    The tail is never empty when there are messages after the head, and it never
    reaches into the head.
    """
    msgs = history.messages
    if (tail_tokens is None) == (tail_messages is None):
        msg = "give exactly one of tail_tokens= (with costs=) or tail_messages="
        raise InputError(msg)
    steps, users, barrier = _segmented(history)
    head_end = _head_end(msgs, users, barrier)
    for s in steps:  # a barrier inside a step: the whole step belongs to the head
        if s.start < head_end < s.end:
            head_end = s.end
    if tail_messages is not None:
        tail_start = _tail_by_messages(steps, len(msgs), tail_messages)
    else:
        tail_start = _tail_by_tokens(steps, len(msgs), head_end, costs, tail_tokens)
    return Regions(
        steps=steps,
        head_end=head_end,
        tail_start=max(tail_start, head_end),
        users=users,
        newest_user=users[-1] if users else None,
        barrier=barrier,
    )


def _tail_by_messages(steps: Sequence[Step], n: int, tail_messages: int) -> int:
    check_int("tail_messages", tail_messages, minimum=1)
    start = max(0, n - tail_messages)
    for s in steps:
        if s.start <= start < s.end:
            return s.start
    return start


def _tail_by_tokens(
    steps: Sequence[Step], n: int, head_end: int, costs: Sequence[int] | None, tail_tokens: Any
) -> int:
    if costs is None or len(costs) != n:
        got = "no costs" if costs is None else f"{len(costs)} costs"
        msg = f"tail_tokens= needs costs= with one estimate per message ({n}), got {got}"
        raise InputError(msg)
    check_int("tail_tokens", tail_tokens, minimum=0, unit="tokens")
    tail_start = n
    used = 0
    for s in reversed(steps):
        if s.start < head_end:
            break
        cost = sum(costs[s.start : s.end])
        if tail_start < n and used + cost > tail_tokens:
            break
        used += cost
        tail_start = s.start
    return tail_start
