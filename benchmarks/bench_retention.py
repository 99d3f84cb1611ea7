"""Retention: how many facts of the middle of a history the model can get back (issue 20).

Run: ``PYTHONPATH=. python benchmarks/bench_retention.py [DIR] [--limit N] [--sessions A,B]
[--budgets 0.5,0.2,recover] [--engines rapidocr,tesseract] [--format openai|anthropic|all]
[--cache DIR] [--no-ocr] [--room] [--elision]`` (default DIR: ``../shared/realdata``, or
``$GLYPHFOLD_REALDATA``; default format: all, both wire formats with the plain-text
sessions). Method and results: docs/legibility.md ("Retention").

1. **Facts.** From the middle of each history (between the head — leading system
   messages and the first real user message — and the newest step), deterministic
   patterns take the checkable facts: file paths, symbols (dotted, snake_case,
   CamelCase names), error lines (``SomethingError: ...``), identifiers with digits,
   hex ids, numbers with units, and the commands of tool calls. A fact that also
   occurs in the head or the newest step is not a middle fact (it is sent anyway).
2. **What is sent.** Each method compacts the history to the budget; what reaches the
   model is its text (kept messages, tool calls, the factsheet; never the private
   ``x_glyphfold`` source) plus its pages, read back by whole-page OCR: rapidocr and
   Tesseract each read every page, and per page the engine that finds more middle facts
   counts (the better engine; a vision model reads at least as well as an OCR engine).
   OCR results are cached by page hash (``--cache``), so a second run costs no OCR.
3. **Recovered**: a fact occurs in the sent text or in a page's reading, compared with
   every whitespace removed (engines add and drop spaces). Facts per 1,000 tokens:
   recovered facts over the tokens the method sends (the budget it met).

Methods, side by side at the same budget in the same run: ``glyphfold`` (the default
ladder), ``no-snapshot`` (elision, stripping, trim: glyphfold without pages), and
``drop-middle`` (the head, the request and the newest steps that fit: plain truncation). Budgets: a
fraction of the estimate, or ``recover`` (two thirds of it, the reactive path). A
session where a method cannot reach a budget (its floor is above it) is left out of
that budget's pool for every method, so the pools compare like with like.

What the budget holds (issue 20): for glyphfold, the share of each target taken by the
fixed text every method sends (system, head, the request, the newest step), other text,
the snapshots' own text (reading guide, factsheet, bridges), the pages and what is left
unused; and the ceiling, the share of the middle's characters the room (target minus the
fixed text) would hold as pages at the density the pages reach; and the exact ceiling in
facts (``fact_ceiling``): the facts on the newest suffix of the middle whose densest
pages fit that room, every word of it (SPEC §5.5, §5.9). A lossy snapshot that
leaves more of the target unused than its fit rounds allow (64 tokens, or a sixteenth of
a page) is counted: words cut while their pages would fit (``--room``: per session).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import sys
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glyphfold.compaction.history.markers import glyphfold_meta
from glyphfold.compaction.history.messages import FORMATS, coerce, to_canonical, to_wire
from glyphfold.compaction.history.model import History, Text, ToolCall, ToolResult
from glyphfold.compaction.history.steps import split_regions
from glyphfold.compaction.history.tokens import token_costs
from glyphfold.compaction.ladder.api import compact, recover
from glyphfold.compaction.ladder.rungs.snapshot.price import lower_bound
from glyphfold.errors import ContextOverflowError, GlyphfoldError

KINDS = ("path", "symbol", "error", "id_digits", "hex", "number_unit", "command")
METHODS = ("glyphfold", "no-snapshot", "drop-middle")

_PATTERNS: dict[str, re.Pattern[str]] = {
    "path": re.compile(
        r"(?<![\w.@+:/~-])(?:~|\.{1,2})?(?:/[\w.@+-]*[\w@+-]){2,}"
        r"|(?<![\w.@+:/~-])[\w.-]+(?:/[\w.@+-]+)+\.[A-Za-z0-9]{1,6}\b"
    ),
    "symbol": re.compile(
        r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"
        r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"
    ),
    "error": re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b: [^\n]{3,60}"),
    "id_digits": re.compile(r"\b(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z][\w-]{4,}\b"),
    "hex": re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"),
    "number_unit": re.compile(
        r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|KB|MB|GB|kB|KiB|MiB|B|bytes|tokens|chars|lines"
        r"|px|%|passed|failed|errors?|tests?)\b"
    ),
}
_MIN_LEN = {"path": 6, "symbol": 8, "error": 12, "id_digits": 6, "hex": 7, "number_unit": 3}


def _norm(text: str) -> str:
    """NFKC, every whitespace character removed (engines add and drop spaces)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def message_text(m: Any) -> str:
    """Everything a message sends as text: text blocks, tool calls, tool results."""
    parts: list[str] = []
    for b in m.blocks:
        if isinstance(b, Text):
            parts.append(b.text)
        elif isinstance(b, ToolCall):
            a = b.arguments
            parts.append(f"{b.name} {a if isinstance(a, str) else json.dumps(a)}")
        elif isinstance(b, ToolResult):
            parts.extend(c.text for c in b.content if isinstance(c, Text))
    return "\n".join(parts)


