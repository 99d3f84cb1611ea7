"""Put a marker message between kept messages without breaking either wire format.

A breadcrumb, a snapshot or a summary is a *user-side* message placed before the
kept part, never written into a kept message. Around it, role alternation must
stay valid for Anthropic (user and assistant strictly alternate; a ``tool_result``
user message answers the assistant message right before it) and pairing for
OpenAI (a step is never split, so tool messages are never separated from their
call). :func:`append_user_side` adds an assistant bridge ("(continuing)") before
the marker when the message before it is a user message, and an assistant
acknowledgement after it when the next kept message is a user message.
"""

from __future__ import annotations

from glyphfold.compaction.history.markers import (
    BRIDGE,
    BRIDGE_TEXT,
    MarkerKind,
    marked_message,
)
from glyphfold.compaction.history.model import Message

__all__ = ["append_user_side", "bridge"]


def bridge() -> Message:
    """The assistant bridge that keeps alternation valid between two user-side messages."""
    return marked_message("assistant", BRIDGE_TEXT, BRIDGE)


def append_user_side(
    out: list[Message],
    marker: Message,
    next_message: Message | None,
    *,
    ack_text: str,
    ack_kind: MarkerKind,
) -> None:
    """Append the user-side ``marker`` to ``out`` so that ``next_message`` may follow it."""
    if out and out[-1].role == "user":
        out.append(bridge())
    out.append(marker)
    if next_message is not None and next_message.role == "user":
        out.append(marked_message("assistant", ack_text, ack_kind))
