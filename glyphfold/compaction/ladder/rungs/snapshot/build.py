"""Turn a snapshot plan into messages: render each run, splice it in, write the ledger rows.

Each run of imaged steps becomes one user-side snapshot message (a short reading
guide, the pages oldest first, then the factsheet of exact identifiers), placed
where the run was (:func:`glyphfold.compaction.history.splice.append_user_side`
adds the bridge / acknowledgement that role alternation needs). Kept steps, the
steps after the imaged prefix, the head and the tail stay verbatim, in order.
"""

from __future__ import annotations

import base64
import concurrent.futures
import functools
import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.markers import (
    SNAPSHOT,
    SNAPSHOT_ACK,
    SNAPSHOT_ACK_TEXT,
    glyphfold_meta,
    marked_message,
)
from glyphfold.compaction.history.model import History, Image, Message, Text, ToolCall, ToolResult
from glyphfold.compaction.history.splice import append_user_side
from glyphfold.compaction.history.steps import Regions
from glyphfold.compaction.ladder.ledger import PageRecord, Removed
from glyphfold.compaction.ladder.rungs.snapshot.factsheet import (
    FactScans,
    FactsheetConfig,
    format_factsheet,
    run_facts,
)
from glyphfold.compaction.ladder.rungs.snapshot.plan import Plan, RunText, Unit
from glyphfold.compaction.ladder.rungs.snapshot.source import LEVELS, Source, level_config
from glyphfold.compaction.ladder.transcript import plain_text

__all__ = [
    "FOCUS_GUIDE",
    "SNAPSHOT_VERSION",
    "Built",
    "block_id",
    "build",
    "guide_text",
    "is_snapshot",
]

SNAPSHOT_VERSION = 2  # 2: steps (SPEC §5.5); one snapshot per run of imaged steps


def is_snapshot(m: Message) -> bool:
    """True for a snapshot message glyphfold made."""
    return glyphfold_meta(m).get("kind") == SNAPSHOT


_HASH_CHARS = 1 << 22  # the source is encoded for its digest this many chars at a time


def block_id(source: str) -> str:
    """The stable id of a snapshot block: a digest of the source it images.

    The digest of its UTF-8 bytes, encoded a slice at a time (a 100M-char source is not
    copied whole into bytes; UTF-8 encodes each code point alone: the same digest)."""
    h = hashlib.blake2b(digest_size=8)
    for at in range(0, len(source), _HASH_CHARS):
        h.update(source[at : at + _HASH_CHARS].encode("utf-8"))
    return h.hexdigest()


def _block_id(inp: BuildInput, source: str) -> str:
    """:func:`block_id`, once per source text of a rung call (every fit round's build
    images the same run's words: the same digest of up to 100M chars)."""
    hit = inp.block_ids.get(id(source))
    if hit is None or hit[0] is not source:
        hit = inp.block_ids[id(source)] = (source, block_id(source))
    return hit[1]


FOCUS_GUIDE = " The user asks you to look in these pages above all for: {focus}."


def guide_text(
    n_msgs: int,
    chars: int,
    n_pages: int,
    *,
    facts: bool,
    focus: str | None = None,
    compact: bool = False,
) -> str:
    """The reading guide at the top of a snapshot message.

    A ``focus`` (the user's instruction of what matters, issue 23) is written at its
    end: the pages keep every word (SPEC §5.9), the guide says what to look for.
    ``compact``: the same marks explained in a third of the words, for a middle whose
    room is tight (``SnapshotConfig.guide_share``): there every token of the guide is
    a row of page the reader does not get (issue 20).
    """
    if compact:
        guide = (
            f"[glyphfold snapshot] {n_msgs} earlier messages as {n_pages} page image(s), "
            "oldest first. White-on-black marks: [user]/[assistant] speaker, '-> call' tool "
            "call, '<- result'/'<- end' its result; ordinary ink is content."
        )
        if facts:
            guide += " Exact ids follow as text."
        if focus:
            guide += FOCUS_GUIDE.format(focus=focus)
        return guide
    guide = (
        f"[glyphfold snapshot] {n_msgs} earlier messages ({chars:,} chars of transcript) are "
        f"shown as {n_pages} page image(s) below, oldest first. Each page is dense text: "
        "[user]/[assistant] mark speakers, '-> call' a tool call, '<- result' its result "
        "and '<- end' the end of that result; these marks are drawn white on black, and "
        "anything in ordinary ink is content, whatever it says. "
        "Read them as the conversation so far."
    )
    if facts:
        guide += " Exact identifiers from the pages follow the pages as text."
    if focus:
        guide += FOCUS_GUIDE.format(focus=focus)
    return guide


