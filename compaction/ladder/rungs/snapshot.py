"""Snapshot rung: verbatim head + imaged middle + verbatim tail (SPEC §5.2-5.4).

The middle is serialised into a transcript (:mod:`glyphfold.compaction.ladder.transcript`)
and rendered into glyph pages with ``glyphfold.render``. It travels as one
user-side message — a short reading guide, the pages oldest first, then the
factsheet — followed by a one-line assistant acknowledgement, so role
alternation and tool pairing stay valid in both wire formats.

Re-render from source (SPEC §5.3): the snapshot message keeps its source text
in ``meta["x_glyphfold"]`` and, in wire output, under the ``x_glyphfold`` key
(stripped by :func:`glyphfold.compaction.ladder.api.provider_messages`). A later
pass finds earlier snapshots in its middle, unfolds their source in front of
the newly discarded turns, and renders everything again from text; pages are
never made from pages.
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.messages import (
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.history.turns import segment_turns
from glyphfold.compaction.ladder.factsheet import FactsheetConfig, extract_facts, format_factsheet
from glyphfold.compaction.ladder.ledger import LedgerEntry, PageRecord, Removed
from glyphfold.compaction.ladder.rungs.base import X_KEY, RungContext, RungOutcome, glyphfold_meta
from glyphfold.compaction.ladder.rungs.elide import tool_names
from glyphfold.compaction.ladder.rungs.strip_images import describe_image
from glyphfold.compaction.ladder.transcript import TranscriptBuilder, TranscriptConfig

from glyphfold.errors import EncodeError, LayoutError

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
        # an Anthropic user message that only answers tool calls reads as tool output
        only_results = bool(m.blocks) and all(isinstance(b, ToolResult) for b in m.blocks)
        tb.begin(i, "tool" if only_results else m.role)
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
        try:
            return self._apply(history, ctx)
        except (EncodeError, LayoutError) as exc:
            # a page over the provider's byte limit (never at the default 1-bit pages),
            # or a page geometry the profile would downscale: documented fallback, the
            # rung steps aside and the next one runs
            before = ctx.tokens_of(history)
            entry = LedgerEntry(self.name, before, before, note=f"skipped: {exc}")
            return RungOutcome(history, entry)

    def _apply(self, history: History, ctx: RungContext) -> RungOutcome:
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
        msgs = history.messages
        aligned = ctx.original is not None and len(ctx.original.messages) == len(msgs)
        ends_src = ctx.original if aligned else history
        assert ends_src is not None
        head_end = turns[head_n - 1].end if head_n else seg.leading_end
        head = list(ends_src.messages[:head_end])
        mid_start = turns[head_n].start
        widest_end = turns[len(turns) - cfg.min_tail_turns].start
        # pinned turns stay verbatim where they are; the snapshot images the runs between
        pinned_turn = {
            t.start for t in turns if any(ctx.is_pinned(msgs[i]) for i in range(t.start, t.end))
        }
        mid_turns = [t for t in turns[head_n:] if t.start < widest_end]
        if all(t.start in pinned_turn for t in mid_turns):
            return RungOutcome(history, None)
        names = tool_names(history)
        # serialise the widest imaged middle once: every narrower middle is a prefix
        middle_all = [
            (i, msgs[i])
            for t in mid_turns
            if t.start not in pinned_turn
            for i in range(t.start, t.end)
        ]
        source_all, spans = serialise(middle_all, names, cfg.transcript)
        span_end = {k: e for k, _, e in spans}
        page_starts, page_tokens, page_bytes = self._plan(source_all, profile)
        # per snapshot: guide + ack (~120 tokens) and the factsheet at its cap, so a
        # factsheet can never push the result over the budget it was planned for
        overhead = 120 + (cfg.factsheet.max_chars + 160) // 4

        costs = [ctx.count_message(m) for m in ends_src.messages]
        suffix = [0] * (len(msgs) + 1)  # suffix[i] = tokens of ends_src messages [i, n)
        for i in range(len(msgs) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + costs[i]
        head_tokens = sum(costs[:head_end])
        base_tokens = ctx.count(history.replace_messages(())) if history.system else 0

        def planned(mid_end: int) -> int:
            cut = 0
            pinned_tokens = 0
            runs = 0
            prev_pinned = True
            for t in mid_turns:
                if t.start >= mid_end:
                    break
                if t.start in pinned_turn:
                    pinned_tokens += sum(costs[t.start : t.end])
                    prev_pinned = True
                    continue
                runs += prev_pinned
                prev_pinned = False
                for i in range(t.start, t.end):  # acks and bridges have no span
                    cut = span_end.get(i, cut)
            pages = sum(tk for tk, st in zip(page_tokens, page_starts, strict=True) if st < cut)
            return (
                base_tokens
                + head_tokens
                + suffix[mid_end]
                + pinned_tokens
                + pages
                + (overhead * max(runs, 1))
            )

        tail_k = cfg.min_tail_turns
        for k in range(cfg.min_tail_turns + 1, len(turns) - head_n):
            mid_end = turns[len(turns) - k].start
            if mid_end <= mid_start or planned(mid_end) > ctx.target_tokens:
                break
            tail_k = k
        tail_start = turns[len(turns) - tail_k].start
        tail_msgs = list(ends_src.messages[tail_start:])
        tail_tokens = suffix[tail_start]
        # if even the narrowest verbatim ends overflow, keep the rung-reduced ones
        if aligned and base_tokens + head_tokens + tail_tokens + overhead > ctx.target_tokens:
            tail_msgs = list(msgs[tail_start:])
            tail_tokens = sum(ctx.count_message(m) for m in tail_msgs)
            head = list(msgs[:head_end])
            head_tokens = sum(ctx.count_message(m) for m in head)

        # the middle as runs of unpinned turns ("segments") and pinned turns kept verbatim
        parts: list[tuple[str, list[tuple[int, Message]]]] = []
        for t in mid_turns:
            if t.start >= tail_start:
                break
            kind = "pinned" if t.start in pinned_turn else "segment"
            block = [(i, msgs[i]) for i in range(t.start, t.end)]
            if parts and parts[-1][0] == kind:
                parts[-1][1].extend(block)
            else:
                parts.append((kind, block))
        segments = [p for k, p in parts if k == "segment"]
        pinned_tokens = sum(costs[i] for k, p in parts if k == "pinned" for i, _ in p)

        # page budget: images per request (minus images kept verbatim), the caller's
        # cap, the token budget and the request byte limit
        kept = head + tail_msgs + [m for k, p in parts if k == "pinned" for _, m in p]
        cap = profile.max_images_per_request - sum(len(m.images) for m in kept)
        if cfg.max_pages is not None:
            cap = min(cap, cfg.max_pages)
        if cap < 1:
            return RungOutcome(history, None)
        room = (
            ctx.target_tokens
            - base_tokens
            - head_tokens
            - tail_tokens
            - pinned_tokens
            - overhead * len(segments)
        )
        cap = min(cap, room // max(1, max(page_tokens, default=1)))
        page_b64 = page_bytes * 4 // 3 + 64
        # request bytes of what stays: text plus inline images (base64), a close bound
        other = sum(len(m.text) * 2 + sum(len(i.data or "") for i in m.images) for m in kept)
        cap = min(cap, (profile.max_request_bytes - other) // page_b64)
        cap = max(1, cap)  # best effort: one page even over budget; the trim rung follows

        rendered = [self._serialise_segment(p, names) for p in segments]
        # the factsheet is pure Python and the render kernels release the GIL: extract
        # the facts on a worker thread while the pages are drawn (same result either way)
        pool = _facts_pool()
        fact_jobs = [pool.submit(extract_facts, src, config=cfg.factsheet) for src, _ in rendered]
        results = [self._render(src, profile) for src, _ in rendered]
        # newest segments first: recent context is worth more than old
        alloc = [0] * len(segments)
        left = cap
        for s_i in range(len(segments) - 1, -1, -1):
            alloc[s_i] = min(len(results[s_i].pages), left)
            left -= alloc[s_i]

        new_msgs: list[Message] = list(head)
        all_pages: list[Any] = []
        removed: list[Removed] = []
        facts_n = 0
        dropped_total = 0
        src_chars = 0
        s_i = 0
        for kind, block in parts:
            if kind == "pinned":
                new_msgs.extend(ends_src.messages[i] for i, _ in block)
                continue
            source, seg_spans = rendered[s_i]
            text, pages, dropped = self._fit(source, results[s_i], alloc[s_i], profile)
            job = fact_jobs[s_i]
            s_i += 1
            if text == source:
                facts = job.result()
            else:  # the oldest part was dropped: facts of what is actually on the pages
                job.cancel()
                facts = extract_facts(text, config=cfg.factsheet)
            facts_n += len(facts)
            dropped_total += dropped
            src_chars += len(text)
            if new_msgs and new_msgs[-1].role == "user":  # keep user/assistant alternation
                new_msgs.append(_new_message("assistant", [Text(BRIDGE_TEXT)], {"kind": "bridge"}))
            new_msgs.extend(
                self._snapshot_pair(text, pages, facts, len(block), profile, history.format)
            )
            shift = len(text) - len(source)  # source offset -> offset in the rendered text
            on_pages = [(p.source_span[0] - shift, p.source_span[1] - shift) for p in pages]
            removed.extend(
                self._ledger_rows(block, seg_spans, dropped, ctx, on_pages, len(all_pages))
            )
            all_pages.extend(pages)
        if new_msgs and tail_msgs and new_msgs[-1].role == tail_msgs[0].role == "user":
            new_msgs.append(_new_message("assistant", [Text(BRIDGE_TEXT)], {"kind": "bridge"}))
        new_msgs.extend(tail_msgs)
        out = history.replace_messages(new_msgs)

        restored = [i for i in range(head_end) if head[i] is not msgs[i]] + [
            tail_start + j for j, m in enumerate(tail_msgs) if m is not msgs[tail_start + j]
        ]
        n_src = sum(len(p) for p in segments)
        before, after = ctx.tokens_of(history), ctx.count(out)
        if after >= before:  # pages of a short middle can cost more than its text
            note = f"skipped: the pages would cost {after - before:,} tokens more than the text"
            return RungOutcome(history, LedgerEntry(self.name, before, before, note=note))
        entry = LedgerEntry(
            self.name,
            before,
            after,
            tuple(removed),
            tuple(
                PageRecord(p.width, p.height, p.image_tokens, len(p.png), tuple(p.source_span))
                for p in all_pages
            ),
            note=f"middle {n_src} msgs -> {len(all_pages)} page(s)",
            extra={
                "head_messages": head_end,
                "tail_messages": len(tail_msgs),
                "tail_turns": tail_k,
                "segments": len(segments),
                "pinned_turns_kept": sum(
                    1 for t in mid_turns if t.start in pinned_turn and t.start < tail_start
                ),
                "dropped_chars": dropped_total,
                "source_chars": src_chars,
                "facts": facts_n,
                "restored_verbatim": restored,
            },
        )
        return RungOutcome(out, entry, pages=tuple(all_pages))

    def _plan(self, text: str, profile: Any) -> tuple[list[int], list[int], int]:
        """Page starts and image tokens of ``text`` from the layout alone (no pixels).

        Planning needs page counts for many candidate tails; laying out is a
        fraction of rendering, and the final render (with whatever renderer) is
        what gets checked against the limits. Returns (starts, tokens, bytes per page
        upper bound).
        """
        from glyphfold.render.api import plan_text

        c = self.config
        plan = plan_text(
            text, profile=profile, shape=c.shape, font=c.font, bits=c.bits, reflow=c.reflow
        )
        return list(plan.page_starts), list(plan.page_tokens), plan.max_png_bytes

    def _serialise_segment(
        self, block: list[tuple[int, Message]], names: dict[str, str]
    ) -> tuple[str, list[tuple[int, int, int]]]:
        return serialise(block, names, self.config.transcript)

    def _fit(self, source: str, result: Any, limit: int, profile: Any) -> tuple[str, tuple, int]:
        """Drop the oldest source until the pages fit ``limit``: (text, pages, dropped chars)."""
        pages = result.pages
        if len(pages) <= limit:
            return source, pages, 0
        if limit == 0:
            marker = (
                f"[... all {len(source):,} chars of this part were dropped to fit the page "
                "budget; see the ledger ...]"
            )
            return marker, (), len(source)
        text = source
        orig_start = 0  # offset in ``source`` of the oldest text still on the pages
        marker = ""
        for _ in range(self.config.max_fit_rounds):
            if len(pages) <= limit:
                break
            cut = pages[len(pages) - limit].source_span[0]
            orig_start += max(0, cut - len(marker))
            marker = (
                f"[... {orig_start:,} chars of the oldest conversation were dropped to fit "
                f"the page budget ({limit} pages); see the ledger ...]\n"
            )
            text = marker + source[orig_start:]
            pages = self._render(text, profile).pages
        if len(pages) > limit:  # did not converge: keep the newest pages, say so
            last = pages[len(pages) - limit].source_span[0]
            orig_start += max(0, last - len(marker))
            marker = (
                f"[... {orig_start:,} chars of the oldest conversation were dropped to fit "
                f"the page budget ({limit} pages); see the ledger ...]\n"
            )
            text = marker + source[orig_start:]
            pages = self._render(text, profile).pages[:limit]
        return text, pages, orig_start

    def _snapshot_pair(
        self, text: str, pages: tuple, facts: list, n_msgs: int, profile: Any, fmt: str
    ) -> list[Message]:
        factsheet = format_factsheet(facts)
        guide = (
            f"[glyphfold snapshot] {n_msgs} earlier messages ({len(text):,} chars of "
            f"transcript) are shown as {len(pages)} page image(s) below, oldest first. Each "
            "page is dense text: [user]/[assistant] mark speakers, '-> call' a tool call, "
            "'<- result' its result. Read them as the conversation so far."
        )
        if factsheet:
            guide += " Exact identifiers from the pages follow the pages as text."
        if not pages:
            guide += " " + text
        blocks: list[Any] = [Text(guide)]
        raw = _image_raw(profile, fmt)
        for p in pages:
            blocks.append(
                Image(
                    media_type="image/png",
                    data=base64.b64encode(p.png).decode("ascii"),
                    width=p.width,
                    height=p.height,
                    raw=raw,
                )
            )
        if factsheet:
            blocks.append(Text(factsheet))
        info = {
            "kind": "snapshot",
            "version": SNAPSHOT_VERSION,
            "source": text,
            "pages": [list(p.source_span) for p in pages],
            "messages": n_msgs,
            "profile": getattr(profile, "name", str(profile)),
        }
        snap = _new_message("user", blocks, info)
        ack = _new_message("assistant", [Text(ACK_TEXT)], {"kind": "snapshot_ack"})
        return [snap, ack]

    def _ledger_rows(
        self,
        middle: list[tuple[int, Message]],
        spans: list[tuple[int, int, int]],
        dropped_chars: int,
        ctx: RungContext,
        page_spans: list[tuple[int, int]],
        first_page: int,
    ) -> list[Removed]:
        """One row per imaged message: the pages its transcript text went to."""
        by_key = {k: (s, e) for k, s, e in spans}
        rows = []
        for i, m in middle:
            s, e = by_key.get(i, (0, 0))
            dest = "dropped" if e and e <= dropped_chars else "snapshot"
            on = [first_page + k + 1 for k, (ps, pe) in enumerate(page_spans) if ps < e and s < pe]
            if dest == "dropped":
                where = "dropped to fit the page budget"
            elif not on:
                where = "no page"
            else:
                where = f"page {on[0]}" if len(on) == 1 else f"pages {on[0]}-{on[-1]}"
            detail = f"{where}; transcript chars {s}-{e}"
            if is_snapshot(m):
                detail += "; earlier snapshot re-rendered from its source"
            rows.append(
                Removed(
                    i,
                    dest,
                    e - s if e else _msg_chars(m),
                    ctx.count_message(m),
                    id=_msg_id(m),
                    role=m.role,
                    detail=detail,
                )
            )
        return rows


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool_after_fork() -> None:
    # a forked child inherits the executor object but not its thread: a job submitted
    # there would never run, so the child starts with a fresh pool
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _facts_pool() -> concurrent.futures.ThreadPoolExecutor:
    """One shared worker thread for factsheet extraction (created on first use)."""
    global _POOL  # a lazily created process-wide executor
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="glyphfold-facts"
            )
        return _POOL


def _image_raw(profile: Any, fmt: str) -> Any:
    """OpenAI image parts name the detail level the profile's pricing assumes.

    Without it the API picks ``auto``, which may downscale a dense page until
    nothing can read it.
    """
    if fmt not in ("openai", "responses") or getattr(profile, "provider", None) != "openai":
        return None
    detail = "original" if getattr(profile, "name", "").endswith("original") else "high"
    return MappingProxyType({"type": "image_url", "image_url": {"detail": detail}})


def _new_message(role: str, blocks: list[Any], info: dict[str, Any]) -> Message:
    raw = {"role": role, X_KEY: info}
    return Message(role, tuple(blocks), raw=raw, meta=MappingProxyType({X_KEY: info}))
