"""The factsheet is read once per text and its tokens matched once per call (issue 22).

SPEC §5 (the factsheet of exact identifiers beside the pages). The snapshot planner
prices the factsheet of the same run text under the caps of several choices, and of
run texts that share most of their tokens; :class:`FactScans` keeps each text's reading
(resumed when larger caps need more of it) and each distinct token's matches. The facts
must be exactly what the reading of each text alone finds: checked here against the
previous algorithm, kept below as the reference, over every kind, caps that stop the
reading early, texts of several chunks and shared scans used in any order.
"""

from __future__ import annotations

import json
import random
import re
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path

import pytest

from glyphfold.compaction.ladder.rungs.snapshot import factsheet as fs
from glyphfold.compaction.ladder.rungs.snapshot.factsheet import (
    CHUNK_CHARS,
    KINDS,
    FactScan,
    FactScans,
    FactsheetConfig,
    extract_facts,
)

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
if not REALDATA.is_dir():
    REALDATA = Path("/work/shared/realdata")


def reference_facts(text: str, cfg: FactsheetConfig) -> list[tuple[str, str, int]]:
    """The factsheet as it was read before scans were shared (each kind's pattern over
    the not yet claimed candidate tokens of a chunk, joined by newlines)."""
    kinds = [k for k in KINDS if k in cfg.kinds]
    rank: dict[str, int] = {}
    found: dict[str, tuple[int, int, str]] = {}
    claimed: set[str] = set()
    found_chars = pos = 0
    n = len(text)
    while pos < n and len(found) < cfg.max_items * 4 and found_chars < cfg.max_chars * 4:
        end = n if pos + CHUNK_CHARS >= n else text.find("\n", pos + CHUNK_CHARS)
        end = n if end == -1 else end
        chunk, pos, before = text[pos:end], end, len(found)
        cands = [
            t
            for t in dict.fromkeys(chunk.split())
            if len(t) >= cfg.min_len and t not in rank and not (t.isalpha() and t.islower())
        ]
        base = len(rank)
        for k, t in enumerate(cands):
            rank[t] = base + k
        if "error" in kinds:
            for m in re.finditer(r"HTTP [1-5]\d\d\b", chunk):
                found.setdefault(m.group(0), (base, -1, "error"))
        if cands:
            digit = re.findall(r"^[^\n\d]*\d[^\n]*$", "\n".join(cands), re.MULTILINE)
            pools = {
                "url": [t for t in cands if ":" in t],
                "uuid": [t for t in cands if t.count("-") >= 4],
                "hash": [t for t in cands if len(t) >= 32],
                "hex": digit,
                "error": [t for t in cands if "E" in t] + digit,
                "path": [t for t in cands if "/" in t],
                "number": digit,
            }
            for kind in kinds:
                pool = [t for t in pools[kind] if t not in claimed]
                if not pool:
                    continue
                starts = list(accumulate((len(t) + 1 for t in pool[:-1]), initial=0))
                for m in fs._PATTERNS[kind].finditer("\n".join(pool)):
                    value = m.group(0)
                    if len(value) < cfg.min_len or value in found:
                        continue
                    k = bisect_right(starts, m.start()) - 1
                    found[value] = (rank[pool[k]], m.start() - starts[k], kind)
                    if kind in ("url", "uuid", "hash"):
                        claimed.add(pool[k])
        found_chars += sum(len(v) + 3 for v in list(found)[before:])
    ordered = sorted(found.items(), key=lambda kv: kv[1][:2])
    chosen: set[str] = set()
    total = 0
    for value, _ in sorted(ordered, key=lambda kv: fs._risk(kv[1][2], kv[0])):
        if len(chosen) >= cfg.max_items or total + len(value) + 3 > cfg.max_chars:
            continue
        chosen.add(value)
        total += len(value) + 3
    out = [(kind, value) for value, (_, _, kind) in ordered if value in chosen]
    return [(kind, value, k) for k, (kind, value) in enumerate(out)]


def _as_tuples(facts: list[fs.Fact]) -> list[tuple[str, str, int]]:
    return [(f.kind, f.value, f.offset) for f in facts]


