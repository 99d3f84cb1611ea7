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
from bisect import bisect_right
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from itertools import accumulate, count, islice
from typing import TypeAlias

import numpy as np

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
    ``scans``: the readings of texts already seen (:class:`FactScans`), so that the
    same text under other caps is not read again (the snapshot planner prices one run
    text under the caps of several choices).
    """
    cfg = config or FactsheetConfig()
    kinds = tuple(k for k in KINDS if k in cfg.kinds)
    scan = FactScan(text, kinds, cfg.min_len) if scans is None else scans.of(text, kinds, cfg)
    # read on past the cap (bounded): what a page reads worst is chosen first, below
    found = scan.entries(cfg.max_items * _READ_ON, cfg.max_chars * _READ_ON)
    ordered = sorted(found, key=_first_seen)  # first appearance
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


def _first_seen(kv: tuple[str, tuple[int, int, str]]) -> tuple[int, int]:
    return kv[1][0], kv[1][1]


class FactScan:
    """The identifiers of one text in the order they are found, read chunk by chunk as
    far as a caller's caps need (:func:`extract_facts`'s reading, resumable).

    Reading stops after the first chunk that brings the found values to the caps, so
    what a reading with given caps finds is the values found up to that chunk: every
    chunk's totals are kept, and a reading with larger caps continues where the last
    one stopped.
    """

    __slots__ = (
        "_chars",
        "_claimed",
        "_found",
        "_kinds",
        "_marks",
        "_matches",
        "_min",
        "_next",
        "_pos",
        "_rank",
        "text",
    )

    def __init__(
        self,
        text: str,
        kinds: tuple[str, ...],
        minimum: int,
        matches: TokenMatches | None = None,
    ) -> None:
        self.text = text
        self._kinds = list(kinds)
        self._min = minimum
        # each distinct token's matches: shared by the texts of one FactScans (the run
        # texts of one rung call hold the same tokens)
        self._matches = TokenMatches(minimum) if matches is None else matches
        self._rank: dict[str, int] = {}  # token -> rank of its first appearance
        self._next = 0  # the rank of the next new token
        self._found: dict[str, tuple[int, int, str]] = {}  # value -> (token rank, pos, kind)
        self._claimed: set[str] = set()
        self._chars = 0  # chars of the values found (+3 each: the list's separators)
        self._marks: list[tuple[int, int]] = []  # (values, chars) after each chunk read
        self._pos = 0

    def entries(self, want_items: int, want_chars: int) -> list[tuple[str, tuple[int, int, str]]]:
        """(value, (token rank, offset in token, kind)) of what a reading stopping at
        ``want_items`` values or ``want_chars`` chars finds, in the order found."""
        items = chars = k = 0
        while items < want_items and chars < want_chars:
            if k == len(self._marks) and not self._read():
                break
            items, chars = self._marks[k]
            k += 1
        found = self._found
        return list(found.items()) if items == len(found) else list(islice(found.items(), items))

    def _read(self) -> bool:
        """Read the next chunk (False: the text is read to its end)."""
        text, pos = self.text, self._pos
        n = len(text)
        if pos >= n:
            return False
        end = n if pos + CHUNK_CHARS >= n else text.find("\n", pos + CHUNK_CHARS)
        end = n if end == -1 else end
        self._pos = end
        found = self._found
        before = len(found)
        self._scan(text[pos:end])
        self._chars += sum(len(v) + 3 for v in islice(found, before, None))
        self._marks.append((len(found), self._chars))
        return True

    def _scan(self, chunk: str) -> None:
        """Find the values of ``chunk``'s tokens not seen in an earlier chunk.

        Each kind's pattern finds, in order, the matches in the tokens that can hold
        it (first appearance order): a match never spans whitespace, so a token's
        matches are its own whatever the other tokens, and are found once per token
        (:class:`TokenMatches`); what is new here is which value each claims first.
        """
        # only the tokens a pattern can match are ranked (their order is all the ranks
        # say); dict.fromkeys, zip and the set operations run in C
        toks = dict.fromkeys(candidate_tokens(chunk, self._min))
        rank, found, claimed = self._rank, self._found, self._claimed
        base = self._next
        fresh_set: AbstractSet[str]
        if rank:
            fresh: Iterable[str] = [t for t in toks if t not in rank]
            fresh_set = set(fresh)
        else:
            fresh = fresh_set = toks.keys()
        rank.update(zip(fresh, count(base)))
        self._next = len(rank)
        if "error" in self._kinds:
            for m in _HTTP_STATUS.finditer(chunk):
                found.setdefault(m.group(0), (base, -1, "error"))
        tm = self._matches
        new = fresh_set - tm.seen
        if new:
            tm.add(new)
        hit = fresh_set & tm.hits.keys()
        if not hit:
            return
        hits = tm.hits
        by_kind: list[list[tuple[str, str, int]]] = [[] for _ in KINDS]
        for t in sorted(hit, key=rank.__getitem__):
            for i, value, offset in hits[t]:
                by_kind[i].append((t, value, offset))
        minimum = self._min
        # each kind in turn over the tokens, as one pattern over the tokens joined would
        # find them. Error codes: the tokens with an "E" first, then those with a digit
        # (a token with both adds nothing the second time)
        for kind in self._kinds:
            seq = by_kind[_KIND_INDEX[kind]]
            if not seq:
                continue
            if kind == "error":
                seq = [e for e in seq if "E" in e[0]] + [e for e in seq if "E" not in e[0]]
            claims = kind in _CLAIMING
            # a token claimed by an earlier kind is not read again (this kind's own
            # matches claim it only for the kinds after it)
            skip = set(claimed) if claims else claimed
            for t, value, offset in seq:
                if t in skip or len(value) < minimum or value in found:
                    continue
                found[value] = (rank[t], offset, kind)
                if claims:
                    claimed.add(t)


# str.split()'s whitespace in the Basic Multilingual Plane (none lies beyond it)
_WHITESPACE = (
    *range(9, 14),
    *range(28, 33),
    0x85,
    0xA0,
    0x1680,
    *range(0x2000, 0x200B),
    0x2028,
    0x2029,
    0x202F,
    0x205F,
    0x3000,
)
_ARRAYS_FROM = 1024  # chunks this long or longer may be read with arrays (measured crossover)
_SAMPLE = 4096  # chars of a chunk whose density of non-word characters picks the reading
_SPARSE = 16  # arrays when at most 1 in this many sampled chars is not a-z or whitespace
_CLASS: np.ndarray | None = None  # code point (BMP) -> 1 whitespace, 2 anything but a-z


def _classes() -> np.ndarray:
    global _CLASS  # built on first use: an import does not pay for it
    if _CLASS is None:
        table = np.full(0x10000, 2, dtype=np.uint8)
        table[ord("a") : ord("z") + 1] = 0
        table[list(_WHITESPACE)] = 1
        _CLASS = table
    return _CLASS


def _others(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the whitespace, positions of the characters other than a-z and
    whitespace) in ``text``."""
    data = text.encode("utf-16-le", "surrogatepass")
    if len(data) == 2 * len(text):  # one UTF-16 unit per code point: positions agree
        cp: np.ndarray = np.frombuffer(data, dtype=np.uint16)
    else:  # astral code points (never whitespace, never a-z): one unit each in UTF-32
        cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    # positions of everything but a-z (unsigned: below "a" wraps to a large value)
    at = np.flatnonzero(np.subtract(cp, 97, dtype=cp.dtype) >= 26)
    values = cp[at]
    if cp.dtype != np.uint16:
        values = np.minimum(values, 0xFFFF)  # astral: "anything but a-z", as U+FFFF is
    cls = _classes()[values]
    return at[cls == 1], at[cls == 2]


