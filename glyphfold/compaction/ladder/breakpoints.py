"""Prompt-cache breakpoints: one on the newest snapshot block, at most four in a request.

After a compaction that made snapshot pages, the request is: system, head, the
snapshot blocks (pages), then the tail. The blocks already sent are frozen (SPEC
§5.10): a later compaction keeps them byte for byte and adds a new block after them,
and a :class:`~glyphfold.Compactor` appends new messages after its previous output.
So the prefix up to the newest block stays byte-identical across requests, and one
cache breakpoint at the end of that block lets the provider's prompt cache hold it,
pages included. Ours moves to the newest block (older blocks lose theirs: they are
inside its prefix); the harness's own markers on the newest messages stay, within
the limit (:func:`limit_wire_markers` for a request assembled from an earlier output).

Where each format puts a breakpoint:

- Anthropic: ``cache_control: {"type": "ephemeral"}`` on the last block;
- Bedrock Converse: a ``{"cachePoint": {"type": "default"}}`` block at the end;
- OpenAI Chat Completions and Responses: only when the history already uses
  explicit markers (``cache_control`` parts through an Anthropic-compatible
  gateway, Responses ``prompt_cache_breakpoint``); otherwise their automatic
  prefix caching needs no marker;
- Gemini: none (its context caching is a separate API).

Anthropic and Bedrock take at most four breakpoints per request (system, tools and
messages together). When adding ours would pass that, the oldest breakpoints of the
messages go first; those of the system prompt and the tools are never touched, and
when they alone fill the four, no breakpoint is added. Markers on kept content are
otherwise carried through untouched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from glyphfold.compaction.history.markers import SNAPSHOT, marker_kind
from glyphfold.compaction.history.model import (
    Block,
    History,
    Image,
    Message,
    Text,
    ToolResult,
    Unknown,
)
from glyphfold.compaction.history.validate import MAX_CACHE_BREAKPOINTS, count_breakpoints
from glyphfold.compaction.history.wire import CacheMarker, WireFormat, wire_format

__all__ = ["limit_wire_markers", "place_cache_breakpoint"]


def _block_marked(b: Block, key: str) -> bool:
    if isinstance(b, Unknown):
        return isinstance(b.raw, Mapping) and key in b.raw
    raw = getattr(b, "raw", None)
    if raw is not None and key in raw:
        return True
    if isinstance(b, ToolResult):
        return any(_block_marked(c, key) for c in b.content)
    return False


def _message_markers(m: Message, key: str) -> int:
    return sum(1 for b in m.blocks if _block_marked(b, key))


def _unmark(b: Block, key: str) -> Block | None:
    """The block without its marker (None: the block IS the marker, a cachePoint)."""
    if isinstance(b, Unknown):
        if isinstance(b.raw, Mapping) and key in b.raw:
            return (
                None if len(b.raw) == 1 else Unknown({k: v for k, v in b.raw.items() if k != key})
            )
        return b
    out = b
    raw = getattr(b, "raw", None)
    if raw is not None and key in raw:
        out = dataclasses.replace(
            b, raw=MappingProxyType({k: v for k, v in raw.items() if k != key})
        )
    if isinstance(out, ToolResult) and any(_block_marked(c, key) for c in out.content):
        content = tuple(c for c in (_unmark(c, key) for c in out.content) if c is not None)
        out = dataclasses.replace(out, content=content)
    return out


def _drop_oldest(
    msgs: list[Message], key: str, n: int, keep: int, *, only: int | None = None
) -> None:
    """Remove ``n`` breakpoints from the messages, oldest first, never from ``keep``
    (``only``: from that message alone)."""
    for i, m in enumerate(msgs):
        if n <= 0:
            return
        if i == keep or (only is not None and i != only) or not _message_markers(m, key):
            continue
        blocks: list[Block] = []
        for b in m.blocks:
            if n > 0 and _block_marked(b, key):
                nb = _unmark(b, key)
                n -= 1
                if nb is not None:
                    blocks.append(nb)
            else:
                blocks.append(b)
        msgs[i] = dataclasses.replace(m, blocks=tuple(blocks))


def _marked(m: Message, marker: CacheMarker, row: WireFormat) -> Message:
    """The snapshot message with a breakpoint at its end (the format's own marker)."""
    if marker.as_block:
        point = Unknown({marker.key: dict(marker.value)})
        return dataclasses.replace(m, blocks=(*m.blocks, point))
    last = m.blocks[-1]
    part = row.text_part if isinstance(last, Text) else None
    if isinstance(last, Image):
        part = row.image_part
    if part is None:
        return m
    # a block glyphfold made has no raw dict yet: start from the format's minimal part
    raw: dict[str, Any] = {**part, **(last.raw or {})}
    raw[marker.key] = dict(marker.value)
    blocks = (*m.blocks[:-1], dataclasses.replace(last, raw=MappingProxyType(raw)))
    return dataclasses.replace(m, blocks=blocks)


def _uses_explicit_markers(h: History, key: str) -> bool:
    return any(_message_markers(m, key) for m in h.messages) or bool(
        count_breakpoints(h.system, key)
    )


def place_cache_breakpoint(
    h: History, tokens: int, target: int, count: Callable[[History], int]
) -> tuple[History, int]:
    """(history, tokens) with one breakpoint on the newest snapshot message.

    Unchanged when the history has no snapshot, the format takes no marker, the
    system prompt and tools already hold four, or the marker would push the
    estimate over ``target``.
    """
    row = wire_format(h.format)
    marker = row.cache_marker
    if marker is None:
        return h, tokens
    key = marker.key
    if marker.explicit_only and not _uses_explicit_markers(h, key):
        return h, tokens
    snaps = [i for i, m in enumerate(h.messages) if marker_kind(m) == SNAPSHOT]
    if not snaps or not h.messages[snaps[-1]].blocks:
        return h, tokens
    at = snaps[-1]
    fixed = count_breakpoints(h.system, key) + count_breakpoints(dict(h.extra), key)
    if fixed >= MAX_CACHE_BREAKPOINTS:
        return h, tokens
    msgs = list(h.messages)
    if _message_markers(msgs[at], key):
        return h, tokens  # already marked
    for i in snaps[:-1]:  # older blocks lie inside the newest one's prefix: one of ours
        if _message_markers(msgs[i], key):
            _drop_oldest(msgs, key, _message_markers(msgs[i], key), at, only=i)
    in_messages = sum(_message_markers(m, key) for m in msgs)
    over = fixed + in_messages + 1 - MAX_CACHE_BREAKPOINTS
    if over > 0:
        _drop_oldest(msgs, key, over, at)
    msgs[at] = _marked(msgs[at], marker, row)
    out = h.replace_messages(msgs)
    after = count(out)
    if after > target >= tokens:
        return h, tokens
    return out, after


def _wire_marks(x: Any, key: str) -> int:
    return count_breakpoints(x, key)


def _unmark_wire(x: Any, key: str, n: int) -> tuple[Any, int]:
    """(``x`` with up to ``n`` of its ``key`` markers removed, first ones first, how many)."""
    if n <= 0:
        return x, 0
    if isinstance(x, Mapping):
        done = 0
        out: dict[str, Any] = {}
        for k, v in x.items():
            if k == key and done < n:
                done += 1
                continue
            nv, d = _unmark_wire(v, key, n - done)
            out[k] = nv
            done += d
        return (out, done) if done else (x, 0)
    if isinstance(x, list):
        done = 0
        items: list[Any] = []
        for v in x:
            if key == "cachePoint" and isinstance(v, Mapping) and set(v) == {key} and done < n:
                done += 1
                continue
            nv, d = _unmark_wire(v, key, n - done)
            items.append(nv)
            done += d
        return (items, done) if done else (x, 0)
    return x, 0


def limit_wire_markers(items: list[Any], *, fixed: int, key: str = "cache_control") -> list[Any]:
    """Wire messages with at most ``MAX_CACHE_BREAKPOINTS - fixed`` markers, the oldest gone.

    ``fixed``: the markers of the system prompt and the tools, never touched. Messages
    that lose a marker are new dicts; the others are the very objects given (the caller's
    messages are never changed).
    """
    room = max(0, MAX_CACHE_BREAKPOINTS - fixed)
    counts = [_wire_marks(m, key) for m in items]
    over = sum(counts) - room
    if over <= 0:
        return items
    out = list(items)
    for i, c in enumerate(counts):
        if over <= 0:
            break
        if c:
            out[i], done = _unmark_wire(out[i], key, min(c, over))
            over -= done
    return out
