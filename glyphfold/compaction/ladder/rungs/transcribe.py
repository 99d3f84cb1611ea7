"""A canonical message as transcript text: the pieces snapshots image and summaries read.

:func:`piece` writes one message with a
:class:`~glyphfold.compaction.ladder.transcript.TranscriptBuilder` (role marks, calls,
results capped per result, image placeholders; an earlier snapshot unfolds to its source
text, SPEC §5.3, an earlier summary to its words); :func:`join` joins pieces the way one
builder would, with the span of each; :func:`serialise` does both for a run of messages.
Shared by the snapshot rung, the summary rung and the legibility measurements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from glyphfold.compaction.history.images import describe_image
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
from glyphfold.compaction.ladder.rungs.notable import elision_stub, is_stub
from glyphfold.compaction.ladder.transcript import (
    TranscriptBuilder,
    TranscriptConfig,
    shorten_results,
)

__all__ = ["join", "piece", "serialise"]

_ELIDED_ARG_CHARS = 120  # in elided pieces, argument values longer than this become stubs


def _body_stub(body: str) -> str:
    """A result body of an earlier snapshot's source as a one-line stub (its size, hash)."""
    return body if is_stub(body) else elision_stub(body, tool_name="result")


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
            if elided and text and not is_stub(text):  # a stub keeps the original's size, hash
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
        source = str(glyphfold_meta(m).get("source", ""))
        if elided:  # an earlier snapshot is the oldest text: shortened first (SPEC §5.9)
            source = shorten_results(source, None, stub=_body_stub)
        else:
            source = shorten_results(
                source, config.max_result_chars, head_fraction=config.head_fraction
            )
        tb.raw(source)
    elif kind == SUMMARY:  # a model's words: content, not transcript
        tb.begin(0, "earlier summary")
        tb.text(m.text)
    else:
        # an Anthropic user message that only answers tool calls reads as tool output
        only_results = bool(m.blocks) and all(isinstance(b, ToolResult) for b in m.blocks)
        tb.begin(0, "tool" if only_results else m.role)
        _blocks(tb, m, names, elided)
    return tb.getvalue()


def join(pieces: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """Pieces joined as one builder would write them; the (start, end) span of each.

    The non-empty pieces joined by newlines (one C join: a run of 10^5 pieces), the
    spans counted alongside (an empty piece takes no room: an empty span where it is)."""
    spans: list[tuple[int, int]] = []
    append = spans.append
    n = -1  # the end of the text so far, counting the newline before the next piece
    for p in pieces:
        k = len(p)
        if k:
            a = n + 1
            n = a + k
            append((a, n))
        else:
            end = n if n > 0 else 0
            append((end, end))
    return "\n".join([p for p in pieces if p]), spans


def serialise(
    messages: list[tuple[int, Message]], names: dict[str, str], config: TranscriptConfig
) -> tuple[str, list[tuple[int, int, int]]]:
    """Transcript of ``(index, message)`` pairs and each message's (index, start, end) span."""
    text, spans = join([piece(m, names, config) for _, m in messages])
    return text, [(i, s, e) for (i, _), (s, e) in zip(messages, spans, strict=True) if e > s]
