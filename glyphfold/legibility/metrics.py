"""Pure scoring functions: normalisation, CER, confusions, identifiers, text tokens.

Definitions: see the package docstring of :mod:`glyphfold.legibility`.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Any

from glyphfold.errors import InputError

_WS = re.compile(r"\s+")


def normalise(text: str, *, keep_spaces: bool = False) -> str:
    """NFKC, then whitespace removed (or each run collapsed to one space)."""
    text = unicodedata.normalize("NFKC", text)
    if keep_spaces:
        return _WS.sub(" ", text).strip()
    return _WS.sub("", text)


def _dp_rows(ref: str, hyp: str) -> list[Any]:
    """Levenshtein DP rows (row i = distances from ref[:i] to every hyp prefix)."""
    import numpy as np

    hyp_codes = np.fromiter((ord(c) for c in hyp), dtype=np.int64, count=len(hyp))
    cols = np.arange(len(hyp) + 1, dtype=np.int64)
    prev = cols.copy()
    rows = [prev]
    for i, ch in enumerate(ref, start=1):
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[:-1] + (hyp_codes != ord(ch)), prev[1:] + 1)
        # insertions: cur[j] = min_k<=j (cur[k] + j - k), a running minimum of cur - j
        cur = np.minimum.accumulate(cur - cols) + cols
        rows.append(cur)
        prev = cur
    return rows


def levenshtein(ref: str, hyp: str) -> int:
    """Return the unit-cost edit distance between two strings."""
    if ref == hyp:
        return 0
    if not ref or not hyp:
        return max(len(ref), len(hyp))
    return int(_dp_rows(ref, hyp)[-1][-1])


def cer(reference: str, hypothesis: str, *, keep_spaces: bool = False) -> float:
    """Return the character error rate of ``hypothesis`` against ``reference`` (module doc)."""
    ref = normalise(reference, keep_spaces=keep_spaces)
    hyp = normalise(hypothesis, keep_spaces=keep_spaces)
    if not ref:
        msg = "reference text is empty after normalisation; CER is undefined"
        raise InputError(msg)
    return levenshtein(ref, hyp) / len(ref)


def alignment_confusions(reference: str, hypothesis: str) -> Counter[tuple[str, str]]:
    """Count (reference char, read char) pairs of one optimal alignment.

    Substitutions give ``(a, b)``, deletions ``(a, "")``, insertions ``("", b)``;
    both strings are normalised first.
    """
    ref, hyp = normalise(reference), normalise(hypothesis)
    out: Counter[tuple[str, str]] = Counter()
    if ref == hyp:
        return out
    rows = _dp_rows(ref, hyp)
    i, j = len(ref), len(hyp)
    while i > 0 or j > 0:
        here = int(rows[i][j])
        if i > 0 and j > 0 and here == int(rows[i - 1][j - 1]) + (ref[i - 1] != hyp[j - 1]):
            if ref[i - 1] != hyp[j - 1]:
                out[(ref[i - 1], hyp[j - 1])] += 1
            i, j = i - 1, j - 1
        elif i > 0 and here == int(rows[i - 1][j]) + 1:
            out[(ref[i - 1], "")] += 1
            i -= 1
        else:
            out[("", hyp[j - 1])] += 1
            j -= 1
    return out


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_IDENT = re.compile(rf"(?<![0-9A-Za-z])(?:{_UUID}|[0-9a-fA-F]{{7,}}|[0-9]{{5,}})(?![0-9A-Za-z])")


def find_identifiers(text: str) -> list[str]:
    """Return the identifiers of ``text`` in order: UUIDs, hex ids, numbers of 5+ digits."""
    found = []
    for match in _IDENT.finditer(unicodedata.normalize("NFKC", text)):
        token = match.group(0)
        is_hex_id = bool(re.search(r"[0-9]", token) and re.search(r"[a-fA-F]", token))
        if token.isdigit() or "-" in token or is_hex_id:
            found.append(token)
    return found


def identifier_matches(reference: str, hypothesis: str) -> tuple[int, int]:
    """Return (matched, total) identifiers of ``reference`` found verbatim in ``hypothesis``."""
    wanted = Counter(find_identifiers(reference))
    hyp = normalise(hypothesis)
    matched = sum(min(n, hyp.count(ident)) for ident, n in wanted.items())
    return matched, sum(wanted.values())


_TIKTOKEN_LOCK = threading.Lock()
_TIKTOKEN_COUNTERS: dict[str, Any] = {}


def _offline_counter(encoding: str) -> Any | None:
    """Return an exact offline counter for ``encoding``, or None when none is available.

    glyphfold never downloads at run time: core's ``TiktokenCounter`` when
    tiktoken has the table cached, else ``BpeCounter`` (bpe-openai ships the
    same table compiled in; the two agree token for token, tested in core).
    """
    with _TIKTOKEN_LOCK:
        if encoding not in _TIKTOKEN_COUNTERS:
            from glyphfold.compaction.history.tokens import BpeCounter, TiktokenCounter
            from glyphfold.errors import TokenizerUnavailableError

            counter = None
            for make in (TiktokenCounter, BpeCounter):
                try:
                    counter = make(encoding)
                    break
                except TokenizerUnavailableError:
                    continue
            _TIKTOKEN_COUNTERS[encoding] = counter
        return _TIKTOKEN_COUNTERS[encoding]


def count_text_tokens(text: str) -> dict[str, int | None]:
    """Return text-token counts: ``chars/4`` (ceil) and o200k_base (None when unavailable)."""
    counter = _offline_counter("o200k_base")
    return {
        "chars_div_4": -(-len(text) // 4),
        "o200k_base": counter.count(text) if counter is not None else None,
    }


def identifier_matches_by_kind(
    identifiers: Iterable[tuple[str, str]], hypothesis: str
) -> dict[str, tuple[int, int]]:
    """Return ``{kind: (matched, total)}`` for ``(kind, value)`` identifiers.

    An identifier matches when it occurs verbatim in ``normalise(hypothesis)``;
    one value listed n times needs n occurrences.
    """
    hyp = normalise(hypothesis)
    wanted = Counter(identifiers)
    out: dict[str, tuple[int, int]] = {}
    for (kind, value), n in wanted.items():
        matched, total = out.get(kind, (0, 0))
        out[kind] = (matched + min(n, hyp.count(value)), total + n)
    return out
