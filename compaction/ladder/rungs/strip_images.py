"""Image-stripping rung: images older than the newest N turns become a text placeholder.

``[image removed: 1280x800 PNG screenshot from browser_screenshot]``: the text
around an image stays; the pixels, which cost the most and are looked at once,
go (SPEC §5). Snapshot pages made by glyphfold are not touched here: the
snapshot rung re-renders them from source.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from glyphfold.compaction.history.images import (
    ImageInfo,
    decode_image_data,
    image_info,
    image_placeholder,
)
from glyphfold.compaction.history.messages import (
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.history.turns import is_turn_start, segment_turns
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome, glyphfold_meta
from glyphfold.compaction.ladder.rungs.elide import tool_names


@dataclass(frozen=True, slots=True)
class StripConfig:
    """Which images stay: those of the newest ``keep_recent_turns`` turns."""

    keep_recent_turns: int = 1  # the current turn's images are what the model is looking at

    def __post_init__(self) -> None:
        if self.keep_recent_turns < 0:
            msg = f"keep_recent_turns must be >= 0, got {self.keep_recent_turns}"
            raise ValueError(msg)


def describe_image(img: Image) -> ImageInfo:
    """Size and format of a canonical image (header bytes when inline)."""
    if img.data is not None:
        raw = decode_image_data(img.data)
        info = image_info(raw, nbytes=len(img.data) * 3 // 4, media_type=img.media_type)
        if info.width is None and img.width:
            info = dataclasses.replace(info, width=img.width, height=img.height)
        return info
    fmt = (img.media_type or "").rpartition("/")[2].upper() or "image"
    return ImageInfo(img.width, img.height, fmt, 0)


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

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        seg = segment_turns(history)
        keep = self.config.keep_recent_turns
        if not getattr(ctx.profile, "vision", True):
            keep = 0  # a provider without vision takes no image at all
        if keep == 0 or not seg.turns:
            limit = len(history.messages)
        elif len(seg.turns) <= keep:
            return RungOutcome(history, None)
        else:
            limit = seg.turns[-keep].start
        messages = list(history.messages)
        removed: list[Removed] = []
        names = tool_names(history)
        last_tool = "tool"
        for i in range(limit):
            m = messages[i]
            calls = [b for b in m.blocks if isinstance(b, ToolCall)]
            if not m.images or ctx.is_pinned(m) or glyphfold_meta(m).get("kind"):
                if calls:
                    last_tool = calls[-1].name
                continue
            origin = "user" if is_turn_start(m) else (last_tool if m.role != "system" else "system")
            blocks, details = _strip_blocks(m, names, origin)
            new = dataclasses.replace(m, blocks=tuple(blocks))
            messages[i] = new
            saved = ctx.count_message(m) - ctx.count_message(new)
            chars = sum(len(img.data or img.url or "") for img in m.images)
            removed.append(
                Removed(
                    i, "placeholder", chars, max(saved, 0), role=m.role, detail="; ".join(details)
                )
            )
            if calls:
                last_tool = calls[-1].name
        if not removed:
            return RungOutcome(history, None)
        out = history.replace_messages(messages)
        before, after = ctx.tokens_of(history), ctx.count(out)
        # with image_policy="spec" (SPEC §3.4) an old tool result's image costs nothing
        # in the estimate, so its placeholder can add a few tokens: say so
        note = "old tool-result images are not priced by the estimate" if after >= before else ""
        entry = LedgerEntry(self.name, before, after, tuple(removed), note=note)
        return RungOutcome(out, entry)


def _strip_blocks(m: Message, call_names: dict[str, str], origin: str) -> tuple[list, list[str]]:
    blocks: list = []
    details: list[str] = []
    for b in m.blocks:
        if isinstance(b, Image):
            text = _placeholder(b, origin)
            details.append(text)
            blocks.append(Text(text))
        elif isinstance(b, ToolResult) and any(isinstance(c, Image) for c in b.content):
            content = []
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
