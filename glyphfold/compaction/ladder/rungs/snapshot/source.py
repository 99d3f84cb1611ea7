"""The text a snapshot images: one transcript piece per message, at a chosen treatment.

Each message of the imaged middle becomes one piece of transcript
(:func:`~glyphfold.compaction.ladder.rungs.transcribe.piece`); the pieces of a
run of steps, joined, are the text of one snapshot. Earlier snapshots unfold to
their source and earlier summaries to their text, so pages are always drawn from
text (SPEC §5.3). At level 0 a piece holds every word (SPEC §5.9: no per-result cap
unless the caller set one). Only when even the densest pages cannot hold the middle
is tool output cut (SPEC §5.9): a piece can be built at a tighter *level* (head+tail
caps per tool result and per argument, :data:`LEVEL_RESULT_CAPS`), or *elided* (its
tool results and long arguments become stubs that keep the original output's size
and hash; a result that already is a stub stays as it is). An earlier snapshot's
source is shortened the same way, by its result marks. Narrative is only ever
dropped whole or from its start, by the planner. Pieces are cached per
(message, level): the planner tries many variants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from glyphfold.compaction.history.markers import SNAPSHOT, glyphfold_meta, marker_kind
from glyphfold.compaction.history.model import Message, Text, ToolCall, ToolResult
from glyphfold.compaction.ladder.rungs.transcribe import piece
from glyphfold.compaction.ladder.transcript import TranscriptConfig, tool_output_spans

__all__ = ["LEVELS", "Source", "dropped_marker"]

LEVELS = 5  # tighter cap levels after the configured one; level LEVELS + 1 = elided
# per-result and per-argument caps of levels 1..LEVELS when level 0 has no cap
LEVEL_RESULT_CAPS = (8000, 4000, 2000, 1000, 400)
LEVEL_ARGS_CAPS = (2000, 1000, 500, 250, 120)
_MIN_RESULT_CAP = 200
_MIN_ARGS_CAP = 80


def level_config(base: TranscriptConfig, level: int) -> TranscriptConfig:
    """The transcript caps of ``level``: level 0 is ``base`` (no cap by default); each
    further level caps tighter (a configured cap is halved per level)."""
    if level <= 0:
        return base
    k = min(level, LEVELS)

    def cap(value: int | None, table: tuple[int, ...], floor: int) -> int:
        return table[k - 1] if value is None else max(floor, min(value >> k, table[k - 1]))

    return dataclasses.replace(
        base,
        max_result_chars=cap(base.max_result_chars, LEVEL_RESULT_CAPS, _MIN_RESULT_CAP),
        max_args_chars=cap(base.max_args_chars, LEVEL_ARGS_CAPS, _MIN_ARGS_CAP),
    )


def has_tool_output(m: Message) -> bool:
    """True when a tighter level or elision can shorten the message's piece."""
    kind = marker_kind(m)
    if kind == SNAPSHOT:  # an earlier snapshot's source: shortened by its result marks
        return bool(tool_output_spans(str(glyphfold_meta(m).get("source", ""))))
    return kind is None and any(isinstance(b, (ToolCall, ToolResult)) for b in m.blocks)


def dropped_marker(n_msgs: int, chars: int) -> str:
    """The line a snapshot shows where messages were dropped to fit its page budget."""
    what = f"{n_msgs:,} earlier message{'s' if n_msgs != 1 else ''}"
    return (
        f"[... {what} ({chars:,} chars of transcript) were dropped to fit the page budget; "
        "see the ledger ...]\n"
    )


def cut_marker(chars: int) -> str:
    """The line a snapshot shows where the start of a message was dropped."""
    return (
        f"[... the first {chars:,} chars of this message were dropped to fit the page budget ...]\n"
    )


class _Slice:
    """A level-0 piece kept as a span of its run's joined text (see :meth:`Source.back`)."""

    __slots__ = ("end", "start", "text")

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start, self.end = text, start, end

    def __len__(self) -> int:
        return self.end - self.start


