"""Canonical columns of committed messages, computed with core's model.

The store keeps each wire payload verbatim plus a few columns derived here
from ``glyphfold.compaction.history.messages`` / ``turns`` / ``tokens``: the canonical
role, whether the message starts a turn (SPEC §1), the tool-call and
tool-result ids it carries, and its token estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from glyphfold.compaction.history.messages import format_evidence, to_canonical
from glyphfold.compaction.history.model import OPENAI
from glyphfold.compaction.history.tokens import estimate_message_tokens
from glyphfold.compaction.history.turns import is_turn_start


@dataclass(frozen=True)
class Canon:
    """The derived columns of one message."""

    role: str
    turn_start: bool
    tool_call_ids: tuple[str, ...]
    tool_result_ids: tuple[str, ...]
    tokens: int


def signal_format(
    messages: Sequence[Any], *, envelope: Mapping[str, Any] | None = None
) -> str | None:
    """The wire format the messages can only be, or None when they fit several.

    ``envelope``: the request dict the messages came in, whose keys can say the format
    (``instructions``/``input``: Responses, ``contents``: Gemini, a Bedrock system
    list...), or its model name. Raises HistoryFormatError for mixed or malformed messages.
    """
    if envelope is not None:
        return format_evidence(envelope)
    return format_evidence(list(messages))


def canon_messages(messages: Sequence[Any], *, format: str | None) -> list[Canon]:
    """Derived columns for each message (plain-text messages parse the same in both formats)."""
    history = to_canonical(list(messages), format=format or OPENAI)
    parsed = list(history.messages)
    if len(parsed) != len(messages):
        # a canonical message spans several wire entries (Responses: a reasoning item,
        # a message and function calls are one assistant message); a row is one entry,
        # so each entry is described on its own
        fmt = history.format
        parsed = [to_canonical([e], format=fmt).messages[0] for e in messages]
    out: list[Canon] = []
    for m in parsed:
        out.append(
            Canon(
                m.role,
                is_turn_start(m),
                tuple(c.id for c in m.tool_calls),
                tuple(r.call_id for r in m.tool_results),
                estimate_message_tokens(m, images_sent=True, tool_results_by_bytes=False),
            )
        )
    return out


def tool_call_summaries(payloads: Sequence[dict[str, Any]], *, format: str | None) -> list[str]:
    """``name(arguments)`` for every tool call in the messages, arguments shortened."""
    import json

    history = to_canonical(list(payloads), format=format or OPENAI)
    out: list[str] = []
    for m in history.messages:
        for call in m.tool_calls:
            args = call.arguments
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            text = " ".join((text or "").split())
            if len(text) > 60:
                text = text[:59] + "…"
            out.append(f"{call.name}({text})")
    return out
