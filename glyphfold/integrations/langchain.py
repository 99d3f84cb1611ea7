"""LangChain v1 and LangGraph: an ``AgentMiddleware`` for ``create_agent`` and a pre-model hook.

::

    from langchain.agents import create_agent
    from glyphfold.integrations.langchain import GlyphfoldMiddleware

    agent = create_agent(model, tools, middleware=[GlyphfoldMiddleware(budget=100_000)])

Before each model call the middleware hands the agent's messages to the conversation's
:class:`~glyphfold.Compactor` (SPEC §5.10, issue 19): past the trigger it compacts them
to a lower target, and between compactions it sends its previous compacted history byte
for byte plus the new messages, so the provider's prompt cache keeps hitting (the async
hooks run the ladder in a worker thread).

``mode="request"`` (the default) compacts only what is sent (``wrap_model_call``): the
thread's state keeps every message, so checkpoints, other nodes and a later reader see
the whole conversation, and nothing glyphfold does is irreversible. ``mode="state"``
replaces the state's messages with the compacted ones (``before_model``), like
LangChain's own ``SummarizationMiddleware``: smaller checkpoints, the originals gone
(their text lives on in the snapshot's source). :func:`glyphfold_pre_model_hook` does
the same as a LangGraph node (``create_react_agent(..., pre_model_hook=...)``; in
``"request"`` mode it returns ``llm_input_messages``, what the model receives).

LangChain messages map to glyphfold's model directly, with no lossy conversion:
unchanged messages come back as the very same objects; a changed one is a copy of the
original (ids, names, ``additional_kwargs``, ``response_metadata``, ``artifact``
kept). The snapshot message keeps its source text in
``response_metadata["x_glyphfold"]``, which no chat model sends, so the next
compaction re-renders the pages from text.

Needs ``pip install glyphfold[langchain]``.
"""

# ruff: noqa: E402  (the framework is checked by require() before it is imported)
from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from glyphfold.integrations._requires import require

_WHERE = "glyphfold.integrations.langchain"
require("langchain", "langchain.agents.middleware", _WHERE, "langchain_core.messages")
require("langgraph", "langgraph.graph.message", _WHERE)
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from glyphfold.compaction.history.images import parse_data_url
from glyphfold.compaction.history.markers import X_KEY
from glyphfold.compaction.history.model import (
    OPENAI,
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
from glyphfold.errors import HistoryFormatError, InputError
from glyphfold.integrations.policy import CompactionPolicy

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.integrations.policy import AdapterOptions

__all__ = ["GlyphfoldMiddleware", "from_history", "glyphfold_pre_model_hook", "to_history"]

_ORIGIN = "langchain_message"  # canonical meta key: the LangChain message it came from
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


# --------------------------------------------------------------------------- LangChain -> model


def _image(block: Mapping[str, Any]) -> Block:
    t = block.get("type")
    if t == "image_url":
        iu = block.get("image_url")
        url = iu.get("url") if isinstance(iu, Mapping) else iu
        if isinstance(url, str):
            media_type, data = parse_data_url(url)
            if data is not None:
                return Image(media_type, data=data, raw=block)
            return Image(None, url=url, raw=block)
        return Unknown(block)
    src = block.get("source")
    if isinstance(src, Mapping) and src.get("type") == "base64":  # Anthropic-native
        return Image(src.get("media_type"), data=src.get("data"), raw=block)
    data = block.get("base64") or (
        block.get("data") if block.get("source_type") == "base64" else None
    )
    mime = block.get("mime_type")
    if isinstance(data, str):
        return Image(mime if isinstance(mime, str) else None, data=data, raw=block)
    url = block.get("url")
    if isinstance(url, str):
        return Image(mime if isinstance(mime, str) else None, url=url, raw=block)
    return Unknown(block)


def _blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Text(content)] if content else []
    out: list[Block] = []
    for part in content or ():
        if isinstance(part, str):
            out.append(Text(part))
        elif isinstance(part, Mapping) and part.get("type") == "text":
            out.append(Text(str(part.get("text", "")), raw=part))
        elif isinstance(part, Mapping) and part.get("type") in ("image_url", "image"):
            out.append(_image(part))
        else:
            out.append(Unknown(part))
    return out


