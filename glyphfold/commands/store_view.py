"""Human views of a store for the CLI: the session tree and the conversation list.

Pure functions from store records to a small outline, then to plain text or a
``rich`` renderable; the commands only choose which.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glyphfold.compaction.store import canon
from glyphfold.compaction.store.facade import Store
from glyphfold.compaction.store.records import (
    Checkpoint,
    CompactionRecord,
    Conversation,
    StoredMessage,
)
from glyphfold.compaction.store.tree import broken_chain, chain_ids
from glyphfold.compaction.store.url import parse_store_url
from glyphfold.errors import NotFoundError

SNIPPET_CHARS = 60


@dataclass
class TurnNode:
    """One committed turn of the tree (a run of messages ending at a turn boundary)."""

    messages: list[StoredMessage]
    children: list[TurnNode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    on_current: bool = False
    is_tip: bool = False

    @property
    def first_id(self) -> int:
        return self.messages[0].id

    @property
    def last_id(self) -> int:
        return self.messages[-1].id


@dataclass(frozen=True)
class Line:
    """An outline entry: ``text`` at ``depth`` with its connector, or a branch heading."""

    prefix: str
    text: str
    style: str = ""


def open_existing(url: str | None) -> Store | None:
    """Open the store at ``url``, or None when it is a SQLite file that does not exist yet.

    Read-only commands must not create an empty store as a side effect.
    """
    from glyphfold.compaction.store import open_store

    parsed = parse_store_url(url)
    local = parsed.backend == "sqlite" and parsed.target != ":memory:"
    if local and not Path(parsed.target).expanduser().exists():
        return None
    return open_store(url, reading=True)


def pick_conversation(store: Store, prefix: str | None) -> str:
    """The conversation named by ``prefix``, or the most recently updated one."""
    if prefix:
        return store.resolve(prefix)
    listed = store.conversations()
    if not listed:
        msg = f"{store.where} holds no conversations yet"
        raise NotFoundError(msg)
    return listed[0].id


def snippet(message: dict[str, Any], limit: int = SNIPPET_CHARS) -> str:
    """The first words of a message's text, on one line."""
    content = message.get("content")
    if isinstance(content, list):
        text = " ".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
        if not text:
            kinds = sorted({str(b.get("type")) for b in content if isinstance(b, dict)})
            text = "[" + ", ".join(kinds) + "]"
    else:
        text = "" if content is None else str(content)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def build_tree(
    messages: Sequence[StoredMessage],
    tip: int | None,
    checkpoints: Sequence[Checkpoint],
    compactions: Sequence[CompactionRecord],
) -> list[TurnNode]:
    """Group messages into committed turns and link them into a tree; returns the roots."""
    by_id = {m.id: m for m in messages}
    conversation = messages[0].conversation_id if messages else "?"
    parent_of = {m.id: m.parent_id for m in messages}
    # raises CorruptStoreError on a parent-pointer cycle instead of walking it forever
    current = set() if tip is None else set(chain_ids(conversation, parent_of, tip))
    # a turn is the run of messages from after one boundary to the next boundary
    owner: dict[int, TurnNode] = {}
    nodes: list[TurnNode] = []
    roots: list[TurnNode] = []
    for m in messages:  # ids ascend, so a parent is always seen before its child
        parent = by_id.get(m.parent_id) if m.parent_id is not None else None
        if parent is not None and parent.id not in owner:
            # ids ascend along every chain a store writes: this one was edited or damaged
            raise broken_chain(conversation, m.id, parent.id, cycle=True)
        if parent is not None and not parent.ends_turn:
            node = owner[parent.id]
            node.messages.append(m)
        else:
            node = TurnNode([m])
            nodes.append(node)
            if parent is None:
                roots.append(node)
            else:
                owner[parent.id].children.append(node)
        owner[m.id] = node
    for node in nodes:
        node.on_current = node.last_id in current
        node.is_tip = node.last_id == tip
    for node in nodes:
        node.children.sort(key=lambda c: (not c.on_current, c.first_id))
    for cp in checkpoints:
        if cp.message_id is None or cp.message_id not in owner:
            continue
        note = f"⚑ {cp.label}"
        if cp.dropped:
            note += f" (dropped by compaction {cp.dropped_by})"
        owner[cp.message_id].notes.append(note)
    for rec in compactions:
        if rec.tip_id is not None and rec.tip_id in owner:
            owner[rec.tip_id].notes.append(
                f"✂ compaction {rec.id}: {len(rec.replaced_message_ids):,} messages imaged/replaced"
            )
        for mid in rec.replaced_message_ids:
            replaced = owner.get(mid)
            marker = f"[compacted by {rec.id}]"
            if replaced is not None and marker not in replaced.notes:
                replaced.notes.append(marker)
    roots.sort(key=lambda c: (not c.on_current, c.first_id))
    return roots


