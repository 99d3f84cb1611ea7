"""Notable-event detection and stubs for the elision rung (SPEC §5.8).

Pure functions on plain values (text, flags, names) so the rules are testable
without a history. A tool result is *notable* — kept verbatim — when dropping
it would lose something the model is likely to need again:

- it reports an error (``is_error``, a non-zero exit code, a traceback, failing
  tests, a compiler/linter error): errors drive the next steps of an agent;
- it is short: a stub would save almost nothing;
- it is among the newest N results: the model is most likely acting on it;
- it comes from a protected tool (e.g. a plan or memory tool);
- it is pinned by the caller.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from glyphfold.compaction.ladder.rungs.elide import ElideConfig

# Each pattern is one error signal seen in real agent tool output; case matters
# where a lowercase form is common prose ("failed" in a sentence is not a test run).
DEFAULT_ERROR_PATTERNS: tuple[str, ...] = (
    r"Traceback \(most recent call last\)",
    r"(?i)\bexit(?:ed)?(?:[ _]?code| status| with code)\"?\s*[:=]?\s*\"?(?:[1-9]\d*|-\d+)\b",
    r"(?i)\breturn ?code\"?\s*[:=]\s*(?:[1-9]\d*|-\d+)\b",
    r"^(?:FAILED|ERROR)\b",
    r"\b\d+ failed\b",
    r"\bAssertionError\b",
    r"^\w*(?:Error|Exception): ",
    r"^error(?:\[E\d+\])?: ",
    r"\bpanicked at\b",
    r"^npm ERR!",
    r"\bSegmentation fault\b",
    r"\bcommand not found\b",
    r"\bNo such file or directory\b",
    r"\bPermission denied\b",
)


_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def compile_error_patterns(patterns: tuple[str, ...]) -> re.Pattern[str]:
    pat = _CACHE.get(patterns)
    if pat is None:
        # inline flags must lead each alternative, so wrap every pattern as a scoped group
        parts = []
        for p in patterns:
            m = re.match(r"^\(\?([a-z]+)\)", p)
            parts.append(f"(?{m.group(1)}:{p[m.end() :]})" if m else f"(?:{p})")
        pat = re.compile("|".join(parts), re.MULTILINE) if parts else re.compile(r"(?!x)x")
        _CACHE[patterns] = pat
    return pat


def notable_reason(
    text: str,
    *,
    tool_name: str | None,
    is_error: bool,
    newest_rank: int,
    pinned: bool,
    config: ElideConfig,
) -> str | None:
    """Why a tool result must stay verbatim, or ``None`` if it may be elided.

    ``newest_rank`` is 0 for the newest tool result of the history, 1 for the
    one before, and so on.
    """
    if pinned:
        return "pinned"
    if newest_rank < config.keep_newest_results:
        return "newest"
    if tool_name is not None and tool_name in config.protected_tools:
        return "protected_tool"
    if config.keep_errors and is_error:
        return "is_error"
    if len(text) <= config.short_result_chars:
        return "short"
    if config.keep_errors and error_text(text, config):
        return "error_text"
    return None


# A match of a default pattern holds one of these (the ``(?i)`` ones: in lower case, in
# ASCII text): a window that holds none cannot match, and is not searched (the one
# regex of all the patterns tries each at every position: half of compact at 10^4, issue 22)
_ERROR_LITERALS = (
    "Traceback",
    "FAILED",
    "ERROR",
    " failed",
    "AssertionError",
    "Error: ",
    "Exception: ",
    "error: ",
    "error[",
    "panicked at",
    "npm ERR!",
    "Segmentation fault",
    "command not found",
    "No such file or directory",
    "Permission denied",
)
_ERROR_LITERALS_CI = ("exit", "code")


def _may_show_error(window: str) -> bool:
    """False only when no default error pattern can match in ``window``."""
    if not window.isascii():  # case-insensitive matching beyond ASCII: search
        return True
    if any(lit in window for lit in _ERROR_LITERALS):
        return True
    lower = window.lower()
    return any(lit in lower for lit in _ERROR_LITERALS_CI)


def error_text(text: str, config: ElideConfig) -> bool:
    """True when ``text`` shows an error where tools print verdicts (its head and tail)."""
    head, tail = config.scan_head_chars, config.scan_tail_chars
    pat = config.compiled_errors()
    may = _may_show_error if config.error_patterns == DEFAULT_ERROR_PATTERNS else None
    if len(text) <= head + tail:
        return (may is None or may(text)) and pat.search(text) is not None
    if (may is None or may(text[:head])) and pat.search(text, 0, head):
        return True
    start = len(text) - tail
    return (may is None or may(text[start:])) and pat.search(text, start) is not None


def digest(text: str, *, hex_digits: int = 6) -> str:
    """Short sha1 of the UTF-8 text (lets a reader tell results apart)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:hex_digits]


def elision_stub(
    text: str, *, tool_name: str | None, hex_digits: int = 6, reason: str | None = None
) -> str:
    """The stub for an elided result: ``[elided: read_file, 48,213 chars, sha1 3f2a9c]``.

    ``reason`` (SPEC §5.8: what supersedes it) follows the hash:
    ``[elided: read_file, 48,213 chars, sha1 3f2a9c; reread by #call_9]``.
    """
    name = tool_name or "tool"
    why = f"; {reason}" if reason else ""
    sha = digest(text, hex_digits=hex_digits)
    return f"[elided: {name}, {len(text):,} chars, sha1 {sha}{why}]"


_STUB_RE = re.compile(r"^\[elided: [^\]]*, [\d,]+ chars, sha1 [0-9a-f]{4,40}(?:; [^\]\n]*)?\]$")


def is_stub(text: str) -> bool:
    """True if ``text`` is already an elision stub (elision is idempotent)."""
    return bool(_STUB_RE.match(text))