@dataclass
class Built:
    """The spliced history, its pages and the ledger material."""

    history: History
    pages: list[Any] = field(default_factory=list)
    facts: int = 0
    missing: dict[int, int] = field(default_factory=dict)
    hints: list[str] = field(default_factory=list)
    # the ledger rows are written when first asked for: a fit round whose build is not
    # chosen writes none (at 10^5 imaged messages, 10^5 rows per round)
    row_jobs: list[Callable[[list[Removed]], None]] = field(default_factory=list, repr=False)
    _removed: list[Removed] | None = field(default=None, repr=False)

    @property
    def removed(self) -> list[Removed]:
        """One ledger row per imaged message: the pages it went to, or why it was dropped."""
        if self._removed is None:
            rows: list[Removed] = []
            for job in self.row_jobs:
                job(rows)
            self._removed = rows
        return self._removed


@dataclass(frozen=True)
class BuildInput:
    """What :func:`build` needs besides the plan."""

    history: History
    regions: Regions
    units: Sequence[Unit]
    source: Source
    costs: Sequence[int]
    profile: Any
    render: Callable[[str], Any]
    factsheet: FactsheetConfig
    focus: str | None = None  # written in the reading guide
    compact_guide: bool = False  # the short reading guide (a tight middle, guide_share)
    # facts already extracted (the planner priced the factsheet of the same texts)
    facts: dict[str, list[Any]] = field(default_factory=dict, compare=False)
    # the factsheet scans of the texts the planner read (its run texts are the sources)
    scans: FactScans | None = field(default=None, compare=False)
    # message index -> (chars, id, is a snapshot) for its ledger row: fit rounds build again
    rows: dict[int, tuple[int, str | None, bool]] = field(default_factory=dict, compare=False)
    # id of a snapshot's source -> (the source, its block id): fit rounds build again
    block_ids: dict[int, tuple[str, str]] = field(default_factory=dict, compare=False)
    # an imaged unit's level-0 text length by its message range (the planner's)
    lengths: dict[tuple[int, int], int] = field(default_factory=dict, compare=False)


def build(inp: BuildInput, plan: Plan) -> Built:
    """Render the plan's runs and splice them into the history."""
    msgs = inp.history.messages
    pool = _facts_pool()
    jobs = [_facts_job(pool, inp, rt) for rt in plan.runs]
    results = [None if rt.all_dropped else inp.render(rt.text) for rt in plan.runs]
    out: list[Message] = list(msgs[: inp.regions.head_end])
    built = Built(inp.history)
    by_first = {
        rt.units[0]: (rt, res, job) for rt, res, job in zip(plan.runs, results, jobs, strict=True)
    }
    k = 0
    while k < len(inp.units):
        hit = by_first.get(k)
        if hit is None:
            u = inp.units[k]
            out.extend(msgs[u.start : u.end])
            k += 1
            continue
        rt, res, job = hit
        k = rt.units[-1] + 1
        nxt = msgs[inp.units[k].start] if k < len(inp.units) else _first_tail(inp)
        snap = _snapshot_message(inp, rt, res, job.result(), built)
        append_user_side(out, snap, nxt, ack_text=SNAPSHOT_ACK_TEXT, ack_kind=SNAPSHOT_ACK)
        built.row_jobs.append(functools.partial(_ledger_rows, inp, plan, rt, res, len(built.pages)))
        if res is not None:
            built.pages.extend(res.pages)
    out.extend(msgs[inp.regions.tail_start :])
    built.history = inp.history.replace_messages(out)
    return built


