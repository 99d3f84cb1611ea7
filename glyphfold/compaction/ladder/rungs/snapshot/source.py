"""The text a snapshot images: one transcript piece per message, at a chosen treatment.

Each message of the imaged middle becomes one piece of transcript
(:class:`~glyphfold.compaction.ladder.transcript.TranscriptBuilder`); the pieces of a
run of steps, joined, are the text of one snapshot. Earlier snapshots unfold to
their source and earlier summaries to their text, so pages are always drawn from
text (SPEC §5.3). When the pages cannot hold everything, tool output is cut first
(SPEC §5.9): a piece can be built at a tighter *level* (smaller head+tail caps per
tool result and per argument), or *elided* (its tool results and long arguments
become stubs); narrative is only ever dropped whole or from its start, by the
planner. Pieces are cached per (message, level): the planner tries many variants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from glyphfold.compaction.history.markers import (
    BREADCRUMB,
    BRIDGE,
    SNAPSHOT,
    SNAPSHOT_ACK,
    SUMMARY,
    glyphfold_meta,
    marker_kind,
)
from glyphfold.compaction.history.model import Image, Message, Text, ToolCall, ToolResult
from glyphfold.compaction.history.provider_blocks import is_thinking_block
from glyphfold.compaction.ladder.rungs.common import result_text, stub_arguments
from glyphfold.compaction.ladder.rungs.notable import elision_stub
from glyphfold.compaction.ladder.rungs.strip_images import describe_image
from glyphfold.compaction.ladder.transcript import TranscriptBuilder, TranscriptConfig

__all__ = ["LEVELS", "Source", "dropped_marker", "serialise"]

LEVELS = 5  # tighter cap levels after the configured one; level LEVELS + 1 = elided
_MIN_RESULT_CAP = 200
_MIN_ARGS_CAP = 80
_ELIDED_ARG_CHARS = 120  # in elided pieces, argument values longer than this become stubs


def level_config(base: TranscriptConfig, level: int) -> TranscriptConfig:
    """The transcript caps of ``level``: each level halves the per-result and argument caps."""
    if level <= 0:
        return base
    return dataclasses.replace(
        base,
        max_result_chars=max(_MIN_RESULT_CAP, base.max_result_chars >> level),
        max_args_chars=max(_MIN_ARGS_CAP, base.max_args_chars >> level),
    )


def _image_desc(img: Image) -> str:
    info = describe_image(img)
    size = f"{info.width}x{info.height} " if info.width else ""
    return f"{size}{info.format}"


def _other_block(tb: TranscriptBuilder, b: Any) -> None:
    if is_thinking_block(b):
        raw = b.raw
        text = raw.get("thinking") if isinstance(raw.get("thinking"), str) else ""
        tb.text(f"[{raw.get('type')}: {len(text):,} chars]")
        return
    raw = getattr(b, "raw", None)
    kind = raw.get("type") if isinstance(raw, dict) else None
    tb.text(f"[{kind or type(b).__name__.lower()} block]")


def _blocks(tb: TranscriptBuilder, m: Message, names: dict[str, str], elided: bool) -> None:
    for b in m.blocks:
        if isinstance(b, Text):
            tb.text(b.text)
        elif isinstance(b, ToolCall):
            call = stub_arguments(b, min_chars=_ELIDED_ARG_CHARS) if elided else None
            tb.call(b.name, (call or b).arguments, call_id=b.id)
        elif isinstance(b, ToolResult):
            name = names.get(b.call_id)
            text = result_text(b)
            if elided and text:
                text = elision_stub(text, tool_name=name)
            tb.result(text, name=name, call_id=b.call_id, is_error=b.is_error)
            for c in b.content:
                if isinstance(c, Image):
                    tb.image(_image_desc(c))
        elif isinstance(b, Image):
            tb.image(_image_desc(b))
        else:
            _other_block(tb, b)


def piece(
    m: Message, names: dict[str, str], config: TranscriptConfig, *, elided: bool = False
) -> str:
    """The transcript of one message ("" for bridges and acknowledgements)."""
    kind = marker_kind(m)
    if kind in (SNAPSHOT_ACK, BRIDGE) or (kind == BREADCRUMB and m.role == "assistant"):
        return ""
    tb = TranscriptBuilder(config=config)
    if kind == SNAPSHOT:
        tb.begin(0, "earlier snapshot")
        tb.raw(str(glyphfold_meta(m).get("source", "")))
    elif kind == SUMMARY:  # a model's words: content, not transcript
        tb.begin(0, "earlier summary")
        tb.text(m.text)
    else:
        # an Anthropic user message that only answers tool calls reads as tool output
        only_results = bool(m.blocks) and all(isinstance(b, ToolResult) for b in m.blocks)
        tb.begin(0, "tool" if only_results else m.role)
        _blocks(tb, m, names, elided)
    return tb.getvalue()


def has_tool_output(m: Message) -> bool:
    """True when a tighter level or elision can shorten the message's piece."""
    return marker_kind(m) is None and any(isinstance(b, (ToolCall, ToolResult)) for b in m.blocks)


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
        self._cache: dict[tuple[int, int], str] = {} if shared is None else shared
        self.tool_output = [has_tool_output(m) for m in self.messages]

    def piece(self, pos: int, level: int = 0) -> str:
        """Piece of message ``pos`` at ``level`` (LEVELS + 1: elided)."""
        if not self.tool_output[pos]:
            level = 0
        key = (id(self.messages[pos]), level)
        text = self._cache.get(key)
        if text is None:
            elided = level > LEVELS
            cfg = level_config(self.config, min(level, LEVELS))
            text = piece(self.messages[pos], self.names, cfg, elided=elided)
            self._cache[key] = text
        return text


def join(pieces: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """Pieces joined as one builder would write them; the (start, end) span of each."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    n = 0
    for p in pieces:
        if not p:
            spans.append((n, n))
            continue
        if parts:
            parts.append("\n")
            n += 1
        spans.append((n, n + len(p)))
        parts.append(p)
        n += len(p)
    return "".join(parts), spans


def serialise(
    messages: list[tuple[int, Message]], names: dict[str, str], config: TranscriptConfig
) -> tuple[str, list[tuple[int, int, int]]]:
    """Transcript of ``(index, message)`` pairs and each message's (index, start, end) span."""
    text, spans = join([piece(m, names, config) for _, m in messages])
    return text, [(i, s, e) for (i, _), (s, e) in zip(messages, spans, strict=True) if e > s]
