"""Turn segmentation, tool-call pairing, the orphan sweep and tool-result bounding.

SPEC §1: a turn starts at a *real* user message and runs to the next one. Not
real (they belong to the previous turn): a user message whose text starts with
``[Tool results]``, and a user message that carries tool results (Anthropic
``tool_result`` blocks). The latter goes slightly beyond the seed's wording
("only tool_result blocks"): a user message with tool results *and* text still
answers the previous assistant's calls, so starting a turn there would let a
trim separate a call from its result.

Messages before the first real user message (the leading system messages, plus
any stray preamble) are outside every turn and always kept. Steps, the unit
inside a turn, are in :mod:`~glyphfold.compaction.history.steps`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from glyphfold.checks import check_choice, check_int
from glyphfold.compaction.history.events import EventBus, OrphansSwept, publish
from glyphfold.compaction.history.markers import (
    TOOL_RESULTS_PREFIX,
    is_breadcrumb_text,
    is_marker,
)
from glyphfold.compaction.history.messages import coerce
from glyphfold.compaction.history.model import (
    OPENAI,
    TOOL_MESSAGE_FORMATS,
    Block,
    History,
    Message,
    Text,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.history.wire import serialise_entries, wire_format

__all__ = [
    "Pairing",
    "Segmentation",
    "SweepResult",
    "Turn",
    "bound_tool_result",
    "is_turn_start",
    "pair_tool_calls",
    "repair_orphans",
    "segment_turns",
    "sweep_orphans",
    "turn_entry_spans",
]


def is_turn_start(message: Message) -> bool:
    """True for a *real* user message, i.e. one that starts a turn (SPEC §1).

    Messages glyphfold inserted (snapshots, summaries, breadcrumbs: see
    :mod:`~glyphfold.compaction.history.markers`) are never real user messages.
    """
    if message.role != "user" or is_marker(message):
        return False
    first_text: str | None = None
    for b in message.blocks:
        if isinstance(b, ToolResult):
            return False
        if first_text is None and isinstance(b, Text) and not is_breadcrumb_text(b.text):
            first_text = b.text
    return not (first_text is not None and first_text.startswith(TOOL_RESULTS_PREFIX))


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn: ``messages[start:end]`` of the history it was segmented from."""

    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Segmentation:
    """``messages[:leading_end]`` are outside every turn; ``turns`` cover the rest."""

    leading_end: int
    turns: tuple[Turn, ...]

    @property
    def newest(self) -> Turn | None:
        """The newest turn (kept by every trim), or None when there is no turn."""
        return self.turns[-1] if self.turns else None


def segment_turns(history: Any) -> Segmentation:
    """Split a history (wire or canonical) into leading messages and turns (docs/history.md)."""
    h, _ = coerce(history, plain=OPENAI)  # plain text splits alike in any format
    starts = [i for i, m in enumerate(h.messages) if is_turn_start(m)]
    n = len(h.messages)
    if not starts:
        return Segmentation(n, ())
    ends = [*starts[1:], n]
    return Segmentation(starts[0], tuple(Turn(s, e) for s, e in zip(starts, ends, strict=True)))


def turn_entry_spans(history: Any) -> tuple[str, list[tuple[int, int]], int]:
    """(format, the wire-entry range ``[a, b)`` of each turn, the number of turns) of a
    wire history.

    Ranges index the wire entries (a Responses assistant message may be several items),
    cover them all, and the leading messages belong to the first turn; a history
    without a turn is one range. What the store commits and imports turn by turn.
    """
    h, _ = coerce(history, plain=OPENAI)  # plain text splits alike in any format
    row = wire_format(h.format)
    bounds = [0]
    for m in h.messages:
        bounds.append(bounds[-1] + len(serialise_entries(row, [m])))
    seg = segment_turns(h)
    cuts = [0, *(t.start for t in seg.turns[1:]), len(h.messages)]
    spans = [(bounds[a], bounds[b]) for a, b in itertools.pairwise(cuts) if b > a]
    return h.format, spans, len(seg.turns)


