"""pydantic-ai: a history processor (and a ``ProcessHistory`` capability) that compacts.

::

    from pydantic_ai import Agent
    from glyphfold.integrations.pydantic_ai import GlyphfoldHistory

    agent = Agent(model, capabilities=[GlyphfoldHistory(budget=100_000).capability()])
    # pydantic-ai 1.x: Agent(model, history_processors=[GlyphfoldHistory(budget=100_000)])

Before each model request the processor prices the ``ModelMessage`` list and, past
the trigger, compacts it in a worker thread. pydantic-ai keeps the processed list as
the run's history, so the snapshot (a ``ModelRequest`` whose ``metadata`` holds the
source text under ``x_glyphfold``) is what the next pass finds and re-renders from
text. Parts map to glyphfold's model one to one: system and user prompts and text
parts are text, ``BinaryContent``/``ImageUrl`` images are images, tool calls and tool
returns (retry prompts as error results) pair up, native (built-in) tool calls and
returns are answered inside their response; thinking, compaction and every other part
is carried through as it is. Unchanged messages come back as the very same objects;
a changed one is a ``dataclasses.replace`` copy with only the changed parts replaced.

Needs ``pip install glyphfold[pydantic-ai]``.
"""

# ruff: noqa: E402  (the framework is checked by require() before it is imported)
from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from glyphfold.integrations._requires import require

require("pydantic-ai", "pydantic_ai.messages", "glyphfold.integrations.pydantic_ai")
from pydantic_ai import messages as pm
from pydantic_ai.tools import RunContext

from glyphfold.compaction.history.markers import X_KEY
from glyphfold.compaction.history.model import (
    ANTHROPIC,
    Block,
    FrozenMapping,
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
)
from glyphfold.integrations.policy import CompactionPolicy

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.integrations.policy import AdapterOptions

__all__ = ["GlyphfoldHistory", "from_history", "to_history"]

_DETAIL = {"detail": "high"}
_ORIGIN = "pydantic_ai_message"
_PARSED = "pydantic_ai_blocks"  # the blocks the message parsed to, and each one's part index


# --------------------------------------------------------------------------- pydantic-ai -> model


def _user_items(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Text(content)]
    out: list[Block] = []
    for item in content:
        if isinstance(item, str):
            out.append(Text(item))
        elif isinstance(item, pm.BinaryContent) and item.is_image:
            data = base64.b64encode(item.data).decode("ascii")
            out.append(Image(item.media_type, data=data))
        elif isinstance(item, pm.ImageUrl):
            out.append(Image(None, url=item.url))
        else:
            out.append(Unknown(item))
    return out


def _part_blocks(part: Any) -> list[Block]:
    if isinstance(part, pm.SystemPromptPart | pm.TextPart):
        return [Text(part.content)]
    if isinstance(part, pm.UserPromptPart):
        return _user_items(part.content)
    if isinstance(part, pm.ToolReturnPart | pm.NativeToolReturnPart):
        failed = getattr(part, "outcome", "success") == "failed"
        return [ToolResult(part.tool_call_id, (Text(part.model_response_str()),), failed)]
    if isinstance(part, pm.RetryPromptPart):
        if part.tool_name is not None:
            return [ToolResult(part.tool_call_id, (Text(part.model_response()),), True)]
        return [Text(part.model_response())]
    if isinstance(part, pm.ToolCallPart | pm.NativeToolCallPart):
        return [ToolCall(part.tool_call_id, part.tool_name, part.args)]
    return [Unknown(part)]  # thinking, compaction, files, instructions...


def _message(m: Any) -> Message:
    blocks: list[Block] = []
    layout: list[int] = []
    for k, part in enumerate(m.parts):
        got = _part_blocks(part)
        blocks += got
        layout += [k] * len(got)
    meta: dict[str, Any] = {_ORIGIN: m, _PARSED: (tuple(blocks), tuple(layout))}
    info = (m.metadata or {}).get(X_KEY)
    if info is not None:
        meta[X_KEY] = info
    role = "user" if isinstance(m, pm.ModelRequest) else "assistant"
    return Message(role, tuple(blocks), meta=FrozenMapping(meta))