def _message(lc: BaseMessage) -> Message:
    role = _ROLES.get(lc.type)
    if role is None:
        msg = f"unsupported LangChain message type {lc.type!r} ({type(lc).__name__})"
        raise HistoryFormatError(msg)
    blocks = _blocks(lc.content)
    if isinstance(lc, ToolMessage):
        blocks = [ToolResult(lc.tool_call_id, tuple(blocks), lc.status == "error")]
    elif isinstance(lc, AIMessage):
        blocks += [ToolCall(tc["id"] or "", tc["name"], tc["args"], raw=tc) for tc in lc.tool_calls]
    meta: dict[str, Any] = {_ORIGIN: lc}
    info = (lc.response_metadata or {}).get(X_KEY)
    if isinstance(info, Mapping):
        meta[X_KEY] = info
    raw = MappingProxyType({"id": lc.id}) if lc.id else None
    return Message(role, tuple(blocks), raw=raw, meta=FrozenMapping(meta))


def to_history(messages: Sequence[BaseMessage]) -> History:
    """LangChain messages as a canonical History (tool messages: OpenAI-style pairing)."""
    return History(OPENAI, tuple(_message(m) for m in messages))


# --------------------------------------------------------------------------- model -> LangChain


def _part(b: Block) -> Any:
    if isinstance(b, Text):
        out = dict(b.raw) if b.raw is not None else {"type": "text"}
        out["text"] = b.text
        return out
    if isinstance(b, Image):
        if b.raw is not None and _image(b.raw) == b:
            return dict(b.raw)  # unchanged: its own block, whatever its style
        iu: dict[str, Any] = {"url": b.data_url}
        if b.raw is not None and isinstance(b.raw.get("image_url"), Mapping):
            iu = {**b.raw["image_url"], **iu}  # the detail level the ladder priced
        return {"type": "image_url", "image_url": iu}
    if isinstance(b, Unknown):
        return b.raw
    msg = f"{type(b).__name__} is not LangChain message content"
    raise HistoryFormatError(msg)


def _content(blocks: Sequence[Block], original: Any) -> Any:
    if not blocks:
        return "" if not isinstance(original, list) else []
    if len(blocks) == 1 and isinstance(blocks[0], Text) and blocks[0].raw is None:
        return blocks[0].text
    return [_part(b) for b in blocks]


def _info(m: Message) -> Mapping[str, Any] | None:
    info = m.meta.get(X_KEY) if m.meta else None
    if info is None and m.raw is not None:
        info = m.raw.get(X_KEY)
    return info if isinstance(info, Mapping) else None


def _rebuilt(m: Message) -> BaseMessage:
    origin = m.meta.get(_ORIGIN) if m.meta else None
    info = _info(m)
    calls = [b for b in m.blocks if isinstance(b, ToolCall)]
    if m.role == "tool":
        (tr,) = (b for b in m.blocks if isinstance(b, ToolResult))
        content = _content(tr.content, getattr(origin, "content", None))
        if isinstance(origin, ToolMessage):
            return origin.model_copy(update={"content": content})
        return ToolMessage(
            content=content, tool_call_id=tr.call_id, status="error" if tr.is_error else "success"
        )
    content = _content(
        [b for b in m.blocks if not isinstance(b, ToolCall)], getattr(origin, "content", None)
    )
    if origin is not None:
        update: dict[str, Any] = {"content": content}
        if isinstance(origin, AIMessage):
            update["tool_calls"] = [dict(c.raw) if c.raw is not None else _call(c) for c in calls]
        return origin.model_copy(update=update)
    metadata = {X_KEY: dict(info)} if info is not None else {}
    if m.role == "user":
        return HumanMessage(content=content, response_metadata=metadata)
    if m.role == "assistant":
        return AIMessage(
            content=content, tool_calls=[_call(c) for c in calls], response_metadata=metadata
        )
    return SystemMessage(content=content, response_metadata=metadata)


def _call(c: ToolCall) -> dict[str, Any]:
    args = c.arguments if isinstance(c.arguments, dict) else {}
    return {"id": c.id, "name": c.name, "args": args, "type": "tool_call"}