def _commands(m: Any) -> list[str]:
    out = []
    for c in m.tool_calls:
        a = c.arguments
        if isinstance(a, str):
            try:
                a = json.loads(a)
            except ValueError:
                a = {"raw": a}
        if isinstance(a, dict):
            for key in ("command", "cmd", "code"):
                v = a.get(key)
                if isinstance(v, str) and len(v.strip()) >= 4:
                    line = v.strip().splitlines()[0][:80].strip()
                    if len(line) >= 4:
                        out.append(line)
    return out


def extract(text: str) -> set[tuple[str, str]]:
    """The (kind, value) facts of ``text`` (commands come from tool calls, not text)."""
    out: set[tuple[str, str]] = set()
    for kind, pat in _PATTERNS.items():
        for m in pat.finditer(text):
            v = m.group(0).strip()
            if len(v) >= _MIN_LEN[kind]:
                out.add((kind, v))
    return out


def middle_facts(h: History) -> dict[tuple[str, str], str]:
    """Facts of the middle -> their normalised form (facts of head and newest step left out)."""
    costs = token_costs(h, image_policy="all").messages
    reg = split_regions(h, costs=costs, tail_tokens=0)
    msgs = h.messages
    outside = "\n".join(message_text(m) for m in (*msgs[: reg.head_end], *msgs[reg.tail_start :]))
    if h.system is not None:
        outside += "\n" + str(h.system)
    facts: set[tuple[str, str]] = set()
    for m in msgs[reg.head_end : reg.tail_start]:
        facts |= extract(message_text(m))
        facts |= {("command", c) for c in _commands(m)}
    outside_n = _norm(outside)
    return {f: n for f in facts if (n := _norm(f[1])) and n not in outside_n}


# ------------------------------------------------------------------ OCR


class Reader:
    """Whole-page OCR by every available engine, cached by page hash and engine."""

    def __init__(self, names: list[str], cache: Path | None) -> None:
        from glyphfold.legibility.ocr import available_engines

        self.engines = available_engines(names) if names else []
        self.cache = cache
        self.memo: dict[str, str] = {}
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
        self.seconds = 0.0
        self.pages = 0

    def _path(self, key: str) -> Path | None:
        return None if self.cache is None else self.cache / f"{key}.txt"

    def read(self, png: bytes) -> dict[str, str]:
        """Engine name -> reading of the page."""
        digest = hashlib.sha1(png).hexdigest()
        out: dict[str, str] = {}
        gray = None
        for e in self.engines:
            key = f"{digest}-{e.name}"
            if key in self.memo:
                out[e.name] = self.memo[key]
                continue
            path = self._path(key)
            if path is not None and path.exists():
                text = path.read_text(encoding="utf-8")
            else:
                if gray is None:
                    import numpy as np
                    from PIL import Image

                    gray = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
                t0 = time.perf_counter()
                text = e.read_page(gray)
                self.seconds += time.perf_counter() - t0
                self.pages += 1
                if path is not None:
                    path.write_text(text, encoding="utf-8")
            self.memo[key] = text
            out[e.name] = text
        return out


# ------------------------------------------------------------------ methods


def drop_middle(h: History, budget: int) -> tuple[History, int]:
    """The head, the request and the newest steps that fit ``budget`` (plain truncation).

    The request (the newest real user messages) stays wherever it lies, as SPEC §5.5
    keeps it for every method: a truncation that dropped it to keep one more step would
    buy its facts with the task's own words (and spend a budget glyphfold may not)."""
    costs = token_costs(h, image_policy="all")
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    request = {i for i in reg.request if i >= reg.head_end}
    system = costs.total - sum(costs.messages)
    used = system + sum(costs.messages[: reg.head_end]) + sum(costs.messages[i] for i in request)
    start = len(h.messages)
    for s in reversed(reg.steps):
        if s.start < reg.head_end:
            break
        if s.start in request and start == s.end:  # the request: counted above
            start = s.start
            continue
        c = sum(costs.messages[s.start : s.end])
        if used + c > budget and start < len(h.messages):
            break
        used += c
        start = s.start
    older = [
        m for i, m in enumerate(h.messages[reg.head_end : start], reg.head_end) if i in request
    ]
    kept = (*h.messages[: reg.head_end], *older, *h.messages[start:])
    return h.replace_messages(kept), used


