"""The provider rules validator: would this history be accepted by the provider?

Rules (checked on the canonical model, so wire and canonical input agree):

OpenAI Chat Completions
  - every assistant tool call is answered by a ``tool`` message in the run of
    tool messages right after it; no tool message outside such a run or with an
    unknown / already-answered ``tool_call_id``; tool call ids are unique;
  - an assistant message has content or tool calls.

Anthropic Messages
  - the first message is a user message; user and assistant strictly alternate;
  - every ``tool_use`` is answered by a ``tool_result`` in the very next (user)
    message; a ``tool_result`` answers a ``tool_use`` of the message right
    before it; ``tool_result`` blocks come first in their user message;
  - no empty content and no empty text block, except that the final assistant
    message may be empty (a prefill).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from glyphfold.compaction.history.messages import (
    ANTHROPIC,
    FORMATS,
    OPENAI,
    Text,
    ToolResult,
    coerce,
)
from glyphfold.compaction.history.turns import pair_tool_calls

from glyphfold.errors import HistoryFormatError

__all__ = ["Violation", "find_violations", "validate_history"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken provider rule: the message index (None: whole history), rule id, text."""

    index: int | None
    rule: str
    problem: str

    def __str__(self) -> str:
        where = "history" if self.index is None else f"message {self.index}"
        return f"{where}: {self.problem} [{self.rule}]"


def find_violations(history: Any, *, provider: str | None = None) -> list[Violation]:
    """List every provider rule the history breaks (empty list: the provider accepts it)."""
    h, _ = coerce(history)
    prov = provider or h.format
    if prov not in FORMATS:
        msg = f"provider must be one of {FORMATS} or None, got {provider!r}"
        raise HistoryFormatError(msg)
    if prov != h.format:
        msg = f"cannot check a {h.format} history against {prov} rules; convert it first"
        raise HistoryFormatError(msg)
    out: list[Violation] = []
    p = pair_tool_calls(h)
    for i, cid in p.orphan_results:
        out.append(
            Violation(
                i, "orphan-result", f"tool result {cid!r} does not answer a call right before it"
            )
        )
    for i, cid in p.orphan_calls:
        out.append(Violation(i, "orphan-call", f"tool call {cid!r} is not answered right after it"))
    if prov == OPENAI:
        for i, m in enumerate(h.messages):
            if m.role == "assistant" and not m.blocks and _wire_content_missing(m):
                out.append(
                    Violation(
                        i, "empty-assistant", "assistant message has neither content nor tool calls"
                    )
                )
    elif prov == ANTHROPIC:
        msgs = h.messages
        if msgs and msgs[0].role != "user":
            out.append(Violation(0, "first-user", "the first message must be a user message"))
        last = len(msgs) - 1
        for i, m in enumerate(msgs):
            if i and m.role == msgs[i - 1].role:
                out.append(
                    Violation(
                        i, "alternation", f"two {m.role} messages in a row; roles must alternate"
                    )
                )
            if not m.blocks and not (i == last and m.role == "assistant"):
                out.append(Violation(i, "empty-content", "content must not be empty"))
            seen_other = False
            for b in m.blocks:
                if isinstance(b, ToolResult):
                    if seen_other:
                        out.append(
                            Violation(
                                i,
                                "tool-result-first",
                                "tool_result blocks must come first in their message",
                            )
                        )
                        break
                else:
                    seen_other = True
                if isinstance(b, Text) and not b.text and b.raw is not None:
                    out.append(Violation(i, "empty-text", "text blocks must not be empty"))
    out.sort(key=lambda v: (-1 if v.index is None else v.index, v.rule))
    return out


def _wire_content_missing(m: Any) -> bool:
    # a new message without raw serialises its empty content as ""
    return m.raw is not None and m.raw.get("content") is None


def validate_history(history: Any, *, provider: str | None = None) -> None:
    """Raise HistoryFormatError at the first broken provider rule (index + problem).

    ``provider`` defaults to the history's own format.
    """
    violations = find_violations(history, provider=provider)
    if violations:
        v = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise HistoryFormatError(str(v) + more, index=v.index)
