"""Factsheet: exact strings a vision reader gets wrong, sent as text beside the pages.

A glyph page keeps every word, but a model reading pixels misreads exactly the
strings where one wrong character is fatal: hex ids, UUIDs, hashes, file
paths, URLs, long numbers, error codes (SPEC §5, issue 5). Those are extracted
from the imaged text and sent verbatim as a compact, deduplicated, capped list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# kind -> pattern; order matters: earlier kinds claim their span first, so a
# UUID is not also reported as five hex fragments.
_PATTERNS: dict[str, re.Pattern[str]] = {
    "url": re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+[^\s<>\"'`)\]}.,;:!?]"),
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
    "path": re.compile(
        r"(?:(?<=\s)|(?<=^)|(?<=[\"'`(]))(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?"
        r"|\b[\w.-]+(?:/[\w.@+-]+)+\.[A-Za-z0-9]{1,6}\b",
        re.MULTILINE,
    ),
    "number": re.compile(r"(?<![\w.])\d{5,}(?![\w.])"),
}

KINDS: tuple[str, ...] = tuple(_PATTERNS)


@dataclass(frozen=True, slots=True)
class FactsheetConfig:
    """Caps for the factsheet; defaults keep it well under 1% of a typical middle."""

    max_items: int = 200  # a list longer than this stops being read
    max_chars: int = 6000  # ~1.5k tokens: cheap next to the pages it accompanies
    min_len: int = 4  # shorter strings are read reliably from pixels
    kinds: tuple[str, ...] = KINDS

    def __post_init__(self) -> None:
        if self.max_items < 0:
            msg = f"factsheet max_items must be >= 0, got {self.max_items}"
            raise ValueError(msg)
        if self.max_chars < 0:
            msg = f"factsheet max_chars must be >= 0, got {self.max_chars}"
            raise ValueError(msg)
        if self.min_len < 1:
            msg = f"factsheet min_len must be >= 1, got {self.min_len}"
            raise ValueError(msg)
        unknown = [k for k in self.kinds if k not in _PATTERNS]
        if unknown:
            msg = f"unknown factsheet kind(s) {unknown}; valid kinds: {list(KINDS)}"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str
    value: str
    offset: int  # first occurrence in the source text


def extract_facts(text: str, *, config: FactsheetConfig | None = None) -> list[Fact]:
    """Find exact identifiers in ``text``: deduplicated, first occurrence order, capped."""
    cfg = config or FactsheetConfig()
    claimed: list[tuple[int, int]] = []
    found: list[Fact] = []
    for kind in cfg.kinds:
        for m in _PATTERNS[kind].finditer(text):
            s, e = m.span()
            if e - s < cfg.min_len or any(s < ce and cs < e for cs, ce in claimed):
                continue
            claimed.append((s, e))
            found.append(Fact(kind, m.group(0), s))
    found.sort(key=lambda f: f.offset)
    seen: set[str] = set()
    out: list[Fact] = []
    total = 0
    for f in found:
        if f.value in seen:
            continue
        cost = len(f.value) + 3
        if len(out) >= cfg.max_items or total + cost > cfg.max_chars:
            break
        seen.add(f.value)
        out.append(f)
        total += cost
    return out


def format_factsheet(facts: list[Fact]) -> str:
    """Render facts as a compact text list grouped by kind (empty string when none)."""
    if not facts:
        return ""
    groups: dict[str, list[str]] = {}
    for f in facts:
        groups.setdefault(f.kind, []).append(f.value)
    lines = ["Exact identifiers from the pages (copy these, do not re-read them from pixels):"]
    for kind in KINDS:
        if kind in groups:
            lines.append(f"{kind}: " + " ".join(groups[kind]))
    return "\n".join(lines)