PIECES = [
    "see https://example.com/a/b?x=1, then http://localhost:8000/index.html.",
    "localhost:8000/api and 10.0.0.1:8080 and api.example.org:443/v1/x",
    "uuid 123e4567-e89b-12d3-a456-426614174000 (again 123e4567-e89b-12d3-a456-426614174000)",
    "sha " + "0123456789abcdef" * 4 + " git " + "deadbeef" * 5 + " md5 " + "a1b2c3d4" * 4,
    "letters only " + "deadbeef" * 4 + " and DEADBEEF" * 2,
    "hex 0x7ffe1234 ids 3f2a9c1 abc1234 1234567 badcafe1 a1b2c3d4e5",
    "errors E1234 ERR_CONN_REFUSED EACCES ENOENT HTTP 404 HTTP 503 PEP8 F401 W0612",
    "Error: ExAmple E999 E12 EE1234 xE1234y",
    "paths /usr/lib/python3.11/site.py ~/work/x.py ../a/b/c ./run.sh src/glyphfold/api.py",
    "path=/srv/app. host:8000/x /a/b/ /usr//lib a/b.tar.gz",
    "numbers 12345 123456789 3.14159 v12345 12345.6 ١٢٣٤٥٦ ４５６７８",
    "mixed https://x.io/commit/" + "0123456789abcdef" * 4 + " /tmp/" + "a1b2c3d" + ".log",
    "url-with-hex http://h.io/0x1234abcd/3f2a9c1e and /x/3f2a9c1e/y.py 3f2a9c1e",
    "short ab1 E12 /a 1234 and plain words here that are ignored",
    "surrogate \ud800 token x\ud800y/z.py and emoji 🚀/rocket.py",
    "tabs\tand\u00a0nbsp\u2003em /p/q.txt\x1c/r/s.txt",
]


def _text(rnd: random.Random, n_lines: int) -> str:
    lines = []
    for _ in range(n_lines):
        words = [rnd.choice(PIECES)]
        if rnd.random() < 0.5:  # unique values so that long texts keep finding new ones
            words.append(f"/var/log/app{rnd.randrange(10**6)}/run{rnd.randrange(99)}.log")
            words.append(f"{rnd.randrange(16**9):09x}q id{rnd.randrange(10**7)}")
        lines.append(" ".join(words))
    return "\n".join(lines)


CONFIGS = [
    FactsheetConfig(),
    FactsheetConfig(max_chars=200),
    FactsheetConfig(max_items=3),
    FactsheetConfig(max_items=0),
    FactsheetConfig(max_chars=0),
    FactsheetConfig(max_items=5000, max_chars=200_000),
    FactsheetConfig(min_len=8),
    FactsheetConfig(min_len=1, kinds=("number", "error", "path")),
    FactsheetConfig(kinds=("hex", "hash")),
]


def _texts() -> list[str]:
    rnd = random.Random(22)
    texts = [_text(rnd, n) for n in (1, 3, 10, 40, 200)]
    texts.append(_text(rnd, 3000))  # several chunks: the reading stops early or goes on
    texts += [texts[-1][: CHUNK_CHARS + 7], texts[3] + "\n" + texts[2], " ".join(PIECES)]
    texts += ["", "   \n\t ", "no identifiers at all here"]
    return texts


def test_each_text_and_caps_find_what_the_reference_reading_finds():
    for text in _texts():
        for cfg in CONFIGS:
            want = reference_facts(text, cfg)
            assert _as_tuples(extract_facts(text, config=cfg)) == want, (text[:80], cfg)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shared_scans_in_any_order_find_the_same(seed):
    """One FactScans for every text and caps, used in a shuffled order: a reading made
    with small caps is resumed for larger ones, and a token matched for one text is
    not matched again for the next."""
    jobs = [(t, c) for t in _texts() for c in CONFIGS]
    random.Random(seed).shuffle(jobs)
    scans = FactScans()
    for text, cfg in jobs:
        got = _as_tuples(extract_facts(text, config=cfg, scans=scans))
        assert got == reference_facts(text, cfg), (text[:80], cfg)