def from_history(h: History) -> list[BaseMessage]:
    """LangChain messages of a canonical History made by :func:`to_history` (and the ladder).

    A message the ladder did not touch comes back as its very LangChain object.
    """
    out: list[BaseMessage] = []
    for m in h.messages:
        origin = m.meta.get(_ORIGIN) if m.meta else None
        if origin is not None and _message_is_unchanged(m, origin):
            out.append(origin)
        else:
            out.append(_rebuilt(m))
    return out


def _message_is_unchanged(m: Message, origin: BaseMessage) -> bool:
    return m.blocks == _message(origin).blocks


# --------------------------------------------------------------------------- the hooks


_MODES = ("request", "state")


def _mode(mode: object) -> str:
    if mode not in _MODES:
        msg = (
            "mode must be 'request' (compact what is sent, the state stays whole) or "
            f"'state' (replace the state's messages), got {mode!r}"
        )
        raise InputError(msg)
    return str(mode)


class GlyphfoldMiddleware(AgentMiddleware):
    """``create_agent(..., middleware=[GlyphfoldMiddleware(budget=...)])``.

    Options as :class:`~glyphfold.integrations.policy.AdapterOptions`: ``budget``
    and/or ``window`` (+ ``ratio``), ``trigger``, ``low``, ``profile``, ``counter`` (a
    RequestCounter; default: the estimate), ``on_compact``, and :func:`glyphfold.compact`'s
    options; a misspelt one raises ``InputError`` here. Without ``profile=`` the profile
    is the model's (``ChatAnthropic`` -> ``anthropic``, ``ChatOpenAI`` -> ``openai``...).

    ``mode="request"`` (default): ``wrap_model_call`` compacts what is sent, priced with
    the tools bound to that call; the state keeps every message. ``mode="state"``:
    ``before_model`` replaces the state's messages, priced with the model and tools seen
    by the agent's previous model call, since ``before_model`` runs before the request
    exists. One instance is one conversation (its compactor remembers the last output).
    """

    def __init__(
        self,
        budget: int | None = None,
        *,
        mode: str = "request",
        **options: Unpack[AdapterOptions],
    ) -> None:
        super().__init__()
        self.mode = _mode(mode)
        self.policy = CompactionPolicy(budget, **options)
        self._model: Any = None
        self._tools: list[Any] = []

    # -- mode="state": the state's messages are replaced ------------------------------

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if self.mode != "state":
            return None
        h = to_history(state["messages"])
        profile = self.policy.resolve_profile(self._model)
        return _changed(h, self.policy.fit(h, profile=profile, tools=self._tools), profile)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if self.mode != "state":
            return None
        h = to_history(state["messages"])
        profile = self.policy.resolve_profile(self._model)
        fitted = await self.policy.afit(h, profile=profile, tools=self._tools)
        return _changed(h, fitted, profile)

    # -- mode="request": only what is sent is compacted --------------------------------

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self._model = request.model
        self._tools = tool_schemas(request.tools)
        if self.mode != "request":
            return handler(request)
        h = to_history(request.messages)
        profile = self.policy.resolve_profile(request.model)
        fitted = self.policy.fit(h, profile=profile, tools=self._tools)
        return handler(_sent(request, fitted, profile))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self._model = request.model
        self._tools = tool_schemas(request.tools)
        if self.mode != "request":
            return await handler(request)
        h = to_history(request.messages)
        profile = self.policy.resolve_profile(request.model)
        fitted = await self.policy.afit(h, profile=profile, tools=self._tools)
        return await handler(_sent(request, fitted, profile))


def _sent(request: Any, fitted: Any, profile: Any) -> Any:
    messages = _compacted(fitted, profile)
    return request if messages is None else request.override(messages=messages)


def _compacted(fitted: Any, profile: Any) -> list[BaseMessage] | None:
    """The compactor's messages as LangChain messages, or None when it changed nothing."""
    if fitted.action == "none":
        return None
    messages = from_history(fitted.compacted)
    if profile is not None and _is_anthropic(profile):
        messages = _anthropic_cache_marks(messages)
    return messages


