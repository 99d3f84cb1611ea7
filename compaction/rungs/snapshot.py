"""Snapshot rung: verbatim head + imaged middle + verbatim tail (SPEC §5.2-5.4).

The middle is serialised into a transcript (:mod:`glyphfold.compaction.transcript`)
and rendered into glyph pages with ``glyphfold.render``. It travels as one
user-side message — a short reading guide, the pages oldest first, then the
factsheet — followed by a one-line assistant acknowledgement, so role
alternation and tool pairing stay valid in both wire formats.

Re-render from source (SPEC §5.3): the snapshot message keeps its source text
in ``meta["x_glyphfold"]`` and, in wire output, under the ``x_glyphfold`` key
(stripped by :func:`glyphfold.compaction.ladder.provider_messages`). A later
pass finds earlier snapshots in its middle, unfolds their source in front of
the newly discarded turns, and renders everything again from text; pages are
never made from pages.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.factsheet import FactsheetConfig, extract_facts, format_factsheet
from glyphfold.compaction.ledger import LedgerEntry, PageRecord, Removed
from glyphfold.compaction.messages import (
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.rungs.base import X_KEY, RungContext, RungOutcome, glyphfold_meta
from glyphfold.compaction.rungs.elide import tool_names
from glyphfold.compaction.rungs.strip_images import describe_image
from glyphfold.compaction.transcript import TranscriptBuilder, TranscriptConfig
from glyphfold.compaction.turns import segment_turns

SNAPSHOT_VERSION = 1
ACK_TEXT = "Understood: the earlier part of our conversation is in the snapshot pages above."
BRIDGE_TEXT = "(continuing)"

Renderer = Callable[..., Any]  # glyphfold.render_text-compatible


@dataclass(frozen=True, slots=True)
class SnapshotConfig:
    """Snapshot geometry and limits; ``None`` means "the profile's default"."""

    head_turns: int = 1  # the first turn states the task and its constraints (SPEC §1)
    min_tail_turns: int = 1  # the newest turn is where the work is; never imaged
    max_pages: int | None = None  # cap below the profile's images-per-request limit
    shape: str | None = None  # glyph shape name (glyphfold.render.shapes)
    font: str | None = None
    bits: int | None = None
    # Folding newlines into a glyph fills whole rows: code and logs have short
    # lines, and a half-empty page costs as much as a full one.
    reflow: bool = True
    transcript: TranscriptConfig = dataclasses.field(default_factory=TranscriptConfig)
    factsheet: FactsheetConfig = dataclasses.field(default_factory=FactsheetConfig)
    max_fit_rounds: int = 6  # bounded re-renders while dropping the oldest middle

    def __post_init__(self) -> None:
        if self.head_turns < 0:
            msg = f"head_turns must be >= 0, got {self.head_turns}"
            raise ValueError(msg)
        if self.min_tail_turns < 1:
            msg = f"min_tail_turns must be >= 1 (newest turn stays), got {self.min_tail_turns}"
            raise ValueError(msg)
        if self.max_pages is not None and self.max_pages < 1:
            msg = f"max_pages must be >= 1 or None, got {self.max_pages}"
            raise ValueError(msg)
        if self.max_fit_rounds < 1:
            msg = f"max_fit_rounds must be >= 1, got {self.max_fit_rounds}"
            raise ValueError(msg)


def _default_renderer() -> Renderer:
    from glyphfold.render.api import render_text

    return render_text


def is_snapshot(m: Message) -> bool:
    return glyphfold_meta(m).get("kind") == "snapshot"


def serialise(
    messages: list[tuple[int, Message]], names: dict[str, str], config: TranscriptConfig
) -> tuple[str, list[tuple[int, int, int]]]:
    """Transcript of ``(index, message)`` pairs; earlier snapshots unfold to their source."""
    tb = TranscriptBuilder(config=config)
    for i, m in messages:
        meta = glyphfold_meta(m)
        kind = meta.get("kind")
        if kind == "snapshot":
            tb.begin(i, "earlier snapshot")
            tb.raw(str(meta.get("source", "")))
            continue
        if kind == "summary":
            tb.begin(i, "earlier summary")
            tb.raw(m.text)
            continue
        if kind in ("snapshot_ack", "bridge"):
            continue
        role = m.role
        tb.begin(i, role)
        for b in m.blocks:
            if isinstance(b, Text):
                tb.text(b.text)
            elif isinstance(b, ToolCall):
                tb.call(b.name, b.arguments, call_id=b.id)
            elif isinstance(b, ToolResult):
                text = "\n".join(c.text for c in b.content if isinstance(c, Text))
                tb.result(text, name=names.get(b.call_id), call_id=b.call_id, is_error=b.is_error)
                for c in b.content:
                    if isinstance(c, Image):
                        tb.image(_image_desc(c))
            elif isinstance(b, Image):
                tb.image(_image_desc(b))
            else:
                tb.text(f"[{type(b).__name__.lower()} block]")
    text = tb.getvalue()
    return text, [(k, s, e) for k, s, e in tb.spans]


def _image_desc(img: Image) -> str:
    info = describe_image(img)
    size = f"{info.width}x{info.height} " if info.width else ""
    return f"{size}{info.format}"


def _msg_chars(m: Message) -> int:
    n = len(m.text)
    for c in m.tool_calls:
        a = c.arguments
        n += len(a) if isinstance(a, str) else len(json.dumps(a, default=str))
    meta = glyphfold_meta(m)
    if meta.get("kind") == "snapshot":
        n = len(str(meta.get("source", "")))
    return n


def _msg_id(m: Message) -> str | None:
    for b in m.blocks:
        if isinstance(b, ToolCall):
            return b.id
        if isinstance(b, ToolResult):
            return b.call_id
    rid = m.raw.get("id") if m.raw is not None else None
    return rid if isinstance(rid, str) else None


class Snapshot:
    """Image the middle of the history into glyph pages."""

    name = "snapshot"
    model_free = True

    def __init__(self, config: SnapshotConfig | None = None, *, renderer: Renderer | None = None):
        self.config = config or SnapshotConfig()
        self._renderer = renderer

    @property
    def renderer(self) -> Renderer:
        return self._renderer or _default_renderer()

    def _render(self, text: str, profile: Any) -> Any:
        c = self.config
        return self.renderer(
            text, profile=profile, shape=c.shape, font=c.font, bits=c.bits, reflow=c.reflow
        )

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        cfg = self.config
        profile = ctx.profile
        if not getattr(profile, "vision", False):
            return RungOutcome(history, None)
        seg = segment_turns(history)
        turns = seg.turns
        head_n = min(cfg.head_turns, len(turns))
        # the middle needs at least one turn between the head and the kept tail
        if len(turns) - head_n - cfg.min_tail_turns < 1:
            return RungOutcome(history, None)
        aligned = ctx.original is not None and len(ctx.original.messages) == len(history.messages)
        ends_src = ctx.original if aligned else history
        assert ends_src is not None
        head_end = turns[head_n - 1].end if head_n else seg.leading_end
        head = list(ends_src.messages[:head_end])
        mid_start = turns[head_n].start

        # the widest middle (tail = min_tail_turns): serialise once, every narrower
        # middle is a prefix of this transcript (turns are contiguous)
        widest_end = turns[len(turns) - cfg.min_tail_turns].start
        # pins stay verbatim: the middle ends before the first turn holding a pinned message
        for t in turns[head_n:]:
            if t.start >= widest_end:
                break
            if any(ctx.is_pinned(history.messages[i]) for i in range(t.start, t.end)):
                widest_end = t.start
                break
        if widest_end <= mid_start:
            return RungOutcome(history, None)
        middle_all = [(i, history.messages[i]) for i in range(mid_start, widest_end)]
        names = tool_names(history)
        source_all, spans = serialise(middle_all, names, cfg.transcript)
        span_end = {k: e for k, _, e in spans}

        def cut_for(mid_end: int) -> int:
            """Transcript prefix length covering messages [mid_start, mid_end)."""
            last = 0
            for i in range(mid_start, mid_end):
                last = span_end.get(i, last)
            return last

        head_tokens = sum(ctx.count_message(m) for m in head)
        # the system prompt outside messages (Anthropic) counts too
        base_tokens = ctx.count(history.replace_messages(())) if history.system else 0
        trial = self._render(source_all, profile)
        page_tokens = [p.image_tokens for p in trial.pages]
        page_starts = [p.source_span[0] for p in trial.pages]
        overhead = 300  # guide + factsheet + ack, in tokens (factsheet capped at ~1.5k chars/4)

        def snapshot_tokens(cut: int) -> int:
            return (
                sum(t for t, s in zip(page_tokens, page_starts, strict=True) if s < cut) + overhead
            )

        n_msgs = len(history.messages)
        suffix = [0] * (n_msgs + 1)  # suffix[i] = tokens of ends_src messages [i, n)
        for i in range(n_msgs - 1, -1, -1):
            suffix[i] = suffix[i + 1] + ctx.count_message(ends_src.messages[i])
        tail_k = cfg.min_tail_turns
        for k in range(cfg.min_tail_turns, len(turns) - head_n):
            mid_end = min(turns[len(turns) - k].start, widest_end)
            if mid_end <= mid_start:
                break
            total = base_tokens + head_tokens + suffix[mid_end] + snapshot_tokens(cut_for(mid_end))
            if total > ctx.target_tokens:
                break
            tail_k = k
        # the verbatim ends must leave room for the reduced ones' fallback: if even the
        # narrowest verbatim tail overflows, keep the cheaper (rung-reduced) tail instead
        tail_start = min(turns[len(turns) - tail_k].start, widest_end)
        tail_src = ends_src
        tail_msgs = list(tail_src.messages[tail_start:])
        tail_tokens = sum(ctx.count_message(m) for m in tail_msgs)
        if aligned and base_tokens + head_tokens + tail_tokens + overhead > ctx.target_tokens:
            tail_src = history
            tail_msgs = list(history.messages[tail_start:])
            tail_tokens = sum(ctx.count_message(m) for m in tail_msgs)
        if aligned and base_tokens + head_tokens + tail_tokens + overhead > ctx.target_tokens:
            head = list(history.messages[:head_end])
            head_tokens = sum(ctx.count_message(m) for m in head)

        source = source_all[: cut_for(tail_start)]
        middle_msgs = [(i, m) for i, m in middle_all if i < tail_start]

        # page budget: profile's images per request (minus images kept verbatim),
        # the caller's cap, the request byte limit, and the token budget
        kept_images = sum(len(m.images) for m in head + tail_msgs)
        cap = profile.max_images_per_request - kept_images
        if cfg.max_pages is not None:
            cap = min(cap, cfg.max_pages)
        room = ctx.target_tokens - base_tokens - head_tokens - tail_tokens - overhead
        avg_page = max(1, max(page_tokens, default=1))
        cap_tokens = room // avg_page
        # best effort when even one page does not fit: the trim rung follows
        cap = max(1, min(cap, cap_tokens)) if cap >= 1 else 0
        if cap == 0:
            return RungOutcome(history, None)

        result = trial if source == source_all else self._render(source, profile)
        rendered_source = source
        orig_start = 0  # offset in ``source`` of the oldest text still on the pages
        marker = ""
        other = len(json.dumps([m.raw for m in head + tail_msgs if m.raw is not None], default=str))
        for _ in range(cfg.max_fit_rounds):
            pages = result.pages
            nbytes = sum(len(p.png) for p in pages) * 4 // 3  # base64 on the wire
            byte_cap = (profile.max_request_bytes - other) * len(pages) // max(nbytes, 1)
            limit = max(1, min(cap, byte_cap))
            if len(pages) <= limit:
                break
            # drop the oldest part of the middle: everything before the first kept page
            cut = pages[len(pages) - limit].source_span[0]
            orig_start += max(0, cut - len(marker))
            marker = (
                f"[... {orig_start:,} chars of the oldest conversation were dropped to fit "
                f"the page budget ({limit} pages); see the ledger ...]\n"
            )
            rendered_source = marker + source[orig_start:]
            result = self._render(rendered_source, profile)
        pages = result.pages
        if len(pages) > cap:
            pages = pages[len(pages) - cap :]
        dropped_chars = orig_start

        facts = extract_facts(rendered_source, config=cfg.factsheet)
        factsheet = format_factsheet(facts)
        n_src = len(middle_msgs)
        guide = (
            f"[glyphfold snapshot] {n_src} earlier messages ({len(rendered_source):,} chars of "
            f"transcript) are shown as {len(pages)} page image(s) below, oldest first. Each "
            "page is dense text: [user]/[assistant] mark speakers, '-> call' a tool call, "
            "'<- result' its result. Read them as the conversation so far."
        )
        if factsheet:
            guide += " Exact identifiers from the pages follow the pages as text."
        blocks: list[Any] = [Text(guide)]
        for p in pages:
            blocks.append(
                Image(
                    media_type="image/png",
                    data=base64.b64encode(p.png).decode("ascii"),
                    width=p.width,
                    height=p.height,
                )
            )
        if factsheet:
            blocks.append(Text(factsheet))
        info = {
            "kind": "snapshot",
            "version": SNAPSHOT_VERSION,
            "source": rendered_source,
            "pages": [list(p.source_span) for p in pages],
            "messages": n_src,
            "profile": getattr(profile, "name", str(profile)),
        }
        snap = _new_message("user", blocks, info)
        ack = _new_message("assistant", [Text(ACK_TEXT)], {"kind": "snapshot_ack"})
        inserted = [snap, ack]
        if head and head[-1].role == "user":  # keep user/assistant alternation
            bridge = _new_message("assistant", [Text(BRIDGE_TEXT)], {"kind": "bridge"})
            inserted.insert(0, bridge)
        new_msgs = [*head, *inserted, *tail_msgs]
        out = history.replace_messages(new_msgs)

        removed = self._ledger_rows(middle_msgs, spans, dropped_chars, pages, ctx)
        restored = [
            i
            for i in [*range(head_end), *range(tail_start, len(history.messages))]
            if (head if i < head_end else tail_msgs)[i if i < head_end else i - tail_start]
            is not history.messages[i]
        ]
        entry = LedgerEntry(
            self.name,
            ctx.count(history),
            ctx.count(out),
            tuple(removed),
            tuple(
                PageRecord(p.width, p.height, p.image_tokens, len(p.png), tuple(p.source_span))
                for p in pages
            ),
            note=f"middle {n_src} msgs -> {len(pages)} page(s)",
            extra={
                "head_messages": head_end,
                "tail_messages": len(tail_msgs),
                "tail_turns": tail_k,
                "dropped_chars": dropped_chars,
                "source_chars": len(rendered_source),
                "facts": len(facts),
                "restored_verbatim": restored,
            },
        )
        return RungOutcome(out, entry, pages=tuple(pages))

    def _ledger_rows(
        self,
        middle: list[tuple[int, Message]],
        spans: list[tuple[int, int, int]],
        dropped_chars: int,
        pages: tuple[Any, ...],
        ctx: RungContext,
    ) -> list[Removed]:
        by_key = {k: (s, e) for k, s, e in spans}
        rows = []
        for i, m in middle:
            s, e = by_key.get(i, (0, 0))
            dest = "dropped" if e and e <= dropped_chars else "snapshot"
            detail = f"transcript chars {s}-{e}"
            if is_snapshot(m):
                detail += "; earlier snapshot re-rendered from its source"
            rows.append(
                Removed(
                    i,
                    dest,
                    _msg_chars(m),
                    ctx.count_message(m),
                    id=_msg_id(m),
                    role=m.role,
                    detail=detail,
                )
            )
        return rows


def _new_message(role: str, blocks: list[Any], info: dict[str, Any]) -> Message:
    raw = {"role": role, X_KEY: info}
    return Message(role, tuple(blocks), raw=raw, meta=MappingProxyType({X_KEY: info}))