def candidate_tokens(chunk: str, minimum: int) -> list[str]:
    """The distinct whitespace-separated tokens of ``chunk`` that a pattern can match (at
    least ``minimum`` chars, not a plain lowercase word), in order of first appearance:
    what ``[t for t in dict.fromkeys(chunk.split()) if len(t) >= minimum and not
    (t.isalpha() and t.islower())]`` gives.

    Most tokens of a transcript are plain words: only the characters other than a-z are
    looked at (with arrays), and only the tokens holding one are cut out of the chunk,
    not every token (``str.split`` makes an object of each: at 10^5 messages, 1.7e7)."""
    # arrays pay when few characters are anything but a-z or whitespace (prose, logs of
    # words); code and paths are dense with them, and a cut-out token per few characters
    # costs more than str.split: a sample of the chunk decides
    if len(chunk) < _ARRAYS_FROM or _others(chunk[:_SAMPLE])[1].size * _SPARSE > min(
        len(chunk), _SAMPLE
    ):
        return [
            t
            for t in dict.fromkeys(chunk.split())
            if len(t) >= minimum and not (t.isalpha() and t.islower())
        ]
    spaces, others = _others(chunk)
    if not len(others):
        return []
    # each such character's token: between the whitespace before and after it (once)
    k = np.searchsorted(spaces, others)
    if len(k) > 1:
        k = k[np.concatenate(([True], k[1:] != k[:-1]))]
    bounds = np.concatenate(([-1], spaces, [len(chunk)]))
    starts = (bounds[k] + 1).tolist()
    ends = bounds[k + 1].tolist()
    distinct = dict.fromkeys(
        [chunk[a:b] for a, b in zip(starts, ends, strict=True) if b - a >= minimum]
    )
    return [t for t in distinct if not (t.isalpha() and t.islower())]