def tool_schemas(tools: Sequence[Any] | None) -> list[Any]:
    """The JSON schemas of LangChain tools (dicts pass as they are): what the model is sent."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out: list[Any] = []
    for t in tools or ():
        try:
            out.append(t if isinstance(t, Mapping) else convert_to_openai_tool(t))
        except Exception:  # a tool LangChain itself cannot describe: priced by its name
            out.append({"name": getattr(t, "name", repr(t))})
    return out


def _changed(h: History, fitted: Any, profile: Any = None) -> dict[str, Any] | None:
    messages = _compacted(fitted, profile)
    if messages is None or fitted.compacted is h:
        return None
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


def _is_anthropic(profile: Any) -> bool:
    import glyphfold

    return glyphfold.get_profile(profile).provider == "anthropic"


def _anthropic_cache_marks(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The snapshot's prompt-cache breakpoint as a ``cache_control`` block ChatAnthropic sends.

    The ladder puts a breakpoint on the snapshot (SPEC §5.6), but ChatAnthropic drops
    ``cache_control`` from ``image_url`` parts; LangChain's standard ``image`` block
    keeps it. So for an Anthropic model the snapshot's last page becomes a standard
    ``image`` block carrying ``cache_control`` (any other mark on its pages is dropped,
    as ChatAnthropic would drop it).
    """
    out = []
    for m in messages:
        info = (m.response_metadata or {}).get(X_KEY)
        if isinstance(info, Mapping) and info.get("kind") == "snapshot":
            m = _marked_snapshot(m)
        out.append(m)
    return out


def _marked_snapshot(m: BaseMessage) -> BaseMessage:
    if not isinstance(m.content, list):
        return m
    parts: list[Any] = list(m.content)
    pages = [
        k for k, p in enumerate(parts) if isinstance(p, Mapping) and p.get("type") == "image_url"
    ]
    if not pages:
        return m
    for k in pages:
        parts[k] = {key: v for key, v in parts[k].items() if key != "cache_control"}
    iu = parts[pages[-1]].get("image_url")
    url = iu.get("url") if isinstance(iu, Mapping) else iu
    media_type, data = parse_data_url(url) if isinstance(url, str) else (None, None)
    if data is None:
        return m
    parts[pages[-1]] = {
        "type": "image",
        "base64": data,
        "mime_type": media_type or "image/png",
        "cache_control": {"type": "ephemeral"},
    }
    return m.model_copy(update={"content": parts})


def glyphfold_pre_model_hook(
    budget: int | None = None,
    *,
    model: Any = None,
    tools: Sequence[Any] | None = None,
    mode: str = "request",
    **options: Unpack[AdapterOptions],
) -> Any:
    """A LangGraph node (sync and async) that compacts the state's ``messages``.

    Use it as ``create_react_agent(..., pre_model_hook=glyphfold_pre_model_hook(budget=...))``
    (``mode="request"``, the default: it returns ``llm_input_messages``, what the model
    receives, and leaves the state whole) or, with ``mode="state"``, as any graph's node
    before the model (``graph.add_node("compact", ...)``: it replaces the state's
    messages). A node sees only the state: pass the graph's ``model`` (the profile is
    taken from it) and ``tools`` (their schemas are priced with the request). Options as
    :class:`GlyphfoldMiddleware`.
    """
    from langchain_core.runnables import RunnableLambda

    _mode(mode)
    policy = CompactionPolicy(budget, **options)
    schemas = tool_schemas(tools)

    def out(h: History, fitted: Any, profile: Any) -> dict[str, Any]:
        if mode == "state":
            return _changed(h, fitted, profile) or {}
        messages = _compacted(fitted, profile)
        return {} if messages is None else {"llm_input_messages": messages}

    def hook(state: Any) -> dict[str, Any]:
        h = to_history(state["messages"])
        profile = policy.resolve_profile(model)
        return out(h, policy.fit(h, profile=profile, tools=schemas), profile)

    async def ahook(state: Any) -> dict[str, Any]:
        h = to_history(state["messages"])
        profile = policy.resolve_profile(model)
        return out(h, await policy.afit(h, profile=profile, tools=schemas), profile)

    return RunnableLambda(hook, afunc=ahook, name="glyphfold_compact")
