"""The provider rules validator: would this history be accepted by the provider?

Rules (checked on the canonical model, so wire and canonical input agree). Every
format: every tool call is answered where that provider expects its result (see
:func:`~glyphfold.compaction.history.turns.pair_tool_calls`), no result answers an
unknown or already-answered call, tool call ids are unique.

OpenAI Chat Completions
  - results are ``tool`` messages in the run right after the calling assistant message;
  - an assistant message has content or tool calls.

OpenAI Responses
  - ``function_call_output`` items follow their ``function_call`` (after the other
    assistant-side items of the same run);
  - a ``reasoning`` item is followed by the item it reasons for (never last in its run).

Anthropic Messages
  - the first message is a user message; user and assistant strictly alternate;
  - every ``tool_use`` is answered by a ``tool_result`` in the very next (user)
    message; ``tool_result`` blocks come first in their user message;
  - no empty content and no empty text block, except that the final assistant
    message may be empty (a prefill);
  - no ``system`` entry inside ``messages`` (the API takes the top-level ``system``);
  - at most 4 ``cache_control`` breakpoints (system, messages and tools together).

Gemini
  - a ``function_call`` is answered by a ``function_response`` in the next content;
  - a content holding function calls follows a user content;
  - no content without parts.

Bedrock Converse
  - the first message is a user message; user and assistant strictly alternate;
  - every ``toolUse`` is answered by a ``toolResult`` in the very next message;
  - no empty content and no blank text block;
  - at most 4 ``cachePoint`` blocks (system, messages and tools together).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from glyphfold.checks import check_choice
from glyphfold.compaction.history.messages import FormatArg, coerce, to_wire
from glyphfold.compaction.history.model import (
    ANTHROPIC,
    BEDROCK,
    FORMATS,
    GEMINI,
    OPENAI,
    RESPONSES,
    History,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
)
from glyphfold.compaction.history.turns import pair_tool_calls
from glyphfold.errors import HistoryFormatError

__all__ = ["MAX_CACHE_BREAKPOINTS", "Violation", "find_violations", "validate_history"]

MAX_CACHE_BREAKPOINTS = 4  # Anthropic cache_control and Bedrock cachePoint alike


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken provider rule: the message index (None: whole history), rule id, text."""

    index: int | None
    rule: str
    problem: str

    def __str__(self) -> str:
        where = "history" if self.index is None else f"message {self.index}"
        return f"{where}: {self.problem} [{self.rule}]"


def _openai_rules(h: History) -> list[Violation]:
    return [
        Violation(i, "empty-assistant", "assistant message has neither content nor tool calls")
        for i, m in enumerate(h.messages)
        if m.role == "assistant" and not m.blocks and _wire_content_missing(m)
    ]


def _responses_rules(h: History) -> list[Violation]:
    out: list[Violation] = []
    for i, m in enumerate(h.messages):
        if m.role == "assistant" and m.blocks:
            last = m.blocks[-1]
            if isinstance(last, Unknown) and _raw_type(last.raw) == "reasoning":
                out.append(
                    Violation(
                        i,
                        "reasoning-alone",
                        "a reasoning item must be followed by the item it reasons for",
                    )
                )
    return out


def _alternation(h: History, *, allow_prefill: bool) -> list[Violation]:
    out: list[Violation] = []
    msgs = [(i, m) for i, m in enumerate(h.messages) if m.role != "system"]
    if msgs and msgs[0][1].role != "user":
        out.append(Violation(msgs[0][0], "first-user", "the first message must be a user message"))
    last = msgs[-1][0] if msgs else -1
    for k, (i, m) in enumerate(msgs):
        if k and m.role == msgs[k - 1][1].role:
            out.append(
                Violation(i, "alternation", f"two {m.role} messages in a row; roles must alternate")
            )
        if not m.blocks and not (allow_prefill and i == last and m.role == "assistant"):
            out.append(Violation(i, "empty-content", "content must not be empty"))
    return out