# --------------------------------------------------------------------------- pairing


@dataclass(frozen=True, slots=True)
class Pairing:
    """Tool calls matched to their results under the providers' adjacency rules.

    A result pairs with a call only where providers accept it: OpenAI, in the run
    of ``tool`` messages right after the calling assistant message; Anthropic, in
    the user message right after it. Anything else is an orphan.
    ``calls``/``results`` map call id -> message index.
    """

    calls: Mapping[str, int]
    results: Mapping[str, int]
    orphan_results: tuple[tuple[int, str], ...]
    orphan_calls: tuple[tuple[int, str], ...]

    @property
    def ok(self) -> bool:
        """True when no orphan exists."""
        return not self.orphan_results and not self.orphan_calls


def _pair(h: History) -> Pairing:
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    orphan_results: list[tuple[int, str]] = []
    orphan_calls: list[tuple[int, str]] = []
    pending: dict[str, int] = {}  # open calls of the last assistant message
    window_end = -1  # last index at which results for `pending` are accepted
    openai = h.format in TOOL_MESSAGE_FORMATS

    def close() -> None:
        for cid, idx in pending.items():
            if cid not in results:
                orphan_calls.append((idx, cid))
        pending.clear()

    for i, m in enumerate(h.messages):
        if openai:
            in_window = m.role == "tool" and i == window_end + 1
            if in_window:
                window_end = i
        else:
            in_window = i == window_end and m.role == "user"
        if not in_window and pending:
            close()
        here: set[str] = set()  # this message's calls (MCP/server tools answer inline)
        for b in m.blocks:
            if isinstance(b, ToolResult):
                cid = b.call_id
                if cid not in results and (cid in here or (in_window and cid in pending)):
                    results[cid] = i
                else:
                    orphan_results.append((i, cid))
            elif isinstance(b, ToolCall):
                if b.id in calls:  # a duplicate id can never be answered unambiguously
                    orphan_calls.append((i, b.id))
                    continue
                calls[b.id] = i
                pending[b.id] = i
                here.add(b.id)
        if m.role == "assistant" and pending:
            window_end = i if openai else i + 1
        elif not openai and in_window:
            close()
    close()
    orphan_calls.sort()
    return Pairing(calls, results, tuple(orphan_results), tuple(orphan_calls))


def pair_tool_calls(history: Any) -> Pairing:
    """Map each tool call id to its result, listing orphans (SPEC §2.1, §2.7)."""
    h, _ = coerce(history, plain=OPENAI)  # plain text splits alike in any format
    return _pair(h)


# --------------------------------------------------------------------------- orphan sweep