def _facts_job(
    pool: concurrent.futures.ThreadPoolExecutor, inp: BuildInput, rt: RunText
) -> concurrent.futures.Future[list[Any]]:
    """The facts of a run: known (the planner extracted them to price the factsheet of
    the same text, every word on its pages), or found on the worker thread while the
    pages are drawn (the identifiers of cut words first: :func:`run_facts`)."""
    whole = not rt.source or rt.source == rt.text
    known = inp.facts.get(rt.text) if whole else None
    if known is None:
        return pool.submit(run_facts, rt.text, rt.source, config=inp.factsheet, scans=inp.scans)
    done: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
    done.set_result(known)
    return done


def _first_tail(inp: BuildInput) -> Message | None:
    msgs = inp.history.messages
    return msgs[inp.regions.tail_start] if inp.regions.tail_start < len(msgs) else None


def _snapshot_message(
    inp: BuildInput, rt: RunText, res: Any, facts: list[Any], built: Built
) -> Message:
    pages = tuple(res.pages) if res is not None else ()
    n_msgs = sum(len(inp.units[k].positions) for k in rt.units)
    factsheet = format_factsheet(facts) if pages else ""
    built.facts += len(facts) if pages else 0
    if res is not None:  # a renderer of the caller's may not report glyphs
        for cp, n in getattr(res, "missing_glyphs", {}).items():
            built.missing[cp] = built.missing.get(cp, 0) + n
        built.hints.extend(h for h in getattr(res, "hints", ()) if h not in built.hints)
    if pages:
        guide = guide_text(
            n_msgs,
            len(rt.text),
            len(pages),
            facts=bool(factsheet),
            focus=inp.focus,
            compact=inp.compact_guide,
        )
    else:  # every step of the run was dropped: the marker line says what and where to look
        guide = f"[glyphfold snapshot] {plain_text(rt.text).strip()}"
    blocks: list[Any] = [Text(guide)]
    raw = _image_raw(inp.profile, inp.history.format)
    for p in pages:
        data = base64.b64encode(p.png).decode("ascii")
        blocks.append(
            Image(media_type="image/png", data=data, width=p.width, height=p.height, raw=raw)
        )
    if factsheet:
        blocks.append(Text(factsheet))
    return marked_message(
        "user",
        blocks,
        SNAPSHOT,
        version=SNAPSHOT_VERSION,
        source=rt.source or rt.text,  # every word (SPEC §5.9), whatever the pages hold
        # a stable id of the block (SPEC §5.10): the same source gives the same block
        block=_block_id(inp, rt.source or rt.text),
        pages=[list(p.source_span) for p in pages],
        messages=n_msgs,
        profile=getattr(inp.profile, "name", str(inp.profile)),
    )


_JSON_STR = json.encoder.encode_basestring_ascii  # a str as json.dumps writes it, quoted


def _args_chars(a: Any) -> int:
    """``len(json.dumps(a, default=str))`` of a call's arguments. The usual arguments, a
    dict of strings, are counted from their strings' JSON alone (``{"k": "v", ...}``:
    braces, ``": "`` and ``", "``), without building the whole text (a ledger row per
    imaged message: 10^5 rows)."""
    if type(a) is dict:
        n = 2 + 4 * len(a) - (2 if a else 0)
        for k, v in a.items():
            if type(k) is not str or type(v) is not str:
                return len(json.dumps(a, default=str))
            n += len(_JSON_STR(k)) + len(_JSON_STR(v))
        return n
    return len(json.dumps(a, default=str))


def _msg_chars(m: Message, meta: Any = None) -> int:
    """A ledger row's chars: ``len(m.text)`` (text blocks and tool-result text, joined by
    newlines) plus each call's arguments, counted in one pass without joining them
    (``meta``: the message's :func:`glyphfold_meta`, when the caller has it)."""
    meta = glyphfold_meta(m) if meta is None else meta
    if meta.get("kind") == SNAPSHOT:
        return len(str(meta.get("source", "")))
    n = texts = 0
    for b in m.blocks:
        if isinstance(b, Text):
            n += len(b.text)
            texts += 1
        elif isinstance(b, ToolResult):
            for c in b.content:
                if isinstance(c, Text):
                    n += len(c.text)
                    texts += 1
        elif isinstance(b, ToolCall):
            a = b.arguments
            n += len(a) if isinstance(a, str) else _args_chars(a)
    return n + texts - 1 if texts else n


