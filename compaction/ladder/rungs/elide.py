"""Elision rung: old tool results with no notable event become a one-line stub (SPEC §5).

The call stays (so pairing stays valid and the model sees what it asked for);
its result becomes ``[elided: read_file, 48,213 chars, sha1 3f2a9c]``. Images
inside a result are left to the image-stripping rung. The rules for what is
notable live in :mod:`glyphfold.compaction.ladder.rungs.notable`.
"""

from __future__ import annotations

import dataclasses

from glyphfold.compaction.history.messages import History, Image, Text, ToolCall, ToolResult
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome
from glyphfold.compaction.ladder.rungs.notable import (
    ElideConfig,
    elision_stub,
    is_stub,
    notable_reason,
)


def tool_names(history: History) -> dict[str, str]:
    """Map each tool call id to its tool name."""
    out: dict[str, str] = {}
    for m in history.messages:
        for b in m.blocks:
            if isinstance(b, ToolCall):
                out[b.id] = b.name
    return out


def result_text(tr: ToolResult) -> str:
    return "\n".join(c.text for c in tr.content if isinstance(c, Text))


class Elide:
    """Replace old, unremarkable tool results with stubs."""

    name = "elide"
    model_free = True

    def __init__(self, config: ElideConfig | None = None) -> None:
        self.config = config or ElideConfig()

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        cfg = self.config
        names = tool_names(history)
        located = [
            (i, j)
            for i, m in enumerate(history.messages)
            for j, b in enumerate(m.blocks)
            if isinstance(b, ToolResult)
        ]
        total = len(located)
        new_blocks: dict[int, list] = {}
        for rank_from_oldest, (i, j) in enumerate(located):
            m = history.messages[i]
            tr = m.blocks[j]
            assert isinstance(tr, ToolResult)
            text = result_text(tr)
            if not text or is_stub(text):
                continue
            name = names.get(tr.call_id)
            why = notable_reason(
                text,
                tool_name=name,
                is_error=tr.is_error,
                newest_rank=total - 1 - rank_from_oldest,
                pinned=ctx.is_pinned(m),
                config=cfg,
            )
            if why is not None:
                continue
            stub = elision_stub(text, tool_name=name, hex_digits=cfg.digest_hex)
            images = tuple(c for c in tr.content if isinstance(c, Image))
            content = (Text(stub), *images)
            blocks = new_blocks.setdefault(i, list(m.blocks))
            blocks[j] = dataclasses.replace(tr, content=content)
        if not new_blocks:
            return RungOutcome(history, None)
        messages = list(history.messages)
        removed: list[Removed] = []
        for i, blocks in sorted(new_blocks.items()):
            old = messages[i]
            new = dataclasses.replace(old, blocks=tuple(blocks))
            messages[i] = new
            saved = ctx.count_message(old) - ctx.count_message(new)
            for b_old, b_new in zip(old.blocks, new.blocks, strict=True):
                if b_old is not b_new and isinstance(b_old, ToolResult):
                    assert isinstance(b_new, ToolResult)
                    removed.append(
                        Removed(
                            i,
                            "stub",
                            len(result_text(b_old)),
                            max(saved, 0),
                            id=b_old.call_id,
                            role=old.role,
                            detail=result_text(b_new),
                        )
                    )
                    saved = 0  # one message's saving is booked on its first result
        out = history.replace_messages(messages)
        entry = LedgerEntry(self.name, ctx.tokens_of(history), ctx.count(out), tuple(removed))
        return RungOutcome(out, entry)