def _anthropic_rules(h: History) -> list[Violation]:
    out = _alternation(h, allow_prefill=True)
    for i, m in enumerate(h.messages):
        if m.role == "system":
            out.append(
                Violation(
                    i,
                    "system-message",
                    "the Messages API takes system text in the top-level 'system' key, "
                    "not as a message",
                )
            )
        seen_other = False
        for b in m.blocks:
            if isinstance(b, ToolResult) and m.role == "user":
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
    return out + _breakpoints(h, "cache_control")


def _gemini_rules(h: History) -> list[Violation]:
    out: list[Violation] = []
    for i, m in enumerate(h.messages):
        if not m.blocks:
            out.append(Violation(i, "empty-parts", "a content must have at least one part"))
        if m.role == "assistant" and any(isinstance(b, ToolCall) for b in m.blocks):
            prev = h.messages[i - 1] if i else None
            if prev is None or prev.role != "user":
                out.append(
                    Violation(
                        i,
                        "call-after-user",
                        "a function call turn must come right after a user turn or a "
                        "function response turn",
                    )
                )
    return out


def _bedrock_rules(h: History) -> list[Violation]:
    out = _alternation(h, allow_prefill=False)
    for i, m in enumerate(h.messages):
        for b in m.blocks:
            if isinstance(b, Text) and not b.text.strip():
                out.append(Violation(i, "blank-text", "text blocks must not be blank"))
                break
    return out + _breakpoints(h, "cachePoint")


_RULES: dict[str, Callable[[History], list[Violation]]] = {
    OPENAI: _openai_rules,
    RESPONSES: _responses_rules,
    ANTHROPIC: _anthropic_rules,
    GEMINI: _gemini_rules,
    BEDROCK: _bedrock_rules,
}
assert set(_RULES) == set(FORMATS), "every format needs its rules"


def count_breakpoints(x: Any, key: str, depth: int = 0) -> int:
    """How many ``key`` markers (cache_control / cachePoint) a wire value holds."""
    if depth > 8:
        return 0
    if isinstance(x, Mapping):
        n = 1 if key in x else 0
        return n + sum(count_breakpoints(v, key, depth + 1) for k, v in x.items() if k != key)
    if isinstance(x, list | tuple):
        return sum(count_breakpoints(v, key, depth + 1) for v in x)
    return 0


def _breakpoints(h: History, key: str) -> list[Violation]:
    n = count_breakpoints(to_wire(h), key)
    if n <= MAX_CACHE_BREAKPOINTS:
        return []
    return [
        Violation(
            None,
            "cache-breakpoints",
            f"{n} {key} breakpoints; the provider takes at most {MAX_CACHE_BREAKPOINTS}",
        )
    ]


def find_violations(
    history: Any, *, provider: str | None = None, format: FormatArg = "auto"
) -> list[Violation]:
    """List every provider rule the history breaks (empty list: the provider accepts it).

    ``format`` names the history's wire format (docs/wire-formats.md; default: detected).
    """
    if provider is not None:
        check_choice("provider (or None)", provider, FORMATS, error=HistoryFormatError)
    # the rules to check against say how to read plain text; nothing else may guess it
    h, _ = coerce(history, format=format, plain=provider)
    prov = provider or h.format
    check_choice("provider (or None)", prov, FORMATS, error=HistoryFormatError)
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
    out.extend(_RULES[prov](h))
    out.sort(key=lambda v: (-1 if v.index is None else v.index, v.rule))
    return out


def _raw_type(raw: Any) -> Any:
    return raw.get("type") if isinstance(raw, Mapping) else None


def _wire_content_missing(m: Any) -> bool:
    # a new message without raw serialises its empty content as ""
    return m.raw is not None and m.raw.get("content") is None


def validate_history(
    history: Any, *, provider: str | None = None, format: FormatArg = "auto"
) -> None:
    """Raise HistoryFormatError at the first broken provider rule (index + problem).

    ``provider`` defaults to the history's own format; ``format`` names that format
    when detection should not decide (docs/wire-formats.md).
    """
    violations = find_violations(history, provider=provider, format=format)
    if violations:
        v = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise HistoryFormatError(str(v) + more, index=v.index)