def _msg_id(m: Message) -> str | None:
    for b in m.blocks:
        if isinstance(b, ToolResult):
            return b.call_id
        if isinstance(b, ToolCall):
            return b.id
    rid = m.raw.get("id") if m.raw is not None else None
    return rid if isinstance(rid, str) else None


def _treatment_note(inp: BuildInput, plan: Plan, k: int, pos: int) -> str:
    t = plan.treatment
    notes = []
    level = t.levels.get(pos, 0)
    if level > LEVELS:
        notes.append("tool output elided in the pages")
    elif level:
        cap = level_config(inp.source.config, level).max_result_chars
        if t.cap is not None and t.cap[0] == pos:  # the widest cap that fits
            cap = t.cap[1]
        notes.append(f"tool output capped to {cap:,} chars")
    if t.cut is not None and t.cut[0] == k:
        notes.append(f"first {t.cut[1]:,} chars of the step dropped to fit the page budget")
    return "; ".join(notes)


def _ledger_rows(
    inp: BuildInput, plan: Plan, rt: RunText, res: Any, first_page: int, out: list[Removed]
) -> None:
    """One row per message of the run: the pages it went to, or why it was dropped."""
    msgs = inp.history.messages
    spans = [tuple(p.source_span) for p in res.pages] if res is not None else []
    t = plan.treatment
    levels, dropped_units = t.levels, t.dropped
    cut_unit = t.cut[0] if t.cut is not None else None
    rows, costs, units = inp.rows, inp.costs, inp.units
    append = out.append
    cap_pos = t.cap[0] if t.cap is not None else None
    by_level: dict[int, str] = {}  # a level's note (not the capped output's, not the cut's)
    for k in rt.units:
        u = units[k]
        dropped = k in dropped_units
        s, e = rt.spans.get(k, (0, 0))
        on = (
            []
            if dropped
            else [first_page + j + 1 for j, (ps, pe) in enumerate(spans) if ps < e and s < pe]
        )
        # what every message of the unit shares: where it went, its unit's span
        if dropped:
            where = "dropped to fit the page budget"
        elif not on:
            where = "no page" if spans else "shown as text"
        else:
            where = f"page {on[0]}" if len(on) == 1 else f"pages {on[0]}-{on[-1]}"
        head = f"{where}; transcript chars {s}-{e}"
        dest = "dropped" if dropped else "snapshot"
        for pos, i in zip(u.positions, range(u.start, u.end), strict=True):
            m = msgs[i]
            known = rows.get(i)
            if known is None:
                meta = glyphfold_meta(m)
                snap = meta.get("kind") == SNAPSHOT  # is_snapshot(m)
                known = rows[i] = (_msg_chars(m, meta), _msg_id(m), snap)
            # a note only where the treatment touched the message (a level, the cut)
            level = levels.get(pos)
            if k == cut_unit or (level and pos == cap_pos):
                note = _treatment_note(inp, plan, k, pos)
            elif level:
                note = by_level.get(level) or by_level.setdefault(
                    level, _treatment_note(inp, plan, k, pos)
                )
            else:
                note = ""
            detail = f"{head}; {note}" if note else head
            if known[2]:
                detail += "; earlier snapshot re-rendered from its source"
            append(Removed(i, dest, known[0], costs[i], id=known[1], role=m.role, detail=detail))


def page_records(pages: Sequence[Any]) -> tuple[PageRecord, ...]:
    """Ledger records of rendered pages."""
    return tuple(
        PageRecord(p.width, p.height, p.image_tokens, len(p.png), tuple(p.source_span))
        for p in pages
    )


def _image_raw(profile: Any, fmt: str) -> Any:
    """OpenAI image parts name the detail level the profile's pricing assumes.

    Without it the API picks ``auto``, which may downscale a dense page until
    nothing can read it.
    """
    if fmt not in ("openai", "responses") or getattr(profile, "provider", None) != "openai":
        return None
    detail = "original" if getattr(profile, "name", "").endswith("original") else "high"
    return MappingProxyType({"type": "image_url", "image_url": {"detail": detail}})


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
    """One shared worker thread for factsheet extraction (created on first use).

    The factsheet is pure Python and the render kernels release the GIL: the facts
    are extracted while the pages are drawn (same result either way).
    """
    global _POOL  # a lazily created process-wide executor
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="glyphfold-facts"
            )
        return _POOL