class Source:
    """Transcript pieces of the imaged messages, by position, level and elision (cached)."""

    def __init__(
        self,
        messages: Sequence[Message],
        names: dict[str, str],
        config: TranscriptConfig,
        *,
        shared: dict[tuple[int, int], str] | None = None,
    ) -> None:
        self.messages = list(messages)
        self.names = names
        self.config = config
        # pieces by (id of the message, level): ``shared`` lets the Sources of one rung
        # call (one per tail tried) build each message's piece once; the messages are
        # the caller's history, alive as long as the dict
        self._cache: dict[tuple[int, int], Any] = {} if shared is None else shared
        self.tool_output = [has_tool_output(m) for m in self.messages]
        self._sizes: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._capped: dict[tuple[int, int, int], str] = {}

    def piece(self, pos: int, level: int = 0) -> str:
        """Piece of message ``pos`` at ``level`` (LEVELS + 1: elided)."""
        if not self.tool_output[pos]:
            level = 0
        key = (id(self.messages[pos]), level)
        text = self._cache.get(key)
        if type(text) is _Slice:
            return text.text[text.start : text.end]
        if text is None:
            elided = level > LEVELS
            cfg = level_config(self.config, min(level, LEVELS))
            text = piece(self.messages[pos], self.names, cfg, elided=elided)
            self._cache[key] = text
        return text

    def piece_capped(self, pos: int, level: int, max_result_chars: int) -> str:
        """Piece of message ``pos`` at ``level`` (1..LEVELS) with its tool results capped
        to ``max_result_chars`` instead of the level's cap: the last output the planner
        caps gets the widest cap that fits (SPEC §5.6), not the next level's step."""
        if not self.tool_output[pos] or not 1 <= level <= LEVELS:
            return self.piece(pos, level)
        key = (id(self.messages[pos]), level, max_result_chars)
        text = self._capped.get(key)
        if text is None:
            cfg = dataclasses.replace(
                level_config(self.config, level), max_result_chars=max_result_chars
            )
            text = self._capped[key] = piece(self.messages[pos], self.names, cfg)
        return text

    def piece_len(self, pos: int) -> int:
        """The length of message ``pos``'s level-0 piece (no copy of a span is made)."""
        hit = self._cache.get((id(self.messages[pos]), 0))
        return len(hit) if hit is not None else len(self.piece(pos))

    def back(self, text: str, start: int, positions: Sequence[int]) -> None:
        """The level-0 pieces of ``positions`` are ``text`` from ``start`` on, joined by
        newlines (:func:`join`): keep them as spans of it, not as copies of their own.

        A run's joined text holds every word of its messages once; their pieces were a
        second copy (at 10^5 messages, 100M chars held twice for the rest of the call)."""
        at = start
        for pos in positions:
            key = (id(self.messages[pos]), 0)
            piece = self._cache.get(key)
            if not piece:
                continue  # an empty piece (a bridge) takes no room in the text
            end = at + len(piece)
            if type(piece) is str:  # (a span of another run's text stays as it is)
                self._cache[key] = _Slice(text, at, end)
            at = end + 1

    def sizes(self, pos: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(lengths of the tool results, lengths of the call arguments) of message ``pos``:
        what the level caps cut, for pricing a level without building its piece."""
        hit = self._sizes.get(pos)
        if hit is None:
            results: list[int] = []
            args: list[int] = []
            for b in self.messages[pos].blocks:
                if isinstance(b, ToolResult):
                    # len(result_text(b)): its texts and a newline between each two
                    n = parts = 0
                    for c in b.content:
                        if isinstance(c, Text):
                            n += len(c.text)
                            parts += 1
                    results.append(n + parts - 1 if parts else 0)
                elif isinstance(b, ToolCall):
                    a = b.arguments
                    if isinstance(a, dict):
                        args.extend(len(v) if isinstance(v, str) else 16 for v in a.values())
                    else:
                        args.append(len(a) if isinstance(a, str) else 16)
            hit = (tuple(results), tuple(args))
            self._sizes[pos] = hit
        return hit
