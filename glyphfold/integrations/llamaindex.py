"""LlamaIndex: an LLM wrapper that compacts what each agent step sends.

::

    from llama_index.core.agent.workflow import FunctionAgent
    from glyphfold.integrations.llamaindex import GlyphfoldLLM

    agent = FunctionAgent(tools=tools, llm=GlyphfoldLLM(llm, budget=100_000))

A ``FunctionAgent`` builds each request from its memory and the run's scratchpad of
tool calls and results, and sends it through the LLM's ``achat_with_tools`` (or the
streaming ``astream_chat_with_tools``). Memory is read once per run, so glue on the
memory never sees a tool loop; the LLM is where every request of the loop passes. The
wrapper is a ``FunctionCallingLLM`` (the documented way to bring any model): it hands
the request's messages, with the tools' schemas, to one :class:`glyphfold.Compactor`
for the conversation, which compacts once past the budget and then appends (the pages
stay put between compactions, so the provider's prompt cache holds), and compacts its
own previous output next time, whose snapshot keeps its source text (pages are
rendered again from text). Memory, scratchpad and the agent's state stay whole.

Messages map to Chat Completions (text, images, ``ToolCallBlock`` calls and ``tool``
results); a message the compaction left alone is sent as the very ``ChatMessage`` the
agent built (thinking and every other block kept); the snapshot is a user message of
``TextBlock`` and ``ImageBlock`` pages (``detail="high"``, read by OpenAI models at
full resolution). Needs ``pip install glyphfold[llamaindex]``.
"""

# ruff: noqa: E402  (the framework is checked by require() before it is imported)
from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from glyphfold.integrations._requires import require

require("llamaindex", "llama_index.core.llms", "glyphfold.integrations.llamaindex")
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from llama_index.core.tools.types import BaseTool
from pydantic import ConfigDict, PrivateAttr

from glyphfold.compaction.history.images import parse_data_url
from glyphfold.integrations._loop import make_compactor

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.compaction.ladder.compactor import Compactor, Fitted
    from glyphfold.integrations._loop import LoopOptions

__all__ = ["GlyphfoldLLM", "from_openai", "to_openai"]


def _image_part(block: ImageBlock) -> dict[str, Any]:
    if block.url is not None and block.image is None and block.path is None:
        return {"type": "image_url", "image_url": {"url": str(block.url)}}
    data = block.resolve_image(as_base64=True).read().decode("ascii")
    mime = block.image_mimetype or "image/png"
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _tool_call(block: ToolCallBlock) -> dict[str, Any]:
    args = block.tool_kwargs
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return {
        "id": block.tool_call_id or "",
        "type": "function",
        "function": {"name": block.tool_name, "arguments": text},
    }


def _wire(m: ChatMessage) -> dict[str, Any]:
    role = m.role.value if isinstance(m.role, MessageRole) else str(m.role)
    texts = [b.text for b in m.blocks if isinstance(b, TextBlock)]
    if role == "tool":
        call_id = m.additional_kwargs.get("tool_call_id", "")
        return {"role": "tool", "tool_call_id": call_id, "content": "\n".join(texts)}
    if role not in ("system", "developer", "user", "assistant"):
        role = "user"  # chatbot/function/model roles: the same side of the conversation
    if role == "developer":
        role = "system"
    parts: list[dict[str, Any]] = []
    for b in m.blocks:
        if isinstance(b, TextBlock):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            parts.append(_image_part(b))
    out: dict[str, Any] = {"role": role}
    if parts and all(p["type"] == "text" for p in parts):
        out["content"] = "\n".join(p["text"] for p in parts)
    else:
        out["content"] = parts
    calls = [_tool_call(b) for b in m.blocks if isinstance(b, ToolCallBlock)]
    if role == "assistant" and calls:
        out["tool_calls"] = calls
    return out


