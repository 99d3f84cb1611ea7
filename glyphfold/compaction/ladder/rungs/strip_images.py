"""Image-stripping rung: images in the middle become a text placeholder (SPEC §5, §5.5).

``[image removed: 1280x800 PNG screenshot from browser_screenshot]``: the text
around an image stays; the pixels, which cost the most and are looked at once,
go. Outside the head and the tail, in any turn, oldest first and only as much as
the target needs (SPEC §5.6); a rung that cannot save ``min_saving_tokens`` does
not act. A profile without vision takes no image at all: then every image goes,
head and tail included, whatever the budget. Snapshot pages made by glyphfold are
not touched here: the snapshot rung re-renders them from source.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from glyphfold.compaction.history.images import describe_image, image_placeholder
from glyphfold.compaction.history.markers import is_marker
from glyphfold.compaction.history.model import (
    Block,
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.history.turns import is_turn_start
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome
from glyphfold.compaction.ladder.rungs.common import kept_steps, regions, tool_names


@dataclass(frozen=True, slots=True)
class StripConfig:
    """Options of the image rung. Which images stay is the tail's business
    (``LadderConfig.tail_tokens``); the rung has no option of its own today."""


def _placeholder(img: Image, origin: str) -> str:
    info = describe_image(img)
    kind = "screenshot" if "screenshot" in origin.lower() else "image"
    text = image_placeholder(info, origin=origin, kind=kind)
    if img.url is not None:
        text = text[:-1] + f" at {img.url}]"
    return text


class StripImages:
    """Replace old images with text placeholders."""

    name = "strip"
    model_free = True

    def __init__(self, config: StripConfig | None = None) -> None:
        self.config = config or StripConfig()

    def _candidates(self, history: History, ctx: RungContext) -> tuple[list[int], bool]:
        """Indices of the messages whose images may go, oldest first; True: all must go."""
        msgs = history.messages
        if not getattr(ctx.profile, "vision", True):  # a provider without vision
            return [i for i, m in enumerate(msgs) if m.images and not is_marker(m)], True
        reg = regions(history, ctx)
        # the kept steps only when there is an image to keep (a pass over the middle)
        with_images = [i for i in reg.middle if msgs[i].has_images]
        if not with_images:
            return [], False
        kept = kept_steps(history, reg, ctx)
        skip = {i for s in reg.middle_steps if s.start in kept for i in s.indices}
        return [
            i
            for i in with_images
            if i not in skip and not is_marker(msgs[i]) and not ctx.is_pinned(msgs[i])
        ], False

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        idx, must = self._candidates(history, ctx)
        if not idx:
            return RungOutcome(history, None)
        messages = list(history.messages)
        names = tool_names(history)
        origins = _origins(history)
        changes: list[tuple[int, Message, Removed]] = []
        for i in idx:
            m = messages[i]
            blocks, details = _strip_blocks(m, names, origins[i])
            new = dataclasses.replace(m, blocks=tuple(blocks))
            saved = max(ctx.count_message(m) - ctx.count_message(new), 0)
            chars = sum(len(img.data or img.url or "") for img in m.images)
            row = Removed(i, "placeholder", chars, saved, role=m.role, detail="; ".join(details))
            changes.append((i, new, row))
        need = ctx.need(history)
        total = sum(r.tokens for _, _, r in changes)
        if not must and (need <= 0 or total < ctx.min_saving_tokens):
            return RungOutcome(history, None)
        removed: list[Removed] = []
        saved = 0
        for i, new, row in changes:  # oldest first, and no further than the target needs
            if not must and saved >= need:
                break
            messages[i] = new
            removed.append(row)
            saved += row.tokens
        out = history.replace_messages(messages)
        before, after = ctx.tokens_of(history), ctx.count(out)
        # with image_policy="spec" (SPEC §3.4) an old tool result's image costs nothing
        # in the estimate, so its placeholder can add a few tokens: say so
        note = "old tool-result images are not priced by the estimate" if after >= before else ""
        return RungOutcome(out, LedgerEntry(self.name, before, after, tuple(removed), note=note))


def _origins(history: History) -> list[str]:
    """Per message: who an image in it came from (user, the last tool called, system)."""
    out: list[str] = []
    last_tool = "tool"
    for m in history.messages:
        out.append("user" if is_turn_start(m) else (last_tool if m.role != "system" else "system"))
        calls = [b for b in m.blocks if isinstance(b, ToolCall)]
        if calls:
            last_tool = calls[-1].name
    return out


def _strip_blocks(
    m: Message, call_names: dict[str, str], origin: str
) -> tuple[list[Block], list[str]]:
    blocks: list[Block] = []
    details: list[str] = []
    for b in m.blocks:
        if isinstance(b, Image):
            text = _placeholder(b, origin)
            details.append(text)
            blocks.append(Text(text))
        elif isinstance(b, ToolResult) and any(isinstance(c, Image) for c in b.content):
            content: list[Any] = []
            for c in b.content:
                if isinstance(c, Image):
                    text = _placeholder(c, call_names.get(b.call_id, origin))
                    details.append(text)
                    content.append(Text(text))
                else:
                    content.append(c)
            blocks.append(dataclasses.replace(b, content=tuple(content)))
        else:
            blocks.append(b)
    return blocks, details
