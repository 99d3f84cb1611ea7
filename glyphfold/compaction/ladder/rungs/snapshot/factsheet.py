"""Factsheet: exact strings a vision reader gets wrong, sent as text beside the pages.

A glyph page keeps every word, but a model reading pixels misreads exactly the
strings where one wrong character is fatal: hex ids, UUIDs, hashes, file
paths, URLs, long numbers, error codes (SPEC §5, issue 5). Those are extracted
from the imaged text and sent verbatim as a compact, deduplicated, capped list.
The pages hold every word, so the list is not a second copy: when it is full, what
a page reads worst goes in first (hashes, hex ids, long paths and URLs, issue 20).
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from dataclasses import dataclass, replace
from itertools import accumulate

from glyphfold.checks import check_int

# kind -> pattern; order matters: earlier kinds claim their span first, so a
# UUID is not also reported as five hex fragments.
_PATTERNS: dict[str, re.Pattern[str]] = {
    # with a scheme; or host:port without one (``localhost:8000/index.html``: a server
    # address, not a path); trailing punctuation belongs to the sentence
    "url": re.compile(
        r"https?://[^\s<>\"'`)\]}]+[^\s<>\"'`)\]}.,;:!?]"
        r"|(?<![\w.@/:-])(?:localhost|\d{1,3}(?:\.\d{1,3}){3}):\d{2,5}\b"
        r"(?:/[^\s<>\"'`)\]}]*[^\s<>\"'`)\]}.,;:!?])?"
        r"|(?<![\w.@/:-])(?:[\w-]+\.)+[A-Za-z]{2,}:\d{2,5}"
        r"/(?:[^\s<>\"'`)\]}]*[^\s<>\"'`)\]}.,;:!?/])?"
    ),
    "uuid": re.compile(
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    ),
    # hashes: 32 (md5), 40 (sha1/git), 64 (sha256) hex digits
    "hash": re.compile(r"\b(?:[0-9a-f]{64}|[0-9a-f]{40}|[0-9a-f]{32})\b"),
    # hex ids: 0x-prefixed, or 7-31 hex digits that contain at least one digit and one letter
    "hex": re.compile(
        r"\b0x[0-9a-fA-F]{4,}\b|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,31}\b"
    ),
    # error codes: E1234, ERR_FOO_BAR, HTTP 404-style, errno names, ruff/pylint codes
    "error": re.compile(
        r"\b(?:E[A-Z]{2,}[A-Z0-9_]*|ERR_[A-Z0-9_]+|[A-Z]{1,4}\d{3,5}|HTTP [1-5]\d\d)\b"
    ),
    # absolute (``/usr/lib/x.py``, also after ``path=``), home- or dot-relative, or
    # relative with an extension; never the tail of a longer token (``host:8000/x``),
    # and a component never ends in a dot (``/srv/app.`` ends a sentence)
    "path": re.compile(
        r"(?<![\w.@+:/~-])(?:~|\.{1,2})?(?:/[\w.@+-]*[\w@+-]){2,}/?"
        r"|(?<![\w.@+:/~-])[\w.-]+(?:/[\w.@+-]+)+\.[A-Za-z0-9]{1,6}\b"
    ),
    "number": re.compile(r"(?<![\w.])\d{5,}(?![\w.])"),
}

KINDS: tuple[str, ...] = tuple(_PATTERNS)


@dataclass(frozen=True, slots=True)
class FactsheetConfig:
    """Caps for the factsheet; defaults keep it well under 1% of a typical middle."""

    max_items: int = 120  # a list longer than this stops being read
    max_chars: int = 3000  # ~750 tokens: cheap next to the pages it accompanies
    min_len: int = 4  # shorter strings are read reliably from pixels
    kinds: tuple[str, ...] = KINDS

    def __post_init__(self) -> None:
        check_int("factsheet max_items", self.max_items, minimum=0, error=ValueError)
        check_int("factsheet max_chars", self.max_chars, minimum=0, error=ValueError)
        check_int("factsheet min_len", self.min_len, minimum=1, error=ValueError)
        unknown = [k for k in self.kinds if k not in _PATTERNS]
        if unknown:
            msg = f"unknown factsheet kind(s) {unknown}; valid kinds: {list(KINDS)}"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str
    value: str
    offset: int  # rank in order of first appearance in the source text
    off_page: bool = False  # from words cut to fit: on no page, sent only here


_HTTP_STATUS = re.compile(r"HTTP [1-5]\d\d\b")
_DIGIT_LINES = re.compile(r"^[^\n\d]*\d[^\n]*$", re.MULTILINE)

# a token holding one of these is claimed whole: no hex/number fragments from a UUID
_CLAIMING = frozenset({"url", "uuid", "hash"})


CHUNK_CHARS = 65_536  # facts come in first-appearance order: stop once the cap is full


def extract_facts(
    text: str, *, config: FactsheetConfig | None = None, scans: FactScans | None = None
) -> list[Fact]:
    """Find exact identifiers in ``text``: deduplicated, first occurrence order, capped.

    A transcript repeats the same paths and ids many times and most of its
    tokens are plain words, so each kind's pattern runs once (in C) over the
    distinct whitespace-separated tokens that can hold it, joined by newlines.
    The text is read in chunks, in order, and reading stops once the cap is
    full: a later fact could only rank after the ones already kept.
    ``HTTP 404``-style codes, which contain a space, are searched in the text.
    ``scans``: the scans of texts already read (:class:`FactScans`), shared by calls
    with other caps (the same facts, read once).
    """
    cfg = config or FactsheetConfig()
    scan = (scans or FactScans()).of(text, cfg)
    # read on past the cap (bounded): what a page reads worst is chosen first, below
    found = scan.upto(cfg.max_items * _READ_ON, cfg.max_chars * _READ_ON)
    ordered = sorted(found, key=lambda kv: kv[1][:2])  # first appearance
    chosen: set[str] = set()
    total = 0
    # the pages hold every word; the factsheet is for what pixels get wrong: the
    # hardest to read first (hashes and hex ids, then long paths and URLs), each kind
    # in order of first appearance, until the caps are full
    for value, _ in sorted(ordered, key=lambda kv: _risk(kv[1][2], kv[0])):
        cost = len(value) + 3
        if len(chosen) >= cfg.max_items or total + cost > cfg.max_chars:
            continue
        chosen.add(value)
        total += cost
    out: list[Fact] = []
    for value, (_, _, kind) in ordered:
        if value in chosen:
            out.append(Fact(kind, value, len(out)))
    return out


class FactScan:
    """The chunk-by-chunk reading of one text, kept so that other caps reuse it.

    What the first ``i`` chunks yield does not depend on the caps (only where reading
    stops does), so a scan records, after each chunk, how many facts and chars it has
    found; a call with other caps replays those marks and reads on only past them.
    """

    def __init__(self, text: str, kinds: list[str], minimum: int) -> None:
        self.text = text
        self.kinds = kinds
        self.minimum = minimum
        self.pos = 0
        self.rank: dict[str, int] = {}
        self.found: dict[str, tuple[int, int, str]] = {}  # value -> (token rank, pos, kind)
        self.claimed: set[str] = set()
        self.marks: list[tuple[int, int]] = [(0, 0)]  # (facts, chars) after each chunk
        self._lock = threading.Lock()  # the build reads facts on a worker thread

    def upto(self, want_items: int, want_chars: int) -> list[tuple[str, tuple[int, int, str]]]:
        """The facts found when reading stops: at the first chunk end where ``want_items``
        facts or ``want_chars`` chars are found, or at the end of the text."""
        with self._lock:
            for items, chars in self.marks:
                if items >= want_items or chars >= want_chars:
                    return list(self.found.items())[:items]
            text, n = self.text, len(self.text)
            items, chars = self.marks[-1]
            while self.pos < n and items < want_items and chars < want_chars:
                pos = self.pos
                end = n if pos + CHUNK_CHARS >= n else text.find("\n", pos + CHUNK_CHARS)
                end = n if end == -1 else end
                self.pos = end
                _scan_chunk(
                    text[pos:end], self.kinds, self.minimum, self.rank, self.found, self.claimed
                )
                chars += sum(len(v) + 3 for v in list(self.found)[items:])
                items = len(self.found)
                self.marks.append((items, chars))
            return list(self.found.items())[:items]


class FactScans:
    """The scans of the texts one caller reads (:func:`extract_facts` ``scans=``): a text
    is read once whatever caps it is asked under (the planner prices the factsheet of a
    run's text, the build extracts it with wider caps for the words it cut)."""

    def __init__(self) -> None:
        self._scans: dict[tuple[str, tuple[str, ...], int], FactScan] = {}
        self._lock = threading.Lock()

    def of(self, text: str, cfg: FactsheetConfig) -> FactScan:
        kinds = [k for k in KINDS if k in cfg.kinds]
        key = (text, tuple(kinds), cfg.min_len)
        with self._lock:
            scan = self._scans.get(key)
            if scan is None:
                scan = self._scans[key] = FactScan(text, kinds, cfg.min_len)
            return scan


_READ_ON = 4  # candidates read: up to four times the caps
_LONG = 24  # a path or URL this long wraps on a page and is misread most


def _risk(kind: str, value: str) -> int:
    """How badly a page reader gets ``value`` wrong (0: worst; taken first)."""
    if kind in ("hash", "uuid", "hex"):
        return 0
    if kind in ("url", "path"):
        return 1 if len(value) >= _LONG else 2
    return 3


def _scan_chunk(
    chunk: str,
    kinds: list[str],
    minimum: int,
    rank: dict[str, int],
    found: dict[str, tuple[int, int, str]],
    claimed: set[str],
) -> None:
    # str.split and dict.fromkeys run in C; the Python filter sees distinct tokens only
    cands = [
        t
        for t in dict.fromkeys(chunk.split())
        if len(t) >= minimum and t not in rank and not (t.isalpha() and t.islower())
    ]
    base = len(rank)
    for k, t in enumerate(cands):
        rank[t] = base + k
    if "error" in kinds:
        for m in _HTTP_STATUS.finditer(chunk):
            found.setdefault(m.group(0), (base, -1, "error"))
    if not cands:
        return
    # route tokens to kinds with C-speed tests (``in``, one regex over the joined tokens)
    with_digit = _DIGIT_LINES.findall("\n".join(cands))
    pools = {
        "url": [t for t in cands if ":" in t],
        "uuid": [t for t in cands if t.count("-") >= 4],
        "hash": [t for t in cands if len(t) >= 32],
        "hex": with_digit,
        "error": [t for t in cands if "E" in t] + with_digit,
        "path": [t for t in cands if "/" in t],
        "number": with_digit,
    }
    for kind in kinds:
        pool = [t for t in pools[kind] if t not in claimed] if claimed else pools[kind]
        if not pool:
            continue
        starts = list(accumulate((len(t) + 1 for t in pool[:-1]), initial=0))
        for m in _PATTERNS[kind].finditer("\n".join(pool)):
            value = m.group(0)
            if len(value) < minimum or value in found:
                continue
            k = bisect_right(starts, m.start()) - 1
            found[value] = (rank[pool[k]], m.start() - starts[k], kind)
            if kind in _CLAIMING:
                claimed.add(pool[k])


def run_facts(
    text: str,
    source: str,
    *,
    config: FactsheetConfig | None = None,
    scans: FactScans | None = None,
) -> list[Fact]:
    """The facts of one snapshot whose pages show ``text`` of its full ``source``.

    When the pages hold every word (``source`` is ``text``, or empty) this is
    :func:`extract_facts` of the pages. When words were cut to fit (SPEC §5.9), the
    identifiers of the cut words come first: they are on no page, so the factsheet is
    the only place they are sent (what a page reads worst first, as below); the
    pages' own fill what the caps leave. Same caps either way, so the planner's price
    of a run's factsheet (its whole text's) holds.
    """
    cfg = config or FactsheetConfig()
    if not source or source == text:
        return extract_facts(text, config=cfg, scans=scans)
    wide = replace(cfg, max_items=cfg.max_items * _READ_ON, max_chars=cfg.max_chars * _READ_ON)
    off = [f for f in extract_facts(source, config=wide, scans=scans) if f.value not in text]
    chosen: set[str] = set()
    total = 0
    for f in sorted(off, key=lambda f: _risk(f.kind, f.value)):
        cost = len(f.value) + 3
        if len(chosen) >= cfg.max_items or total + cost > cfg.max_chars:
            continue
        chosen.add(f.value)
        total += cost
    out = [
        Fact(f.kind, f.value, k, off_page=True)
        for k, f in enumerate(f for f in off if f.value in chosen)
    ]
    room = replace(cfg, max_items=cfg.max_items - len(out), max_chars=cfg.max_chars - total)
    out += [
        Fact(f.kind, f.value, len(out) + f.offset)
        for f in extract_facts(text, config=room, scans=scans)
    ]
    return out


OFF_PAGE_HEADER = (
    "Identifiers of the words cut from these pages to fit (on no page; the snapshot keeps "
    "them for a later pass):"
)


def format_factsheet(facts: list[Fact]) -> str:
    """Render facts as a compact text list grouped by kind (empty string when none);
    the identifiers of cut words (on no page) under a header of their own."""
    if not facts:
        return ""
    blocks = []
    for off, header in (
        (False, "Exact identifiers from the pages (copy these, do not re-read them from pixels):"),
        (True, OFF_PAGE_HEADER),
    ):
        groups: dict[str, list[str]] = {}
        for f in facts:
            if f.off_page == off:
                groups.setdefault(f.kind, []).append(f.value)
        if not groups:
            continue
        lines = [header]
        for kind in KINDS:
            if kind in groups:
                lines.append(f"{kind}: " + " ".join(groups[kind]))
        blocks.append("\n".join(lines))
    return "\n".join(blocks)