@dataclass
class Outcome:
    fits: bool
    tokens: int = 0
    recovered: Counter[str] = field(default_factory=Counter)  # kind -> facts recovered
    total: Counter[str] = field(default_factory=Counter)
    pages: int = 0
    lossy: bool = False
    dropped_chars: int = 0
    lost_unfitted: int = 0  # snapshot ledger says lossy although no cut was counted
    # where the facts that were not recovered went (glyphfold only): kind -> count per place
    lost: dict[str, Counter[str]] = field(default_factory=dict)
    # what the budget holds (glyphfold only, see ROOM): part -> tokens
    room: dict[str, int] = field(default_factory=dict)
    # a lossy snapshot that left more of the target unused than its fit rounds allow
    # (64 tokens or a sixteenth of a page): words cut while their pages would fit
    cut_with_room: int = 0
    # the exact fact ceiling at this target (glyphfold, ``--room``; see fact_ceiling)
    ceiling: dict[str, int] = field(default_factory=dict)


# Where a fact the model cannot get back went (glyphfold), checked in this order:
# on a page but no engine read it; in a snapshot's retained source but not on its pages
# (cut to fit); gone from the history before the snapshot rung (elided); otherwise
# dropped (trimmed, or a step the snapshot dropped without retaining it).
PLACES = ("unread", "cut", "elided", "dropped")


class PageTexts:
    """A renderer that records the source text of every page it draws (by PNG bytes;
    the ladder may draw plans it does not send: look up the pages of the result)."""

    def __init__(self) -> None:
        self.text: dict[bytes, str] = {}

    def __call__(self, text: str, **kw: Any) -> Any:
        from glyphfold.render.api import render_text

        res = render_text(text, **kw)
        for p in res.pages:
            a, b = p.source_span
            self.text[p.png] = text[a:b]
        return res


def _sent(result_messages: Any) -> str:
    h = to_canonical(result_messages)
    text = "\n".join(message_text(m) for m in h.messages)
    return text + ("\n" + str(h.system) if h.system is not None else "")