def to_openai(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """LlamaIndex ``ChatMessage`` objects as a Chat Completions history."""
    return [_wire(m) for m in messages]


def _digest(item: Mapping[str, Any]) -> str:
    text = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _blocks(content: Any) -> list[Any]:
    if content is None or isinstance(content, str):
        return [TextBlock(text=content or "")]
    out: list[Any] = []
    for p in content:
        if p.get("type") == "text":
            out.append(TextBlock(text=p.get("text", "")))
        elif p.get("type") == "image_url":
            iu = p.get("image_url")
            url = iu.get("url") if isinstance(iu, Mapping) else iu
            mime, data = parse_data_url(url) if isinstance(url, str) else (None, None)
            detail = iu.get("detail", "high") if isinstance(iu, Mapping) else "high"
            if data is not None:
                raw = base64.b64decode(data)
                out.append(ImageBlock(image=raw, image_mimetype=mime, detail=detail))
            else:
                out.append(ImageBlock(url=url, detail=detail))
    return out


def from_openai(
    history: Sequence[Mapping[str, Any]], originals: Sequence[ChatMessage] = ()
) -> list[ChatMessage]:
    """ChatMessages of a history made by :func:`to_openai` (and the ladder).

    A message equal to one of ``originals`` (as :func:`to_openai` writes it) comes back as
    that very object.
    """
    by_digest = {_digest(_wire(m)): m for m in originals}
    out: list[ChatMessage] = []
    for item in history:
        same = by_digest.get(_digest(item))
        if same is not None:
            out.append(same)
            continue
        role = item.get("role", "user")
        if role == "tool":
            blocks = _blocks(item.get("content"))
            out.append(
                ChatMessage(
                    role=MessageRole.TOOL,
                    blocks=blocks,
                    additional_kwargs={"tool_call_id": item.get("tool_call_id", "")},
                )
            )
            continue
        blocks = _blocks(item.get("content"))
        for c in item.get("tool_calls") or ():
            fn = c.get("function", {})
            try:
                kwargs = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                kwargs = fn.get("arguments") or {}
            blocks.append(
                ToolCallBlock(
                    tool_call_id=c.get("id"), tool_name=fn.get("name", ""), tool_kwargs=kwargs
                )
            )
        out.append(ChatMessage(role=MessageRole(role), blocks=blocks))
    return out


def _schemas(tools: Sequence[Any] | None) -> list[Any]:
    out = []
    for t in tools or ():
        meta = getattr(t, "metadata", None)
        out.append(meta.to_openai_tool() if meta is not None else {"name": repr(t)})
    return out


class GlyphfoldLLM(FunctionCallingLLM):
    """``FunctionAgent(tools=..., llm=GlyphfoldLLM(llm, budget=...))``: compacts each request.

    Options as :class:`~glyphfold.integrations._loop.LoopOptions`: ``budget`` and/or
    ``window`` (+ ``ratio``), ``low``, ``reserve``, ``profile`` (default: the wrapped
    LLM's, from its class and model name), ``counter``, ``on_compact`` and
    :func:`glyphfold.compact`'s options. One wrapper is one conversation: give each
    conversation its own, or call :meth:`reset`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    llm: Any = None
    _compactor: Any = PrivateAttr(default=None)
    _done: Any = PrivateAttr(default=None)
    _last: Any = PrivateAttr(default=None)

    def __init__(
        self, llm: FunctionCallingLLM, budget: int | None = None, **options: Unpack[LoopOptions]
    ) -> None:
        super().__init__(llm=llm, callback_manager=llm.callback_manager)
        compactor, done = make_compactor(
            budget, llm, options, "glyphfold.integrations.llamaindex.GlyphfoldLLM"
        )
        self._compactor = compactor
        self._done = done

    @classmethod
    def class_name(cls) -> str:
        return "GlyphfoldLLM"

    @property
    def compactor(self) -> Compactor:
        return self._compactor

    @property
    def last(self) -> Fitted[Any] | None:
        """The last request's Fitted (action, tokens, result)."""
        return self._last

    def reset(self) -> None:
        """Forget the conversation."""
        self._compactor.reset()

    @property
    def metadata(self) -> Any:
        return self.llm.metadata

    # ------------------------------------------------------------------ compaction

    def compacted(
        self, messages: Sequence[ChatMessage], tools: Sequence[Any] | None = None
    ) -> list[ChatMessage]:
        """What the wrapped LLM is sent for ``messages`` (and the tools' schemas)."""
        fitted = self._compactor(to_openai(messages), tools=_schemas(tools))
        self._last = fitted
        self._done(fitted)
        if fitted.action == "none":
            return list(messages)
        return from_openai(fitted.messages, messages)

    def _history(self, user_msg: Any, chat_history: Any) -> list[ChatMessage]:
        history = list(chat_history or ())
        if isinstance(user_msg, str):
            history.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            history.append(user_msg)
        return history

    # ------------------------------------------------------------------ with tools

    def chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        sent = self.compacted(self._history(user_msg, chat_history), tools)
        return self.llm.chat_with_tools(
            tools,
            chat_history=sent,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )

    async def achat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        sent = self.compacted(self._history(user_msg, chat_history), tools)
        return await self.llm.achat_with_tools(
            tools,
            chat_history=sent,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )

    def stream_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponseGen:
        sent = self.compacted(self._history(user_msg, chat_history), tools)
        return self.llm.stream_chat_with_tools(
            tools,
            chat_history=sent,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )

    async def astream_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponseAsyncGen:
        sent = self.compacted(self._history(user_msg, chat_history), tools)
        return await self.llm.astream_chat_with_tools(
            tools,
            chat_history=sent,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return self.llm._prepare_chat_with_tools(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        return self.llm.get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call, **kwargs
        )

    # ------------------------------------------------------------------ plain chat

    def chat(self, messages: Sequence[ChatMessage], **kw: Any) -> Any:
        return self.llm.chat(self.compacted(messages), **kw)

    async def achat(self, messages: Sequence[ChatMessage], **kw: Any) -> Any:
        return await self.llm.achat(self.compacted(messages), **kw)

    def stream_chat(self, messages: Sequence[ChatMessage], **kw: Any) -> Any:
        return self.llm.stream_chat(self.compacted(messages), **kw)

    async def astream_chat(self, messages: Sequence[ChatMessage], **kw: Any) -> Any:
        return await self.llm.astream_chat(self.compacted(messages), **kw)

    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
        return self.llm.complete(prompt, formatted=formatted, **kw)

    async def acomplete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
        return await self.llm.acomplete(prompt, formatted=formatted, **kw)

    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
        return self.llm.stream_complete(prompt, formatted=formatted, **kw)

    async def astream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
        return await self.llm.astream_complete(prompt, formatted=formatted, **kw)
