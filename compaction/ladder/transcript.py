"""Serialise the discarded middle of a history into a compact text transcript.

The transcript is what snapshot pages show and what a summary is made from:
role markers, tool calls with their arguments, tool results capped per result
(head and tail kept, a visible marker says how much was cut), ``[image]``
placeholders. It records, for every message, the span of transcript text it
produced, so the ledger can say which page holds which message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_STUB = re.compile(r"\[elided: [^\]\n]*\]\Z")


@dataclass(frozen=True, slots=True)
class TranscriptConfig:
    """Per-result caps; defaults keep the head (what was asked) and tail (the verdict)."""

    max_result_chars: int = 6000  # ~1.5k tokens of text, ~1/10 of a dense page
    head_fraction: float = 0.6  # file/command output states its subject first
    max_args_chars: int = 2000  # tool arguments are usually short; huge ones are data

    def __post_init__(self) -> None:
        if self.max_result_chars < 80:
            msg = f"max_result_chars must be >= 80 (marker room), got {self.max_result_chars}"
            raise ValueError(msg)
        if not 0.0 < self.head_fraction < 1.0:
            msg = f"head_fraction must be in (0, 1), got {self.head_fraction}"
            raise ValueError(msg)
        if self.max_args_chars < 80:
            msg = f"max_args_chars must be >= 80, got {self.max_args_chars}"
            raise ValueError(msg)


def cap_head_tail(text: str, max_chars: int, *, head_fraction: float = 0.6) -> str:
    """Keep the head and tail of ``text`` within ``max_chars``, marking the cut."""
    if len(text) <= max_chars:
        return text
    marker_len = 48
    room = max(max_chars - marker_len, 2)
    head = int(room * head_fraction)
    tail = room - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut:,} chars cut ...]\n{text[len(text) - tail :]}"


def format_args(args: Any, *, max_chars: int) -> str:
    """Tool-call arguments, readable: ``key=value`` for short values, blocks for long text.

    JSON-string arguments (OpenAI) are decoded first, so file contents show as
    text rather than as escaped JSON (``\\n`` and ``\\"`` double the characters).
    """
    if isinstance(args, str):
        try:
            decoded = json.loads(args)
        except ValueError:
            return cap_head_tail(args, max_chars)
        args = decoded
    if not isinstance(args, dict):
        s = json.dumps(args, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        return cap_head_tail(s, max_chars)
    inline: list[str] = []
    blocks: list[str] = []
    for key in sorted(args):
        v = args[key]
        if isinstance(v, str) and ("\n" in v or len(v) > 120):
            blocks.append(f"{key}:\n{cap_head_tail(v, max_chars)}")
        else:
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
            inline.append(f"{key}={cap_head_tail(text, max_chars)}")
    head = " ".join(inline)
    return "\n".join([head, *blocks]) if blocks else head


class TranscriptBuilder:
    """Accumulates transcript text message by message, recording each message's span."""

    def __init__(self, *, config: TranscriptConfig | None = None) -> None:
        self.config = config or TranscriptConfig()
        self._parts: list[str] = []
        self._len = 0
        self.spans: list[tuple[Any, int, int]] = []  # (message key, start, end)
        self._open: tuple[Any, int] | None = None

    def _emit(self, s: str) -> None:
        self._parts.append(s)
        self._len += len(s)

    def begin(self, key: Any, role: str) -> None:
        """Start a message; ``key`` identifies it in :attr:`spans` (e.g. its index)."""
        self.end()
        self._open = (key, self._len)
        self._emit(f"\n[{role}]\n" if self._len else f"[{role}]\n")

    def end(self) -> None:
        if self._open is not None:
            key, start = self._open
            self.spans.append((key, start, self._len))
            self._open = None

    def text(self, text: str) -> None:
        if text:
            self._emit(text if text.endswith("\n") else text + "\n")

    def call(self, name: str, args: Any, *, call_id: str | None = None) -> None:
        a = format_args(args, max_chars=self.config.max_args_chars)
        cid = f" #{call_id}" if call_id else ""
        self._emit(f"-> call {name}{cid} {a}\n")

    def result(
        self,
        text: str,
        *,
        name: str | None = None,
        call_id: str | None = None,
        is_error: bool = False,
    ) -> None:
        cid = f" #{call_id}" if call_id else ""
        err = " ERROR" if is_error else ""
        if _STUB.match(text):  # already elided: the stub says it all, on one line
            self._emit(f"<- result {name or 'tool'}{cid}{err} {text}\n")
            return
        body = cap_head_tail(
            text, self.config.max_result_chars, head_fraction=self.config.head_fraction
        )
        self._emit(f"<- result {name or 'tool'}{cid}{err} ({len(text):,} chars)\n")
        self.text(body)

    def image(self, description: str) -> None:
        self._emit(f"[image] {description}\n")

    def raw(self, text: str) -> None:
        """Verbatim text (e.g. the unfolded source of an earlier snapshot)."""
        self.text(text)

    def getvalue(self) -> str:
        self.end()
        return "".join(self._parts)