def run_method(
    method: str,
    data: Any,
    budget: int | None,
    reader: Reader,
    facts: dict[tuple[str, str], str],
    ceiling: bool = False,
) -> Outcome:
    h = coerce(data)[0]
    pages: tuple[Any, ...] = ()
    recorder = PageTexts()
    sources = ""
    try:
        if method == "drop-middle":
            est = token_costs(h, image_policy="all").total
            b = budget if budget is not None else est * 2 // 3
            out, tokens = drop_middle(h, b)
            if tokens > b:
                return Outcome(False)
            sent = _sent(out)
            lossy, dropped = False, 0
        else:
            rungs = None if method == "glyphfold" else "elide,strip,trim"
            if budget is None:
                res = recover(data, rungs=rungs, renderer=recorder)
            else:
                res = compact(data, budget=budget, rungs=rungs, renderer=recorder)
            tokens = res.tokens_after
            sent = _sent(res.for_provider())
            pages = res.pages
            snaps = [e for e in res.ledger if e.rung == "snapshot" and e.extra]
            lossy = any(e.extra.get("lossy") for e in snaps)
            dropped = sum(int(e.extra.get("dropped_chars", 0)) for e in snaps)
            page = max((p.image_tokens for p in res.pages), default=0)
            slack = res.target - res.tokens_after
            cut_with_room = int(lossy and bool(res.pages) and slack >= max(64, page // 16))
            sources = "\n".join(
                str(glyphfold_meta(m).get("source", ""))
                for m in to_canonical(res.messages).messages
            )
    except ContextOverflowError:
        return Outcome(False)
    sent_n = _norm(sent)
    found = {f for f, n in facts.items() if n in sent_n}
    for p in pages:
        readings = reader.read(p.png) if reader.engines else {}
        best: set[tuple[str, str]] = set()
        for text in readings.values():
            t = _norm(text)
            hit = {f for f, n in facts.items() if n in t}
            if len(hit) > len(best):
                best = hit
        found |= best
    o = Outcome(True, tokens, pages=len(pages), lossy=lossy, dropped_chars=dropped)
    if method != "drop-middle":
        o.cut_with_room = cut_with_room
        if method == "glyphfold":
            o.room = room_parts(h, res, recorder)
            if ceiling:
                o.ceiling = fact_ceiling(h, res.target, facts)
    o.total = Counter(k for k, _ in facts)
    o.recovered = Counter(k for k, _ in found)
    o.lost_unfitted = int(lossy and not dropped)
    if method == "glyphfold":
        shown = "\n".join(recorder.text.get(p.png, "") for p in pages)
        o.lost = where_lost(data, budget, facts, found, shown, sources)
    return o


def where_lost(
    data: Any,
    budget: int | None,
    facts: dict[tuple[str, str], str],
    found: set[tuple[str, str]],
    shown: str,
    sources: str,
) -> dict[str, Counter[str]]:
    """Place -> kind -> facts of the middle the model cannot get back (see PLACES)."""
    lost = [f for f in facts if f not in found]
    if not lost:
        return {}
    on_pages = _norm(shown)  # the text of the pages sent
    retained = _norm(sources)
    try:
        res = recover(data, rungs="elide") if budget is None else None
        res = res or compact(data, budget=budget, rungs="elide")
        after_elision = _norm(_sent(res.for_provider()))
    except ContextOverflowError:
        # elision alone cannot reach the budget: the rung then stubs all its rules
        # allow (what /shake does with the ladder's config), and the snapshot follows
        from glyphfold.compaction.ladder.api import shake
        from glyphfold.compaction.ladder.registry import LadderConfig

        after_elision = _norm(_sent(shake(data, config=LadderConfig()).for_provider()))
    out: dict[str, Counter[str]] = {p: Counter() for p in PLACES}
    for f in lost:
        n = facts[f]
        place = (
            "unread"
            if n in on_pages
            else "cut"
            if n in retained
            else "elided"
            if n not in after_elision
            else "dropped"
        )
        out[place][f[0]] += 1
    return out


# What a budget holds (issue 20): the text every method keeps (system, head, the request,
# the newest step), the rest of the text glyphfold sends, the snapshots' own text (reading
# guide, factsheet, bridges), the pages, what is left unused; and the ceiling: the share
# of the middle's characters the room (budget minus the fixed text) holds as pages at the
# density the pages sent reach (characters per image token), every other overhead free.
ROOM = ("fixed", "text", "snapshot_text", "pages", "unused")


def room_parts(h: History, res: Any, recorder: PageTexts) -> dict[str, int]:
    """Part -> tokens of what glyphfold sends (see ROOM), with ``middle_chars``,
    ``page_chars`` and ``room`` for the density ceiling."""
    from glyphfold.compaction.history.tokens import estimate_message_tokens

    costs = token_costs(h, image_policy="all")
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    fixed = costs.total - sum(costs.messages) + sum(costs.messages[: reg.head_end])
    fixed += sum(costs.messages[reg.tail_start :])
    fixed += sum(costs.messages[i] for i in reg.request if reg.region_of(i) == "middle")
    parts = dict.fromkeys(ROOM, 0)
    parts["snapshot_text"] = sum(
        estimate_message_tokens(m, images_sent=False, tool_results_by_bytes=False)
        for m in to_canonical(res.messages).messages
        if glyphfold_meta(m).get("kind") == "snapshot"
    )
    parts["pages"] = sum(p.image_tokens for p in res.pages)
    sent = res.tokens_after
    parts["fixed"] = min(fixed, sent)
    parts["text"] = max(0, sent - parts["fixed"] - parts["snapshot_text"] - parts["pages"])
    parts["unused"] = max(0, res.target - sent)
    parts["room"] = max(0, res.target - fixed)
    mid = reg.head_end, reg.tail_start
    parts["middle_chars"] = sum(len(message_text(m)) for m in h.messages[mid[0] : mid[1]])
    parts["page_chars"] = sum(len(recorder.text.get(p.png, "")) for p in res.pages)
    return parts


def fact_ceiling(
    h: History, target: int, facts: dict[tuple[str, str], str], profile: str = "anthropic"
) -> dict[str, int]:
    """The most middle facts any snapshot can send at ``target`` under SPEC §5.5/§5.9.

    §5.5 keeps the system prompt, the head, the request (the newest real user messages)
    and the newest step as text, verbatim: ``room`` is the target less their tokens.
    §5.9 cuts words oldest first: what can be imaged is a newest suffix of the middle's
    transcript (the snapshot's own level-0 text of the middle's other messages, every
    word, no cap), cut anywhere (from the start of a message, as the planner cuts).
    The suffix is the longest whose pages, laid out by the real renderer in the densest
    shape of the snapshot's shape ladder with the snapshot's options, cost at most
    ``room`` image tokens, within the profile's image limit: the whole room is pages, no
    reading guide, factsheet or bridge (an upper bound of what the ladder can send: it
    pays for those). Returns ``facts`` (the middle's), ``ceiling`` (those in the request's
    text or on that suffix), ``reach`` (those in the request or anywhere in the middle's
    transcript: what the matching finds at unlimited room), ``room`` and the suffix's
    ``suffix_chars`` of ``middle_chars``.
    """
    from glyphfold.compaction.ladder.rungs.common import tool_names
    from glyphfold.compaction.ladder.rungs.snapshot import Snapshot
    from glyphfold.compaction.ladder.rungs.snapshot.source import LEVELS, Source
    from glyphfold.compaction.ladder.rungs.transcribe import join
    from glyphfold.render.api import plan_text
    from glyphfold.render.profiles import get_profile

    prof = get_profile(profile)
    costs = token_costs(h, image_policy="all")
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    request = {i for i in reg.request if reg.region_of(i) == "middle"}
    fixed = costs.total - sum(costs.messages) + sum(costs.messages[: reg.head_end])
    fixed += sum(costs.messages[reg.tail_start :]) + sum(costs.messages[i] for i in request)
    room = max(0, target - fixed)
    snap = Snapshot()
    middle = [h.messages[i] for i in range(reg.head_end, reg.tail_start) if i not in request]
    source = Source(middle, tool_names(h), snap.config.transcript)
    shape = snap.shape_ladder(prof)[-1]
    cap = prof.max_images_per_request
    asked = _norm("\n".join(message_text(h.messages[i]) for i in request))

    def suffix_start(text: str) -> int:
        """The least start whose suffix of ``text`` fits the room as pages."""

        def fits(start: int) -> bool:
            if start >= len(text):
                return True
            if room <= 0:
                return False
            rest = text[start:]
            p = plan_text(
                rest, profile=prof, max_pages=cap, max_tokens=room, **snap._options(rest, shape)
            )
            return p.complete and p.image_tokens <= room

        return lower_bound(0, len(text), fits)

    def covered(text: str) -> int:
        t = _norm(text)
        return sum(1 for n in facts.values() if n in t or n in asked)

    out: dict[str, int] = {"facts": len(facts), "room": room}
    best = (-1, 0)
    for level in range(LEVELS + 2):  # level 0: every word; LEVELS + 1: outputs elided
        text, _ = join([source.piece(k, level) for k in range(len(middle))])
        start = suffix_start(text)
        n = covered(text[start:])
        if level == 0:
            out |= {
                "ceiling": n,
                "reach": covered(text),
                "suffix_chars": len(text) - start,
                "middle_chars": len(text),
            }
        if n > best[0]:
            best = (n, level)
    out["ceiling_level"], out["best_level"] = best
    # no words at all: the room as pages of the facts themselves, shortest first (a bound
    # of any content, a list of the checkable strings included; not a rule of SPEC §5.9)
    listing = "\n".join(sorted({f[1] for f in facts}, key=lambda v: (-len(v), v)))
    out["list_bound"] = covered(listing[suffix_start(listing) :])
    return out


# ------------------------------------------------------------------ runner


def default_dir() -> Path:
    env = os.environ.get("GLYPHFOLD_REALDATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2] / "shared" / "realdata"
    return here if here.is_dir() else Path("/work/shared/realdata")


def load(d: Path, names: list[str] | None, fmt: str, limit: int | None) -> list[tuple[str, Any]]:
    out = []
    for p in sorted(d.glob("*.json")):
        name = p.name.removesuffix(".json")
        if names and name not in names and name.rsplit(".", 1)[0] not in names:
            continue
        if fmt != "all" and not name.endswith("." + fmt):
            continue
        suffix = name.rsplit(".", 1)[-1]
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            # the format the file's name says: plain user/assistant text fits several
            # formats and is refused without it (the question-answering sessions)
            h = coerce(data, format=suffix if suffix in FORMATS else "auto")[0]
        except (ValueError, GlyphfoldError):
            continue
        out.append((name, h))
    return out[:limit] if limit else out


def elision_table(sessions: list[tuple[str, Any]]) -> None:
    """SPEC §5.8: what each elision rule qualifies and what /shake (spec rule) stubs."""
    from glyphfold.compaction.ladder.api import shake
    from glyphfold.compaction.ladder.registry import LadderConfig
    from glyphfold.compaction.ladder.rungs.common import result_text
    from glyphfold.compaction.ladder.rungs.elide import ElideConfig, elision_reasons

    qual: Counter[str] = Counter()
    qchars: Counter[str] = Counter()
    stub: Counter[str] = Counter()
    schars: Counter[str] = Counter()
    n = chars = 0
    wide = wide_chars = 0
    for _, data in sessions:
        h = coerce(data)[0]
        texts = {
            b.call_id: result_text(b)
            for m in h.messages
            for b in m.blocks
            if isinstance(b, ToolResult)
        }
        n += len(texts)
        chars += sum(map(len, texts.values()))
        for cid, why in (elision_reasons(h, ElideConfig()).results or {}).items():
            qual[why.split()[0]] += 1
            qchars[why.split()[0]] += len(texts.get(cid, ""))
        for cfg, wide_rule in ((LadderConfig(), False), (None, True)):
            res = shake(data, config=cfg)
            for e in res.ledger:
                for r in e.removed:
                    if r.dest != "stub" or not r.detail.startswith("[elided"):
                        continue
                    if wide_rule:
                        wide += 1
                        wide_chars += r.chars
                    else:
                        k = r.detail.rsplit("; ", 1)[-1].split()[0] if "; " in r.detail else "?"
                        stub[k] += 1
                        schars[k] += r.chars
    print(f"{len(sessions)} sessions, {n} tool results, {chars:,} chars")
    print("| rule | qualify | chars | stubbed by /shake (spec rule) | chars |")
    print("|---|---|---|---|---|")
    for k in ("reread", "rerun", "rewritten", "duplicate", "progress", "confirmation", "empty"):
        print(f"| {k} | {qual[k]} | {qchars[k]:,} | {stub[k]} | {schars[k]:,} |")
    print(f"0.1 wide rule (/shake default): {wide} results, {wide_chars:,} chars stubbed")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=None, help="first N sessions only")
    ap.add_argument("--sessions", default="", help="comma-separated session names")
    ap.add_argument("--budgets", default="0.5,0.2,recover")
    ap.add_argument("--engines", default="rapidocr,tesseract")
    ap.add_argument(
        "--format",
        default="all",
        choices=("openai", "anthropic", "all"),
        help="which files (default all: both wire formats, the plain-text sessions included)",
    )
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "glyphfold" / "ocr")
    ap.add_argument("--no-ocr", action="store_true", help="count only text (a lower bound)")
    ap.add_argument("--max-bytes", type=int, default=400_000, help="skip bigger files")
    ap.add_argument("--elision", action="store_true", help="the SPEC §5.8 elision table only")
    ap.add_argument("--room", action="store_true", help="per session: what the budget holds")
    args = ap.parse_args(argv)
    d = args.dir or default_dir()
    if not d.is_dir():
        print(f"no sessions: {d} is not a directory", file=sys.stderr)
        return 2
    names = [s.strip() for s in args.sessions.split(",") if s.strip()] or None
    sessions = load(d, names, args.format, args.limit)
    sessions = [(n, s) for n, s in sessions if len(json.dumps(to_wire(s))) <= args.max_bytes]
    if args.elision:
        elision_table(sessions)
        return 0
    reader = Reader([] if args.no_ocr else args.engines.split(","), args.cache)
    print(f"{len(sessions)} sessions; OCR engines: {[e.name for e in reader.engines] or 'none'}")
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    rows: dict[str, list[dict[str, Outcome]]] = {b: [] for b in budgets}
    t0 = time.perf_counter()
    for name, data in sessions:
        h = coerce(data)[0]
        facts = middle_facts(h)
        if not facts:
            continue
        est = token_costs(h, image_policy="all").total
        for b in budgets:
            budget = None if b == "recover" else max(1, int(est * float(b)))
            outs = {m: run_method(m, data, budget, reader, facts, args.room) for m in METHODS}
            rows[b].append(outs)
            g = outs["glyphfold"]
            cells = " ".join(
                f"{m}={sum(o.recovered.values())}/{sum(o.total.values())}" if o.fits else f"{m}=R"
                for m, o in outs.items()
            )
            where = " ".join(f"{p}={sum(g.lost.get(p, {}).values())}" for p in PLACES)
            flag = " | lossy with room left" if g.cut_with_room else ""
            print(f"{name:<55} {b:>7} pages {g.pages:>3} {cells} | {where}{flag}", flush=True)
            if args.room and g.room:
                print("    room: " + " ".join(f"{k}={v}" for k, v in g.room.items()))
                print("    ceiling: " + " ".join(f"{k}={v}" for k, v in g.ceiling.items()))
    print(
        f"\n{time.perf_counter() - t0:.0f} s; OCR {reader.pages} page reads, {reader.seconds:.0f} s"
    )
    report(rows)
    return 0


def report(rows: dict[str, list[dict[str, Outcome]]]) -> None:
    # pooled: every fact of the pool counts once (sessions with many facts weigh more);
    # session mean: each session's share, averaged (each session weighs the same);
    # "+ every page fact read": the facts on the pages sent counted as read, an upper
    # bound for a reader of the pages (with --no-ocr the recovered column is text only)
    print(
        "\n| budget | sessions | method | middle facts recovered (pooled) | session mean"
        " | + every page fact read | facts / 1k tokens |"
    )
    print("|---|---|---|---|---|---|---|")
    for b, outs in rows.items():
        pooled = [o for o in outs if all(x.fits for x in o.values())]
        for m in METHODS:
            rec = sum(sum(o[m].recovered.values()) for o in pooled)
            tot = sum(sum(o[m].total.values()) for o in pooled)
            tok = sum(o[m].tokens for o in pooled)
            unread = sum(sum(o[m].lost.get("unread", {}).values()) for o in pooled)
            shares = [
                sum(o[m].recovered.values()) / sum(o[m].total.values())
                for o in pooled
                if sum(o[m].total.values())
            ]
            pct = 100 * rec / tot if tot else 0.0
            mean = 100 * sum(shares) / len(shares) if shares else 0.0
            up_shares = [
                (sum(o[m].recovered.values()) + sum(o[m].lost.get("unread", {}).values()))
                / sum(o[m].total.values())
                for o in pooled
                if sum(o[m].total.values())
            ]
            up_mean = 100 * sum(up_shares) / len(up_shares) if up_shares else 0.0
            upper = (
                f"{100 * (rec + unread) / tot:.1f}% ({1000 * (rec + unread) / tok:.2f} / 1k;"
                f" session mean {up_mean:.1f}%)"
                if tot and tok and m == "glyphfold"
                else "-"
            )
            per = 1000 * rec / tok if tok else 0.0
            print(
                f"| {b} | {len(pooled)} | {m} | {pct:.1f}% ({rec}/{tot}) | {mean:.1f}% | {upper}"
                f" | {per:.2f} |"
            )
    print("\nglyphfold, per kind (all budgets pooled):")
    rec: Counter[str] = Counter()
    tot: Counter[str] = Counter()
    lossy = dropped = unfitted = 0
    for outs in rows.values():
        for o in outs:
            g = o["glyphfold"]
            if not all(x.fits for x in o.values()):
                continue
            rec.update(g.recovered)
            tot.update(g.total)
            lossy += g.lossy
            dropped += g.dropped_chars
            unfitted += g.lost_unfitted
    for k in KINDS:
        if tot[k]:
            print(f"  {k:<12} {100 * rec[k] / tot[k]:5.1f}% ({rec[k]}/{tot[k]})")
    cut_room = sum(o["glyphfold"].cut_with_room for outs in rows.values() for o in outs)
    print(
        f"lossy snapshots {lossy}, chars cut {dropped:,}, lossy without a count {unfitted},"
        f" lossy leaving room unused (cut while pages would fit) {cut_room}"
    )
    room_table(rows)
    ceiling_table(rows)
    print("\nglyphfold, where the facts not recovered went, per budget (SPEC §5.9, issue 20):")
    print("| budget | kind | recovered | " + " | ".join(PLACES) + " |")
    print("|---|---|---|" + "---|" * len(PLACES))
    for b, outs in rows.items():
        pooled = [o["glyphfold"] for o in outs if all(x.fits for x in o.values())]
        for k in (*KINDS, "all"):
            tot_k = sum(g.total[k] if k != "all" else sum(g.total.values()) for g in pooled)
            if not tot_k:
                continue
            rec_k = sum(g.recovered[k] if k != "all" else sum(g.recovered.values()) for g in pooled)
            cells = []
            for p in PLACES:
                n = sum(
                    (g.lost.get(p, Counter())[k] if k != "all" else sum(g.lost.get(p, {}).values()))
                    for g in pooled
                )
                cells.append(f"{100 * n / tot_k:.0f}%")
            print(f"| {b} | {k} | {100 * rec_k / tot_k:.0f}% | " + " | ".join(cells) + " |")


def room_table(rows: dict[str, list[dict[str, Outcome]]]) -> None:
    """Per budget, glyphfold's pool: the share of the target each part holds (ROOM), the
    pages' density, and the ceiling a reader of every page could reach if the whole room
    were pages at that density (facts assumed spread like characters)."""
    print("\nglyphfold, what the budget holds (share of the targets, pooled; issue 20):")
    print(
        "| budget | sessions | " + " | ".join(ROOM) + " | chars / page token"
        " | ceiling (facts-weighted) | ceiling, session mean |"
    )
    print("|---|---|" + "---|" * (len(ROOM) + 3))
    for b, outs in rows.items():
        pooled = [o["glyphfold"] for o in outs if all(x.fits for x in o.values())]
        pooled = [g for g in pooled if g.room]
        if not pooled:
            continue
        whole = sum(sum(g.room[k] for k in ROOM) for g in pooled) or 1
        shares = " | ".join(f"{100 * sum(g.room[k] for g in pooled) / whole:.0f}%" for k in ROOM)
        page_tok = sum(g.room["pages"] for g in pooled)
        density = sum(g.room["page_chars"] for g in pooled) / page_tok if page_tok else 0.0
        ceil = [
            min(1.0, g.room["room"] * density / g.room["middle_chars"])
            if g.room["middle_chars"]
            else 1.0
            for g in pooled
        ]
        facts = [sum(g.total.values()) for g in pooled]
        weighted = sum(c * f for c, f in zip(ceil, facts, strict=True)) / max(1, sum(facts))
        print(
            f"| {b} | {len(pooled)} | {shares} | {density:.1f} | {100 * weighted:.1f}%"
            f" | {100 * sum(ceil) / len(ceil):.1f}% |"
        )


def ceiling_table(rows: dict[str, list[dict[str, Outcome]]]) -> None:
    """Per budget, glyphfold's pool: the exact fact ceiling (fact_ceiling) against what
    glyphfold sends with every fact on its pages read (the bound of a page reader)."""
    print("\nthe fact ceiling under SPEC §5.5/§5.9 (fact_ceiling; issue 20):")
    print(
        "| budget | sessions | ceiling (pooled) | ceiling, session mean | reach (pooled)"
        " | best uniform cap level, then oldest first (pooled; session mean)"
        " | the room as a list of the facts (pooled; session mean)"
        " | glyphfold + every page fact read (pooled) | session mean |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for b, outs in rows.items():
        pooled = [o["glyphfold"] for o in outs if all(x.fits for x in o.values())]
        pooled = [g for g in pooled if g.ceiling and g.ceiling["facts"]]
        if not pooled:
            continue
        tot = sum(g.ceiling["facts"] for g in pooled)
        ceil = sum(g.ceiling["ceiling"] for g in pooled)
        reach = sum(g.ceiling["reach"] for g in pooled)
        lev = sum(g.ceiling["ceiling_level"] for g in pooled)
        lst = sum(g.ceiling["list_bound"] for g in pooled)
        mean_b = sum(g.ceiling["list_bound"] / g.ceiling["facts"] for g in pooled) / len(pooled)
        mean_l = sum(g.ceiling["ceiling_level"] / g.ceiling["facts"] for g in pooled) / len(pooled)
        got = [sum(g.recovered.values()) + sum(g.lost.get("unread", {}).values()) for g in pooled]
        mean_c = sum(g.ceiling["ceiling"] / g.ceiling["facts"] for g in pooled) / len(pooled)
        mean_g = sum(n / g.ceiling["facts"] for n, g in zip(got, pooled, strict=True)) / len(pooled)
        print(
            f"| {b} | {len(pooled)} | {100 * ceil / tot:.1f}% ({ceil}/{tot}) | {100 * mean_c:.1f}%"
            f" | {100 * reach / tot:.1f}% | {100 * lev / tot:.1f}%; {100 * mean_l:.1f}%"
            f" | {100 * lst / tot:.1f}%; {100 * mean_b:.1f}%"
            f" | {100 * sum(got) / tot:.1f}% | {100 * mean_g:.1f}% |"
        )


if __name__ == "__main__":
    sys.exit(main())
