"""Helpers every rung needs: the regions, kept steps, tool names, argument stubs.

The regions come from the one splitter of the history core
(:func:`glyphfold.compaction.history.steps.split_regions`) with the tail the ladder
fixed for the run (``RungContext.tail_messages``), so every rung of a run sees the
same head, the same tail, and the same newest real user message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from glyphfold.compaction.history.model import History, Message, Text, ToolCall, ToolResult
from glyphfold.compaction.history.steps import Regions, Step, split_regions
from glyphfold.compaction.ladder.rungs.base import RungContext
from glyphfold.compaction.ladder.rungs.notable import elision_stub, is_stub

__all__ = [
    "kept_steps",
    "regions",
    "result_text",
    "stub_arguments",
    "system_tokens",
    "tool_names",
]


def tool_names(history: History) -> dict[str, str]:
    """Map each tool call id to its tool name."""
    out: dict[str, str] = {}
    for m in history.messages:
        for b in m.blocks:
            if isinstance(b, ToolCall):
                out[b.id] = b.name
    return out


def result_text(tr: ToolResult) -> str:
    """The text of a tool result (its text blocks, newline-joined)."""
    content = tr.content
    if len(content) == 1 and type(content[0]) is Text:  # the usual result: one text
        return content[0].text
    return "\n".join(c.text for c in content if isinstance(c, Text))


def regions(history: History, ctx: RungContext) -> Regions:
    """Head / middle / tail of ``history`` with the run's tail (SPEC §1, §5.5)."""
    return split_regions(history, tail_messages=max(1, ctx.tail_messages))


def system_tokens(history: History, ctx: RungContext) -> int:
    """What the top-level system prompt costs (Anthropic; 0 without one)."""
    return ctx.count(history.replace_messages(())) if history.system is not None else 0


def kept_steps(history: History, reg: Regions, ctx: RungContext) -> frozenset[int]:
    """Starts of the middle steps every rung keeps verbatim where they are.

    The request — the newest real user message and the consecutive real user messages
    right before it (SPEC §5.5: it reaches the model as text wherever it lies) — and any
    step holding a pinned message.
    """
    msgs = history.messages
    request = set(reg.request)
    is_pinned = ctx.is_pinned
    out: set[int] = set()
    for s in reg.middle_steps:  # plain loops: every rung asks, of every middle message
        if s.start in request:
            out.add(s.start)
            continue
        for i in range(s.start, s.end):
            if is_pinned(msgs[i]):
                out.add(s.start)
                break
    return frozenset(out)


def step_of(steps: Iterable[Step]) -> dict[int, Step]:
    """Message index -> the step holding it."""
    return {i: s for s in steps for i in s.indices}


def _stub_value(v: Any, where: str, min_chars: int, hex_digits: int) -> Any:
    if isinstance(v, str):
        if len(v) <= min_chars or is_stub(v):
            return v
        return elision_stub(v, tool_name=where, hex_digits=hex_digits)
    try:
        text = json.dumps(v, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return v
    if len(text) <= min_chars:
        return v
    return elision_stub(text, tool_name=where, hex_digits=hex_digits)


def stub_arguments(call: ToolCall, *, min_chars: int, hex_digits: int = 6) -> ToolCall | None:
    """The call with every argument value over ``min_chars`` replaced by a stub, or None.

    The call stays valid: OpenAI ``arguments`` stays a JSON string, Anthropic
    ``input`` an object. Short values (a path, a flag) stay as they are, so the model
    still sees what it asked for; a stub names the tool and argument, the size and a
    hash: ``[elided: write_file.content, 12,345 chars, sha1 3f2a9c]``.
    """
    args = call.arguments
    as_json = isinstance(args, str)
    if as_json:
        try:
            decoded = json.loads(args)
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            if len(args) <= min_chars or is_stub(args):
                return None
            stub = elision_stub(args, tool_name=f"{call.name} arguments", hex_digits=hex_digits)
            return dataclasses.replace(call, arguments=json.dumps({"elided": stub}))
        args = decoded
    if not isinstance(args, dict):
        return None
    new = {k: _stub_value(v, f"{call.name}.{k}", min_chars, hex_digits) for k, v in args.items()}
    if all(new[k] is args[k] for k in args):
        return None
    value: Any = json.dumps(new, ensure_ascii=False) if as_json else new
    return dataclasses.replace(call, arguments=value)


def replace_blocks(m: Message, blocks: list[Any]) -> Message:
    """``m`` with other blocks (a new message: re-serialised from its blocks)."""
    return dataclasses.replace(m, blocks=tuple(blocks))
