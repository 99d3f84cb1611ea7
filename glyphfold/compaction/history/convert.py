"""Convert a history between wire formats.

The targets group by how tool results travel: OpenAI Chat Completions and Responses
(tool messages / function_call_output items right after the call) are built as the
OpenAI rules below say, Anthropic, Gemini and Bedrock (results in the next user
message, strict alternation) as the Anthropic rules say; the target's serialiser
writes its own shapes. Calls answered inside their own message (MCP and server
tools) have no counterpart elsewhere and are dropped with their results.

Text, images, tool calls and tool results survive; the result passes the
target provider's rules (validate_history). What has no counterpart is dropped,
and the number of dropped blocks is reported in ``History.meta["dropped_blocks"]``
of the canonical result:

OpenAI -> Anthropic
  leading system/developer messages become the top-level ``system``; a system
  message later in the history becomes a ``[system] ...`` text block of a user
  message; consecutive ``tool`` messages become one user message of
  ``tool_result`` blocks; same-role neighbours are merged (Anthropic alternates);
  JSON-string arguments become ``input`` dicts; parts with no Anthropic
  equivalent (audio, files, refusals) are dropped.
OpenAI <-> Responses
  system and developer messages stay system and developer messages, where they were
  (both formats have them; their text parts are kept, other parts dropped).
Anthropic -> OpenAI
  ``system`` becomes the first system message; ``tool_result`` blocks become
  ``tool`` messages (images they carry follow in a user message, since OpenAI
  tool messages hold text only; ``is_error`` becomes an ``[error]`` prefix);
  ``input`` dicts become JSON-string arguments; thinking and other Anthropic-only
  blocks are dropped.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from glyphfold.checks import check_choice
from glyphfold.compaction.history.messages import coerce, to_wire
from glyphfold.compaction.history.model import (
    ANTHROPIC,
    BEDROCK,
    FORMATS,
    OPENAI,
    TOOL_MESSAGE_FORMATS,
    Block,
    FrozenMapping,
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.history.wire.base import args_object

__all__ = ["convert_history"]

_CONTINUED = "(conversation continues)"


def _args_json(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def _keep(blocks: tuple[Block, ...], kinds: tuple[type, ...]) -> tuple[list[Block], int]:
    # a call answered inside its own message (MCP, server tools) has no counterpart
    inline = {b.call_id for b in blocks if isinstance(b, ToolResult)} if ToolCall in kinds else ()
    kept = [
        b
        for b in blocks
        if isinstance(b, kinds) and not (isinstance(b, ToolCall) and b.id in inline)
    ]
    return kept, len(blocks) - len(kept)


def _to_anthropic(h: History) -> History:
    system_texts: list[str] = [h.system_text] if h.system_text else []
    out: list[list[Any]] = []  # [role, blocks]
    dropped = 0
    started = False

    def push(role: str, blocks: list[Block]) -> None:
        if not blocks:
            return
        if out and out[-1][0] == role:
            prev = out[-1][1]
            # tool_result blocks must lead their user message
            results = [b for b in prev + blocks if isinstance(b, ToolResult)]
            others = [b for b in prev + blocks if not isinstance(b, ToolResult)]
            out[-1][1] = results + others
        else:
            out.append([role, list(blocks)])

    for m in h.messages:
        if m.role == "system":
            text = m.text
            if not started:
                if text:
                    system_texts.append(text)
            elif text:
                push("user", [Text(f"[system] {text}")])
            continue
        started = True
        if m.role == "tool":
            for r in m.tool_results:
                content, lost = _keep(r.content, (Text, Image))
                dropped += lost
                push("user", [ToolResult(r.call_id, tuple(content), r.is_error)])
            continue
        if m.role == "user":
            blocks, lost = _keep(m.blocks, (Text, Image, ToolResult))
        else:
            blocks, lost = _keep(m.blocks, (Text, ToolCall))
            blocks = [
                ToolCall(b.id, b.name, args_object(b.arguments)) if isinstance(b, ToolCall) else b
                for b in blocks
            ]
        dropped += lost
        blocks = [b for b in blocks if not (isinstance(b, Text) and not b.text)]
        push(m.role, [_fresh(b) for b in blocks])
    if out and out[0][0] != "user":
        out.insert(0, ["user", [Text(_CONTINUED)]])
    messages = tuple(Message(role, tuple(blocks)) for role, blocks in out)
    system = "\n\n".join(system_texts) if system_texts else None
    return History(
        ANTHROPIC,
        messages,
        system,
        "dict" if system is not None or h.envelope == "dict" else "list",
        h.extra if h.envelope == "dict" else FrozenMapping(),
        FrozenMapping({"dropped_blocks": dropped}),
    )


def _fresh(b: Block) -> Block:
    """The block without its source-format raw dict (it would leak foreign keys)."""
    if isinstance(b, Text):
        return Text(b.text)
    if isinstance(b, Image):
        return Image(b.media_type, data=b.data, url=b.url, width=b.width, height=b.height)
    if isinstance(b, ToolCall):
        return ToolCall(b.id, b.name, b.arguments)
    if isinstance(b, ToolResult):
        return ToolResult(b.call_id, tuple(_fresh(c) for c in b.content), b.is_error)
    return b


def _to_openai(h: History) -> History:
    out: list[Message] = []
    dropped = 0
    if h.system is not None and h.system_text:
        out.append(Message("system", (Text(h.system_text),)))
    for m in h.messages:
        if m.role == "system":  # Chat Completions and Responses both have system/developer
            system_blocks, lost = _keep(m.blocks, (Text,))
            dropped += lost
            role = m.raw.get("role") if m.raw is not None else None
            raw = MappingProxyType({"role": role if role in ("system", "developer") else "system"})
            out.append(Message("system", tuple(_fresh(b) for b in system_blocks), raw=raw))
            continue
        if m.role == "assistant":
            blocks, lost = _keep(m.blocks, (Text, ToolCall))
            dropped += lost
            conv: list[Block] = [
                ToolCall(b.id, b.name, _args_json(b.arguments))
                if isinstance(b, ToolCall)
                else Text(b.text if isinstance(b, Text) else "")
                for b in blocks
            ]
            if conv:
                out.append(Message("assistant", tuple(conv)))
            continue
        images_after: list[Block] = []
        rest: list[Block] = []
        for b in m.blocks:
            if isinstance(b, ToolResult):
                texts = [c.text for c in b.content if isinstance(c, Text)]
                images_after.extend(_fresh(c) for c in b.content if isinstance(c, Image))
                dropped += sum(1 for c in b.content if not isinstance(c, Text | Image))
                text = "\n".join(texts)
                if b.is_error:
                    text = f"[error] {text}" if text else "[error]"
                out.append(Message("tool", (ToolResult(b.call_id, (Text(text),) if text else ()),)))
            elif isinstance(b, Text | Image):
                rest.append(_fresh(b))
            else:
                dropped += 1
        if images_after:
            rest = [Text("[images returned by the tools above]"), *images_after, *rest]
        if rest:
            out.append(Message("user", tuple(rest)))
    return History(
        OPENAI,
        tuple(out),
        None,
        h.envelope,
        h.extra if h.envelope == "dict" else FrozenMapping(),
        FrozenMapping({"dropped_blocks": dropped}),
    )


def convert_history(history: Any, *, to: str) -> Any:
    """Convert a history (wire or canonical) to the ``to`` wire format.

    Returns the kind it was given: a History for a History, wire dicts for wire
    input (in the target format). Same format: the input comes back unchanged.
    """
    check_choice("to", to, FORMATS)
    h, _ = coerce(history, plain=to)  # plain text: already in any format
    if h.format == to:
        return history
    result = _to_openai(h) if to in TOOL_MESSAGE_FORMATS else _to_anthropic(h)
    if {h.format, to} - {OPENAI, ANTHROPIC}:
        # request keys of one family mean nothing (or another format) in the other
        extra = {k: v for k, v in h.extra.items() if k == "model"}
        result = History(
            result.format, result.messages, result.system, result.envelope, extra, result.meta
        )
    if to != result.format:
        system = result.system
        if to == BEDROCK and isinstance(system, str):
            system = [{"text": system}]
        envelope = "dict" if system is not None or result.envelope == "dict" else "list"
        result = History(to, result.messages, system, envelope, result.extra, result.meta)
    return result if isinstance(history, History) else to_wire(result)