class TokenMatches:
    """Every kind's matches in each distinct token seen (tokens of at least ``minimum``
    chars that are not plain lowercase words: the others are never read)."""

    __slots__ = ("hits", "minimum", "seen")

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum
        self.seen: set[str] = set()
        self.hits: dict[str, TokenHits] = {}  # only the tokens something matches in

    def add(self, tokens: set[str]) -> None:
        """Match ``tokens`` (none seen before)."""
        self.seen |= tokens
        minimum = self.minimum
        cands = [t for t in tokens if len(t) >= minimum and not (t.isalpha() and t.islower())]
        if cands:
            _match_tokens(cands, self.hits)


class FactScans:
    """The readings of the texts seen (:class:`FactScan`), by text, kinds and minimum
    length, and the matches of their tokens: the snapshot rung keeps one per call (its
    choices share run texts, and the texts share most tokens)."""

    __slots__ = ("_matches", "_scans")

    def __init__(self) -> None:
        self._scans: dict[tuple[str, tuple[str, ...], int], FactScan] = {}
        self._matches: dict[int, TokenMatches] = {}  # by minimum length

    def of(self, text: str, kinds: tuple[str, ...], cfg: FactsheetConfig) -> FactScan:
        key = (text, kinds, cfg.min_len)
        scan = self._scans.get(key)
        if scan is None:
            tm = self._matches.get(cfg.min_len)
            if tm is None:
                tm = self._matches[cfg.min_len] = TokenMatches(cfg.min_len)
            scan = self._scans[key] = FactScan(text, kinds, cfg.min_len, tm)
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


# a token's matches: (kind's index in KINDS, value, offset in the token), kinds in order
TokenHits: TypeAlias = list[tuple[int, str, int]]
_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
_HEX_SHAPE = bytes(
    ord("h") if chr(b) in "0123456789abcdef" else b if b == 10 else ord(".") for b in range(256)
)
_HEX32, _HEX7 = b"h" * 32, b"h" * 7


def _match_tokens(tokens: list[str], hits: dict[str, TokenHits]) -> None:
    """Every kind's matches in each of ``tokens``, into ``hits`` (tokens with one).

    Tokens go to a kind's pattern only when they hold what every match needs (a ":"
    for a URL, a digit for a number, ...), and each pattern runs once (in C) over
    those tokens joined by newlines."""
    joined = "\n".join(tokens)
    with_digit = _DIGIT_LINES.findall(joined)
    # each token's lowercase hex digits as "h", the rest as "." (bytes.translate: C speed;
    # UTF-8 never puts a newline or a hex digit inside a multibyte character)
    shapes = joined.encode("utf-8", "surrogatepass").translate(_HEX_SHAPE).split(b"\n")
    pools = {
        "url": [t for t in tokens if ":" in t],
        "uuid": [t for t in tokens if t.count("-") >= 4],
        # a hash is 32+ hex digits in a row, a bare hex id 7+ (or 0x...)
        "hash": [t for t, h in zip(tokens, shapes, strict=True) if _HEX32 in h],
        "hex": [t for t, h in zip(tokens, shapes, strict=True) if _HEX7 in h or "0x" in t],
        "error": list(dict.fromkeys([t for t in tokens if "E" in t] + with_digit)),
        "path": [t for t in tokens if "/" in t],
        "number": with_digit,
    }
    acc: dict[str, TokenHits] = {}
    for i, kind in enumerate(KINDS):
        pool = pools[kind]
        if not pool:
            continue
        starts = list(accumulate((len(t) + 1 for t in pool[:-1]), initial=0))
        for m in _PATTERNS[kind].finditer("\n".join(pool)):
            a = m.start()
            k = bisect_right(starts, a) - 1
            t = pool[k]
            found = acc.get(t)
            if found is None:
                acc[t] = [(i, m.group(0), a - starts[k])]
            else:
                found.append((i, m.group(0), a - starts[k]))
    hits.update(acc)


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
    of a run's factsheet (its whole text's) holds. ``scans``: as :func:`extract_facts`
    takes them (the build reads the source the planner priced: at 10^5 messages a
    100M-char text, read again per fit round without them).
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