def test_a_text_is_read_once_whatever_the_caps(monkeypatch):
    """Small caps stop the reading after the first chunk; larger ones continue it, and
    caps already served read nothing."""
    text = _text(random.Random(5), 3000)
    assert len(text) > 3 * CHUNK_CHARS
    reads: list[int] = []
    real = FactScan._scan

    def counting(self: FactScan, chunk: str) -> None:
        reads.append(len(chunk))
        real(self, chunk)

    monkeypatch.setattr(FactScan, "_scan", counting)
    scans = FactScans()
    small = FactsheetConfig(max_items=10)
    large = FactsheetConfig(max_items=10**6, max_chars=10**8)
    extract_facts(text, config=small, scans=scans)
    assert len(reads) == 1
    extract_facts(text, config=large, scans=scans)
    assert sum(reads) >= len(text) - len(reads)  # read to its end, each chunk once
    n = len(reads)
    for cfg in (small, large, FactsheetConfig(max_items=50)):
        extract_facts(text, config=cfg, scans=scans)
    assert len(reads) == n


def test_tokens_are_matched_once_per_scans(monkeypatch):
    seen: list[str] = []
    real = fs._match_tokens

    def counting(tokens: list[str], hits: dict) -> None:
        seen.extend(tokens)
        real(tokens, hits)

    monkeypatch.setattr(fs, "_match_tokens", counting)
    scans = FactScans()
    a = " ".join(PIECES)
    extract_facts(a, scans=scans)
    first = len(seen)
    extract_facts(a + "\n/new/path/x.py", scans=scans)
    assert len(seen) == first + 1  # only the new token
    assert len(seen) == len(set(seen))


@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata absent")
def test_real_session_texts_find_the_same():
    """The message texts of real sessions (bounded: a dozen files), alone and joined."""
    scans = FactScans()
    files = sorted(REALDATA.glob("*.openai.json"))[::12][:12]
    assert files
    joined = []
    for f in files:
        msgs = json.loads(f.read_text(encoding="utf-8"))
        text = "\n".join(
            m["content"] if isinstance(m.get("content"), str) else json.dumps(m) for m in msgs
        )
        joined.append(text)
        for cfg in (FactsheetConfig(), FactsheetConfig(max_chars=600)):
            want = reference_facts(text, cfg)
            assert _as_tuples(extract_facts(text, config=cfg)) == want, f.name
            assert _as_tuples(extract_facts(text, config=cfg, scans=scans)) == want, f.name
    big = "\n".join(joined)
    assert _as_tuples(extract_facts(big, scans=scans)) == reference_facts(big, FactsheetConfig())


def _split_candidates(chunk: str, minimum: int) -> list[str]:
    return [
        t
        for t in dict.fromkeys(chunk.split())
        if len(t) >= minimum and not (t.isalpha() and t.islower())
    ]


def test_whitespace_table_is_str_split_whitespace():
    """The candidate tokens' whitespace is exactly what ``str.split()`` splits at."""
    import sys

    every = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert sorted(fs._WHITESPACE) == every


@pytest.mark.parametrize("minimum", [1, 4, 8])
def test_candidate_tokens_are_the_split_tokens_a_pattern_can_match(minimum, monkeypatch):
    """``candidate_tokens`` (arrays over the chunk's code points) gives what the split
    and filter gave: every kind of text, astral and surrogate code points, every
    whitespace, control characters, non-ASCII letters, empty and blank chunks."""
    rnd = random.Random(minimum)
    alphabet = (
        "abcdefghijklmnopqrstuvwxyz" * 6
        + "ABCXYZ0123456789/._-:#()[]{}\"'=,"
        + "".join(map(chr, fs._WHITESPACE))
        + "\x00\x01\x08\x0e\x1b\x7f"
        + "éßçñΩωжЖ日本\ue05b\ue075\ufffd\uffff"
        + "🚀\U0010ffff\ud800\udc00"
    )
    chunks = ["", " ", "\n\t ", "plain words only", "x", " ".join(PIECES), _texts()[4]]
    for _ in range(300):
        n = rnd.randrange(0, 400)
        chunks.append("".join(rnd.choice(alphabet) for _ in range(n)))
    chunks.append("".join(chunks))  # long: read with arrays at the default threshold too
    for short_split in (True, False):
        if not short_split:  # every chunk read with arrays, whatever its length and text
            monkeypatch.setattr(fs, "_ARRAYS_FROM", 0)
            monkeypatch.setattr(fs, "_SPARSE", 0)
        for chunk in chunks:
            assert fs.candidate_tokens(chunk, minimum) == _split_candidates(chunk, minimum)