SWEEP_MODES = ("remove", "synthesize")
_MISSING_RESULT = "[tool result missing: the result of this call was lost; do not assume it ran]"
_REMOVED_CALL = "[tool call removed: its result was missing]"
_REMOVED_RESULT = TOOL_RESULTS_PREFIX + " [orphan tool result removed: its call was missing]"


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Output of :func:`repair_orphans`: the history (same kind as input) and the report."""

    history: Any
    event: OrphansSwept | None


def repair_orphans(history: Any, *, mode: str = "remove") -> SweepResult:
    """Repair orphan tool calls/results; return the history and an OrphansSwept report.

    ``mode="remove"`` drops orphan results and orphan calls; ``"synthesize"``
    drops orphan results and answers orphan calls with a synthetic error result.
    A message that would be left empty gets a short placeholder text so role
    alternation stays valid. No orphan -> the input is returned unchanged.
    """
    check_choice("mode", mode, SWEEP_MODES)
    h, restore = coerce(history, plain=OPENAI)  # plain text has no orphans to repair
    p = _pair(h)
    if p.ok:
        return SweepResult(restore(h), None)
    bad_results = set(p.orphan_results)
    bad_calls = set(p.orphan_calls)
    openai = h.format in TOOL_MESSAGE_FORMATS
    out: list[Message] = []
    out_src: list[int] = []  # original index of each message in `out`
    synth_after: dict[int, list[str]] = {}  # original index -> call ids to answer
    synthesized: list[str] = []
    for i, m in enumerate(h.messages):
        blocks: list[Block] = []
        changed = False
        for b in m.blocks:
            if isinstance(b, ToolResult) and (i, b.call_id) in bad_results:
                changed = True
                continue
            if isinstance(b, ToolCall) and (i, b.id) in bad_calls:
                if mode == "synthesize" and b.id not in synthesized:
                    synth_after.setdefault(i, []).append(b.id)
                    synthesized.append(b.id)
                    blocks.append(b)
                    continue
                changed = True
                continue
            blocks.append(b)
        if changed:
            if openai and m.role == "tool":
                continue  # a tool message without its result is just gone
            if not blocks:
                placeholder = _REMOVED_CALL if m.role == "assistant" else _REMOVED_RESULT
                blocks = [Text(placeholder)]
            m = dataclasses.replace(m, blocks=tuple(blocks))
        out.append(m)
        out_src.append(i)
    if synth_after:
        out = _insert_synthetic(h.format, out, out_src, synth_after)
    event = OrphansSwept(p.orphan_results, p.orphan_calls, tuple(synthesized))
    return SweepResult(restore(h.replace_messages(out)), event)


def _insert_synthetic(
    fmt: str, out: list[Message], out_src: list[int], synth_after: dict[int, list[str]]
) -> list[Message]:
    result: list[Message] = []
    i = 0
    while i < len(out):
        m = out[i]
        ids = synth_after.get(out_src[i])
        result.append(m)
        i += 1
        if ids is None:
            continue
        synthetic = tuple(ToolResult(cid, (Text(_MISSING_RESULT),), True) for cid in ids)
        if fmt in TOOL_MESSAGE_FORMATS:
            while i < len(out) and out[i].role == "tool":
                result.append(out[i])
                i += 1
            result.extend(Message("tool", (r,)) for r in synthetic)
        elif i < len(out) and out[i].role == "user":
            nxt = out[i]
            k = 0
            while k < len(nxt.blocks) and isinstance(nxt.blocks[k], ToolResult):
                k += 1
            blocks = nxt.blocks[:k] + synthetic + nxt.blocks[k:]
            result.append(dataclasses.replace(nxt, blocks=blocks))
            i += 1
        else:
            result.append(Message("user", synthetic))
    return result


def sweep_orphans(history: Any, *, mode: str = "remove", bus: EventBus | None = None) -> Any:
    """Final safety net (docs/history.md): repair orphans, publish OrphansSwept, return the history.

    Returns the same kind it was given; unchanged (the same object) when there
    is no orphan. See :func:`repair_orphans` for the modes.
    """
    res = repair_orphans(history, mode=mode)
    if res.event is not None:
        publish(res.event, bus)
    return res.history


# --------------------------------------------------------------------------- SPEC §2.8


def bound_tool_result(text: str, *, max_tool_result_chars: int) -> str:
    """Bound one tool result when it is recorded (docs/history.md), keeping head and tail.

    The cut is visible: ``[... 48,213 chars cut ...]`` sits between the head and
    the tail, and the result never exceeds ``max_tool_result_chars``.
    """
    # 64: room for the cut marker
    check_int("max_tool_result_chars", max_tool_result_chars, minimum=64, unit="chars")
    n = len(text)
    if n <= max_tool_result_chars:
        return text
    cut = n - max_tool_result_chars
    while True:
        marker = f"\n[... {cut:,} chars cut ...]\n"
        keep = max_tool_result_chars - len(marker)
        if n - keep == cut:
            break
        cut = n - keep
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + marker + (text[n - tail :] if tail else "")