def to_history(messages: Sequence[Any]) -> History:
    """pydantic-ai ``ModelMessage`` objects as a canonical History (results in the next request)."""
    return History(ANTHROPIC, tuple(_message(m) for m in messages))


# --------------------------------------------------------------------------- model -> pydantic-ai


def _user_content(blocks: Sequence[Block]) -> Any:
    items: list[Any] = []
    for b in blocks:
        if isinstance(b, Text):
            items.append(b.text)
            if b.raw is not None and "cache_control" in b.raw:
                items.append(pm.CachePoint())  # the ladder's prompt-cache breakpoint
        elif isinstance(b, Image) and b.data is not None:
            media = b.media_type or "image/png"
            # pages are read at full resolution: OpenAI models take "detail" from here
            # (Chat: absent means auto, Responses: "auto"); other providers ignore it
            items.append(
                pm.BinaryContent(
                    data=base64.b64decode(b.data), media_type=media, vendor_metadata=_DETAIL
                )
            )
            if b.raw is not None and "cache_control" in b.raw:
                items.append(pm.CachePoint())
        elif isinstance(b, Image):
            items.append(pm.ImageUrl(url=b.url or ""))
        elif isinstance(b, Unknown):
            items.append(b.raw)
    if len(items) == 1 and isinstance(items[0], str):
        return items[0]
    return items


def _text(blocks: Sequence[Block]) -> str:
    out = []
    for b in blocks:
        if isinstance(b, Text):
            out.append(b.text)
        elif isinstance(b, ToolResult):
            out.extend(c.text for c in b.content if isinstance(c, Text))
    return "\n".join(out)


def _rebuilt_part(part: Any, blocks: Sequence[Block]) -> Any:
    if isinstance(part, pm.UserPromptPart):
        return dataclasses.replace(part, content=_user_content(blocks))
    if isinstance(part, pm.SystemPromptPart | pm.TextPart):
        return dataclasses.replace(part, content=_text(blocks))
    if isinstance(part, pm.ToolReturnPart | pm.NativeToolReturnPart | pm.RetryPromptPart):
        return dataclasses.replace(part, content=_text(blocks))
    return part  # calls and carried-through parts are never changed by the ladder


def _new_part(role: str, blocks: Sequence[Block]) -> Any:
    if role == "assistant":
        return pm.TextPart(content=_text(blocks))
    results = [b for b in blocks if isinstance(b, ToolResult)]
    if results:  # a synthetic result of the orphan sweep
        r = results[0]
        return pm.RetryPromptPart(content=_text([r]), tool_call_id=r.call_id, tool_name="unknown")
    return pm.UserPromptPart(content=_user_content(blocks))


def _groups(m: Message) -> list[tuple[int | None, list[Block]]]:
    """The message's blocks grouped by the part they belong to (None: new blocks)."""
    parsed = m.meta.get(_PARSED) if m.meta else None
    if parsed is None:
        return [(None, list(m.blocks))]
    orig, layout = parsed
    if len(orig) == len(m.blocks):
        owners: list[int | None] = list(layout)
    else:  # blocks were added or removed: the kept ones are the very parsed objects
        by_id = {id(b): k for b, k in zip(orig, layout, strict=True)}
        owners = [by_id.get(id(b)) for b in m.blocks]
    out: list[tuple[int | None, list[Block]]] = []
    for b, k in zip(m.blocks, owners, strict=True):
        if out and out[-1][0] == k:
            out[-1][1].append(b)
        else:
            out.append((k, [b]))
    return out


def _rebuilt(m: Message) -> Any:
    origin = m.meta.get(_ORIGIN) if m.meta else None
    parts: list[Any] = []
    for k, blocks in _groups(m):
        if origin is not None and k is not None:
            part = origin.parts[k]
            parsed = _part_blocks(part)
            parts.append(part if parsed == blocks else _rebuilt_part(part, blocks))
        else:
            parts.append(_new_part(m.role, blocks))
    if origin is not None:
        return dataclasses.replace(origin, parts=parts)
    info = m.meta.get(X_KEY) if m.meta else None
    metadata = {X_KEY: dict(info)} if info is not None else None
    if m.role == "assistant":
        return pm.ModelResponse(parts=parts, metadata=metadata)
    return pm.ModelRequest(parts=parts, metadata=metadata)


