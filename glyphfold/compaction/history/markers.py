"""The messages and texts glyphfold itself puts into a history: one vocabulary.

Every message that a trim or a ladder rung inserts (a breadcrumb, a snapshot,
its acknowledgement, a summary, a bridge that keeps roles alternating) carries
its kind under the ``x_glyphfold`` key, in the canonical ``Message.meta`` and in
the wire dict, so that a later pass recognises it: a marker is never a real user
message (SPEC §1), an earlier snapshot is re-rendered from its source (SPEC §5.3),
an earlier breadcrumb is replaced rather than stacked (SPEC §2.6). The kinds, the
fixed texts and the breadcrumb wording are spelled here and nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

from glyphfold.checks import check_choice
from glyphfold.compaction.history.model import EMPTY, Block, Message, Text

__all__ = [
    "ACK_TEXTS",
    "BREADCRUMB",
    "BREADCRUMB_ACK_TEXT",
    "BREADCRUMB_PREFIX",
    "BRIDGE",
    "BRIDGE_TEXT",
    "MARKER_KINDS",
    "SNAPSHOT",
    "SNAPSHOT_ACK",
    "SNAPSHOT_ACK_TEXT",
    "SUMMARY",
    "SUMMARY_ACK_TEXT",
    "TOOL_RESULTS_PREFIX",
    "X_KEY",
    "MarkerKind",
    "breadcrumb_counts",
    "breadcrumb_text",
    "glyphfold_meta",
    "is_breadcrumb_text",
    "is_marker",
    "marked_message",
    "marker_kind",
    "pinned_by_meta",
]

# metadata key of canonical ``Message.meta`` and of the wire dict (stripped before sending)
X_KEY: Final = "x_glyphfold"

MarkerKind: TypeAlias = Literal["snapshot", "snapshot_ack", "summary", "breadcrumb", "bridge"]
SNAPSHOT: Final = "snapshot"  # the imaged middle: guide, pages, factsheet (user side)
SNAPSHOT_ACK: Final = "snapshot_ack"  # the assistant's one-line acknowledgement of a snapshot
SUMMARY: Final = "summary"  # a model-written summary of the middle (user side)
BREADCRUMB: Final = "breadcrumb"  # "earlier conversation omitted" (and its acknowledgement)
BRIDGE: Final = "bridge"  # "(continuing)": keeps user/assistant alternation valid
MARKER_KINDS: tuple[MarkerKind, ...] = (SNAPSHOT, SNAPSHOT_ACK, SUMMARY, BREADCRUMB, BRIDGE)

# a user message whose text starts with this is a tool result written as text (SPEC §1)
TOOL_RESULTS_PREFIX: Final = "[Tool results]"

BRIDGE_TEXT: Final = "(continuing)"
SNAPSHOT_ACK_TEXT: Final = (
    "Understood: the earlier part of our conversation is in the snapshot pages above."
)
SUMMARY_ACK_TEXT: Final = "Understood: I will continue from the summary above."
BREADCRUMB_ACK_TEXT: Final = "Understood."
ACK_TEXTS: Mapping[str, str] = MappingProxyType(
    {SNAPSHOT: SNAPSHOT_ACK_TEXT, SUMMARY: SUMMARY_ACK_TEXT, BREADCRUMB: BREADCRUMB_ACK_TEXT}
)

# Text every breadcrumb starts with; recognised so repeated trims replace it (SPEC §2.6).
BREADCRUMB_PREFIX: Final = "[Earlier conversation omitted:"
_COUNTS = re.compile(
    r"omitted: ([\d,]+) messages? in (?:([\d,]+) turns?)?(?: and )?(?:([\d,]+) steps?)?"
)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' if n != 1 else ''}"


def breadcrumb_text(messages: int, turns: int = 0, steps: int = 0) -> str:
    """The breadcrumb telling the model that earlier context was omitted (SPEC §2.6a, §5.7).

    ``turns`` whole turns (SPEC §2) and ``steps`` whole steps of a turn (SPEC §5.7)
    went, holding ``messages`` messages.
    """
    units = [_plural(n, w) for n, w in ((turns, "turn"), (steps, "step")) if n]
    what = " and ".join(units) or _plural(0, "turn")
    return (
        f"{BREADCRUMB_PREFIX} {_plural(messages, 'message')} in {what} were removed to fit "
        "the context window.]"
    )


def is_breadcrumb_text(text: str) -> bool:
    """True for the text of a breadcrumb glyphfold inserted."""
    return text.startswith(BREADCRUMB_PREFIX)


def breadcrumb_counts(text: str) -> tuple[int, int, int]:
    """(messages, turns, steps) a breadcrumb text reports; zeros for other text."""
    m = _COUNTS.search(text) if is_breadcrumb_text(text) else None
    if m is None:
        return 0, 0, 0
    return tuple(int(g.replace(",", "")) if g else 0 for g in m.groups())  # type: ignore[return-value]


_NONE: Mapping[str, Any] = MappingProxyType({})


def glyphfold_meta(m: Message) -> Mapping[str, Any]:
    """The message's glyphfold metadata: canonical ``meta`` first, then the wire key."""
    # called for every message by every segmentation: the common case (none) is fast
    # (a parsed message's meta is the shared EMPTY: no call of its Python __len__)
    meta = m.meta.get(X_KEY) if m.meta is not EMPTY and m.meta else None
    if meta is not None and isinstance(meta, Mapping):
        return meta
    raw = m.raw.get(X_KEY) if m.raw is not None else None
    if raw is not None and isinstance(raw, Mapping):
        return raw
    return _NONE


def pinned_by_meta(m: Message) -> bool:
    """True when the message's own ``x_glyphfold`` metadata pins it (``{"pin": true}``)."""
    if m.meta is EMPTY and (m.raw is None or X_KEY not in m.raw):
        return False  # no metadata: every rung asks this of every middle message
    return bool(glyphfold_meta(m).get("pin"))


def marker_kind(m: Message) -> str | None:
    """The marker kind of a message glyphfold inserted (one of MARKER_KINDS), else None."""
    # asked several times of every message by every rung: a parsed message without the
    # key (nearly all of them) answers without building its metadata
    if m.meta is EMPTY:
        raw = m.raw
        if raw is None or X_KEY not in raw:
            return None
    kind = glyphfold_meta(m).get("kind")
    return kind if kind in MARKER_KINDS else None


def is_marker(m: Message) -> bool:
    """True for a message glyphfold inserted (never a real user message, SPEC §1)."""
    return marker_kind(m) is not None


def marked_message(
    role: str, content: str | list[Block] | tuple[Block, ...], kind: MarkerKind, **info: Any
) -> Message:
    """A new marker message of ``kind``; ``info`` goes beside the kind under ``x_glyphfold``."""
    check_choice("marker kind", kind, MARKER_KINDS, error=ValueError)
    blocks = (Text(content),) if isinstance(content, str) else tuple(content)
    meta = {"kind": kind, **info}
    raw = {"role": role, X_KEY: meta}
    return Message(role, blocks, raw=raw, meta=MappingProxyType({X_KEY: meta}))
