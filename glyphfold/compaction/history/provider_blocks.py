"""Content the provider manages itself: thinking blocks and server-side compaction blocks.

Both arrive as :class:`~glyphfold.compaction.history.model.Unknown` blocks (carried
byte for byte). Two provider rules change what a history costs and what may be
touched:

- Anthropic strips the thinking blocks of earlier turns from the context (they are
  not counted); the thinking of the current tool cycle, with its signatures, must be
  sent back unchanged.
- Anthropic's server-side compaction puts a ``compaction`` block in an assistant
  message; on later requests the API drops every block before it. Such a block is
  a barrier: what precedes it costs nothing, and glyphfold never images or moves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from glyphfold.compaction.history.model import Block, Message, Unknown

__all__ = [
    "COMPACTION_BLOCK_TYPES",
    "THINKING_BLOCK_TYPES",
    "compaction_barrier",
    "is_compaction_block",
    "is_thinking_block",
    "thinking_chars",
    "without_thinking",
]

THINKING_BLOCK_TYPES = frozenset({"thinking", "redacted_thinking"})
COMPACTION_BLOCK_TYPES = frozenset({"compaction"})


def _type(b: Block) -> str | None:
    if type(b) is not Unknown or not isinstance(b.raw, Mapping):
        return None
    t = b.raw.get("type")
    return t if isinstance(t, str) else None


def is_thinking_block(b: Block) -> bool:
    """True for an Anthropic ``thinking`` / ``redacted_thinking`` block."""
    return _type(b) in THINKING_BLOCK_TYPES


def is_compaction_block(b: Block) -> bool:
    """True for an Anthropic server-side ``compaction`` block."""
    return _type(b) in COMPACTION_BLOCK_TYPES


def thinking_chars(m: Message) -> int:
    """Characters of the thinking blocks of ``m`` (text and signature/data)."""
    n = 0
    for b in m.blocks:
        raw = b.raw if is_thinking_block(b) else None
        if isinstance(raw, Mapping):
            n += sum(len(v) for v in raw.values() if isinstance(v, str))
    return n


def without_thinking(blocks: Sequence[Block]) -> tuple[Block, ...]:
    """``blocks`` minus the thinking blocks."""
    return tuple(b for b in blocks if not is_thinking_block(b))


def compaction_barrier(messages: Sequence[Message]) -> tuple[int, int] | None:
    """(message index, block index) of the newest compaction block, or None."""
    for i in range(len(messages) - 1, -1, -1):
        blocks = messages[i].blocks
        for j in range(len(blocks) - 1, -1, -1):
            if is_compaction_block(blocks[j]):
                return i, j
    return None