def from_history(h: History) -> list[Any]:
    """``ModelMessage`` objects of a History made by :func:`to_history` (and the ladder)."""
    out = []
    for m in h.messages:
        parsed = m.meta.get(_PARSED) if m.meta else None
        origin = m.meta.get(_ORIGIN) if m.meta else None
        if origin is not None and parsed is not None and parsed[0] == m.blocks:
            out.append(origin)
        else:
            out.append(_rebuilt(m))
    return out


# --------------------------------------------------------------------------- the processor


class GlyphfoldHistory:
    """``Agent(..., history_processors=[GlyphfoldHistory(budget=...)])``.

    Options as :class:`~glyphfold.integrations.policy.AdapterOptions`: ``budget``
    and/or ``window`` (+ ``ratio``), ``trigger``, ``low``, ``profile``, ``counter``,
    ``on_compact`` and :func:`glyphfold.compact`'s options; a misspelt one raises
    ``InputError`` here. One instance is one conversation (its
    :class:`~glyphfold.Compactor` remembers the last output and appends to it, SPEC
    §5.10): give each agent run its own.
    Without ``profile=`` the profile is the run's model's (``AnthropicModel`` ->
    ``anthropic``, ``OpenAIChatModel`` -> ``openai``...). As a capability
    (:meth:`capability`) the request's tool schemas are priced too.
    """

    def __init__(self, budget: int | None = None, **options: Unpack[AdapterOptions]) -> None:
        self.policy = CompactionPolicy(budget, **options)

    async def __call__(self, ctx: RunContext[Any], messages: list[Any]) -> list[Any]:
        return await self.process(messages, model=ctx.model)

    async def process(
        self, messages: list[Any], *, model: Any = None, tools: Sequence[Any] | None = None
    ) -> list[Any]:
        """The compacted messages for a request to ``model`` with ``tools`` (schemas)."""
        h = to_history(messages)
        profile = self.policy.resolve_profile(model)
        # the conversation's compactor: under the trigger the messages themselves; then
        # its compacted history plus the new messages, byte-stable (SPEC §5.10)
        fitted = await self.policy.afit(h, profile=profile, tools=tools)
        if fitted.action == "none":
            return messages
        return from_history(fitted.compacted)

    def capability(self) -> Any:
        """The processor as a capability (``Agent(capabilities=[...])``, pydantic-ai 2).

        Like ``ProcessHistory(self)``, and it also prices the request's tool schemas.
        """
        return _capability_class()(self)


def _tool_schemas(params: Any) -> list[Any]:
    tools = [*getattr(params, "function_tools", ()), *getattr(params, "output_tools", ())]
    return [
        {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
        for t in tools
    ]


_CAPABILITY: Any = None


def _capability_class() -> Any:
    """``GlyphfoldCapability``: built on first use (pydantic-ai 1.x has no capabilities)."""
    global _CAPABILITY
    if _CAPABILITY is None:
        from pydantic_ai.capabilities.abstract import AbstractCapability

        @dataclasses.dataclass
        class GlyphfoldCapability(AbstractCapability[Any]):
            """Compacts the history before each model request (SPEC §5), tools priced."""

            processor: GlyphfoldHistory

            async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
                tools = _tool_schemas(request_context.model_request_parameters)
                messages = await self.processor.process(
                    list(request_context.messages), model=request_context.model, tools=tools
                )
                request_context.messages = messages.copy()
                ctx.messages[:] = messages  # the run's history: the next pass finds the snapshot
                return request_context

            @classmethod
            def get_serialization_name(cls) -> str | None:
                return None  # takes a Python object

        _CAPABILITY = GlyphfoldCapability
    return _CAPABILITY
