"""What reaches a terminal: every control character escaped, one helper for every command.

Stored titles, message text and file contents can hold escape sequences that set
the window title, clear the screen or hide the rest of a line (an unterminated
``ESC ]`` swallows everything up to the next string terminator). Everything the
CLI prints for a human goes through :func:`say` / :func:`note`, which show such
characters as visible ``\\x1b``-style escapes; JSON goes through :func:`dumps`,
which writes them as JSON escapes (the same data, nothing a terminal acts on).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

# C1 controls, DEL, and characters that reorder or split lines on a terminal:
# bidirectional embeddings/overrides/isolates and marks, NEL, LINE/PARAGRAPH SEPARATOR.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_LINES = (0x0085, 0x2028, 0x2029)


def _table(*, keep_newlines: bool) -> dict[int, str]:
    table = {cp: f"\\x{cp:02x}" for cp in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
    table.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x1B: "\\x1b"})
    # lone surrogates (JS tools cut strings mid-pair): UTF-8 cannot carry them
    table.update({cp: f"\\u{cp:04x}" for cp in (*_BIDI, *_LINES, *range(0xD800, 0xE000))})
    if keep_newlines:
        del table[0x0A]
    return table


_ONE_LINE = _table(keep_newlines=False)
_LINES_KEPT = _table(keep_newlines=True)
# in JSON text (already escaped below U+0020 by json.dumps): C1, bidi, separators, and
# lone surrogates, which UTF-8 cannot carry (written as JSON escapes, the same data)
_JSON = {
    cp: f"\\u{cp:04x}" for cp in (0x7F, *range(0x80, 0xA0), *_BIDI, *_LINES, *range(0xD800, 0xE000))
}


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as a visible escape (``\\x1b``, ``\\n``...).

    ``keep_newlines`` keeps ``\\n`` as a line break (multi-line output); everything
    else that a terminal could act on is escaped, tabs and carriage returns included.
    """
    return text.translate(_LINES_KEPT if keep_newlines else _ONE_LINE)


def say(text: Any = "", *, stream: TextIO | None = None) -> None:
    """Print one (possibly multi-line) human message to stdout, escaped."""
    out = sys.stdout if stream is None else stream
    out.write(escape(str(text), keep_newlines=True) + "\n")


def note(text: Any) -> None:
    """Print one human message to stderr, escaped (summaries, warnings, hints)."""
    say(text, stream=sys.stderr)


def dumps(data: Any, *, indent: int | None = None, default: Any = None) -> str:
    """JSON text with no raw control, bidi or surrogate character (valid JSON, same data)."""
    text = json.dumps(data, ensure_ascii=False, indent=indent, default=default)
    return text.translate(_JSON)


def print_json(data: Any) -> None:
    """Print one JSON object on stdout (the ``--json`` output of a command)."""
    sys.stdout.write(dumps(data) + "\n")


def count(n: int, word: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``word`` in the right number: ``1 turn``, ``2 turns``."""
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"