def describe_turn(node: TurnNode, fmt: str | None) -> str:
    """One line for a turn: ids, opening text, tool calls, markers."""
    first, last = node.first_id, node.last_id
    ids = f"#{first}" if first == last else f"#{first}-{last}"
    opener = next((m for m in node.messages if m.turn_start), node.messages[0])
    payloads = [m.payload for m in node.messages]
    calls = [s.split("(", 1)[0] for s in canon.tool_call_summaries(payloads, format=fmt)]
    parts = [f"{ids:<12} {opener.role}: {snippet(opener.payload)}"]
    if calls:
        counted: dict[str, int] = {}
        for c in calls:
            counted[c] = counted.get(c, 0) + 1
        tools = ", ".join(f"{k}×{v}" if v > 1 else k for k, v in counted.items())
        parts.append(f"· tools: {tools}")
    parts.extend(node.notes)
    if node.is_tip:
        parts.append("◀ tip")
    return "  ".join(parts)


def outline(roots: Sequence[TurnNode], fmt: str | None, *, keep: int | None = 3) -> list[Line]:
    """Flatten the tree: linear runs stay at one level, branch points indent.

    Runs longer than ``2 * keep + 1`` turns show their first and last ``keep``
    turns plus every turn carrying a marker (tip, checkpoint, compaction); the
    rest is one "⋮ N more turns" line. ``keep=None`` shows every turn.
    Iterative, so a 10,000-turn conversation cannot exhaust the stack.
    """
    lines: list[Line] = []
    # work items, popped last-first: ("run", node, prefix) or ("line", Line)
    work: list[tuple[str, Any, str]] = [("start", list(roots), "")]
    while work:
        kind, item, prefix = work.pop()
        if kind == "line":
            lines.append(item)
            continue
        nodes: list[TurnNode] = item if kind == "start" else [item]
        if len(nodes) > 1:
            pending: list[tuple[str, Any, str]] = []
            for i, child in enumerate(nodes):
                last = i == len(nodes) - 1
                label = "current branch" if child.on_current else "abandoned branch"
                heading = Line(
                    prefix + ("└─ " if last else "├─ "),
                    f"{label} ({_run_summary(child)})",
                    "bold" if child.on_current else "dim",
                )
                pending.append(("line", heading, ""))
                pending.append(("run", child, prefix + ("   " if last else "│  ")))
            work.extend(reversed(pending))
            continue
        if not nodes:
            continue
        run = [nodes[0]]
        while len(run[-1].children) == 1:
            run.append(run[-1].children[0])
        lines.extend(_run_lines(run, prefix, fmt, keep))
        if run[-1].children:
            work.append(("start", run[-1].children, prefix))
    return lines


def _run_summary(node: TurnNode) -> str:
    n = 1
    while len(node.children) == 1:
        node = node.children[0]
        n += 1
    text = f"{n:,} turn{'s' if n != 1 else ''}"
    if node.children:
        text += f", then {len(node.children):,} branches"
    return text


def _run_lines(run: list[TurnNode], prefix: str, fmt: str | None, keep: int | None) -> list[Line]:
    if keep is None or len(run) <= 2 * keep + 1:
        shown = set(range(len(run)))
    else:
        shown = set(range(keep)) | set(range(len(run) - keep, len(run)))
        shown |= {i for i, n in enumerate(run) if n.notes or n.is_tip}
    out: list[Line] = []
    hidden = 0
    for i, node in enumerate(run):
        if i not in shown:
            hidden += 1
            continue
        if hidden:
            out.append(Line(prefix, f"⋮  {hidden:,} more turn{'s' if hidden != 1 else ''}", "dim"))
            hidden = 0
        out.append(Line(prefix, describe_turn(node, fmt), _style(node)))
    return out


def _style(node: TurnNode) -> str:
    if node.is_tip:
        return "bold green"
    return "" if node.on_current else "dim"


def header(conv: Conversation, branches: int) -> str:
    """The tree's title line."""
    title = f' "{conv.title}"' if conv.title else ""
    fmt = conv.format or "format not yet known"
    fork = f", forked from {conv.forked_from[:12]}" if conv.forked_from else ""
    return (
        f"conversation {conv.id}{title} — {fmt}, {conv.message_count:,} messages, "
        f"{branches} branch{'es' if branches != 1 else ''}{fork}"
    )


def tree_lines(
    store: Store, conversation: str, *, keep: int | None = 3
) -> tuple[str, list[Line], list[str]]:
    """Header, outline and footer (rewind digests) of one conversation's tree."""
    conv = store.conversation(conversation)
    messages = store.messages(conversation)
    roots = build_tree(
        messages, conv.tip_id, store.checkpoints(conversation), store.compactions(conversation)
    )
    footer = [
        f"rewind to {r.label!r} from #{r.from_tip}: {r.digest}" for r in store.rewinds(conversation)
    ]
    footer[:0] = [
        f"⚑ {cp.label} marks the start (before the first message)"
        for cp in store.checkpoints(conversation)
        if cp.message_id is None and not cp.dropped
    ]
    if not messages:
        footer.insert(0, "(empty: no turn committed yet)")
    title = header(conv, len(store.branches(conversation)))
    return title, outline(roots, conv.format, keep=keep), footer


def when(timestamp: float) -> str:
    """A UTC timestamp as ``YYYY-MM-DD HH:MM``."""
    return _dt.datetime.fromtimestamp(timestamp, _dt.UTC).strftime("%Y-%m-%d %H:%M")


def use_rich(stream: Any) -> bool:
    """Rich output only for a terminal, with rich installed and NO_COLOR unset."""
    if os.environ.get("NO_COLOR") or not getattr(stream, "isatty", lambda: False)():
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True
