"""smolagents: a model wrapper that compacts what each step sends.

::

    from smolagents import CodeAgent
    from glyphfold.integrations.smolagents import GlyphfoldModel

    agent = CodeAgent(tools=tools, model=GlyphfoldModel(model, budget=100_000))

smolagents keeps its memory whole (``agent.memory.steps``, replays and
``agent.replay()`` see every step) and rebuilds the model's messages from it at every
step. The wrapper is a smolagents ``Model`` (the documented way to plug any model
in): before each ``generate``/``generate_stream`` it hands those messages, with the
tools' schemas, to one :class:`glyphfold.Compactor` for the agent's conversation.
Since the rebuilt messages begin with the same messages every step, the compactor
answers with its previous output plus the new steps (the pages, hence the provider's
prompt cache, stay put) until the budget is passed again; then it compacts its own
previous output, whose snapshot keeps its source text, so the pages are rendered again
from text, never from pages.

Messages map to Chat Completions: a ``tool-call`` message answered by the next
``tool-response`` is an assistant tool call and its result (so the ladder treats
observations as tool output, not as the user's words); the call is the step's own
(name, arguments, id, read from smolagents' ``Calling tools:`` text) when the step made
one, so a file read is kept for the pages as in any other loop, not elided as an
unnamed step; images (``PIL`` or base64) are
PNG/JPEG parts; the snapshot's pages come back as ``image_url`` parts, which every
smolagents model passes on. Needs ``pip install glyphfold[smolagents]``.
"""

# ruff: noqa: E402  (the framework is checked by require() before it is imported)
from __future__ import annotations

import ast
import base64
import io
import json
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from glyphfold.integrations._requires import require

require("smolagents", "smolagents.models", "glyphfold.integrations.smolagents")
from smolagents.models import ChatMessage, MessageRole, Model, get_tool_json_schema

from glyphfold.integrations._loop import make_compactor

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.compaction.ladder.compactor import Compactor, Fitted
    from glyphfold.integrations._loop import LoopOptions

__all__ = ["GlyphfoldModel", "from_openai", "to_openai"]

_CALL_NAME = "smolagents_step"  # the synthetic call that stands for a tool-call message


def _role(m: Any) -> str:
    role = m.role if isinstance(m, ChatMessage) else m.get("role")
    return str(role.value if isinstance(role, MessageRole) else role)


def _content(m: Any) -> Any:
    return m.content if isinstance(m, ChatMessage) else m.get("content")


def _part(part: Any) -> Any:
    if not isinstance(part, Mapping) or part.get("type") != "image":
        return dict(part) if isinstance(part, Mapping) else {"type": "text", "text": str(part)}
    image = part.get("image")
    if isinstance(image, str):  # base64 already
        data, mime = image, "image/png"
    else:  # a PIL image, as smolagents keeps observations
        assert image is not None, "an image part without an image"
        buf = io.BytesIO()
        fmt = (getattr(image, "format", None) or "PNG").upper()
        fmt = fmt if fmt in ("PNG", "JPEG", "WEBP", "GIF") else "PNG"
        image.save(buf, format=fmt)
        data, mime = base64.b64encode(buf.getvalue()).decode("ascii"), f"image/{fmt.lower()}"
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _parts(content: Any) -> Any:
    if content is None or isinstance(content, str):
        return content or ""
    return [_part(p) for p in content]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text", "")) for p in content or () if isinstance(p, Mapping) and "text" in p
    )


_CALLING = "Calling tools:\n"  # how smolagents' memory writes a step's tool calls


def _json_arguments(args: Any) -> str:
    if isinstance(args, str):
        try:
            json.loads(args)
        except ValueError:
            return json.dumps(args, ensure_ascii=False)
        return args
    return json.dumps(args, ensure_ascii=False, default=str)


def _parsed_calls(content: Any) -> list[dict[str, Any]] | None:
    """The tool calls a smolagents ``tool-call`` message lists (``Calling tools:\n[{...}]``,
    a Python repr of ``ToolCall.dict()``), or None when it does not read as that."""
    text = _text(content)
    if not text.startswith(_CALLING):
        return None
    try:
        calls = ast.literal_eval(text[len(_CALLING) :])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(calls, list) or not calls:
        return None
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        if not (isinstance(fn, dict) and isinstance(fn.get("name"), str) and "arguments" in fn):
            return None
        if not isinstance(c.get("id"), str):
            return None
    return calls


def _step_call(content: Any, k: int, used: set[str]) -> dict[str, Any]:
    """The Chat Completions call standing for a ``tool-call`` message: its own tool call
    (name, arguments, id) when it lists exactly one, so the ladder sees a file read as a
    file read (kept for the pages) as it would in any other loop; else one synthetic
    ``smolagents_step`` call for the whole step."""
    calls = _parsed_calls(content)
    if calls is not None and len(calls) == 1 and calls[0]["id"] not in used:
        fn = calls[0]["function"]
        used.add(calls[0]["id"])
        call = {"name": fn["name"], "arguments": _json_arguments(fn["arguments"])}
        return {"id": calls[0]["id"], "type": "function", "function": call}
    return {
        "id": f"step_{k}",
        "type": "function",
        "function": {"name": _CALL_NAME, "arguments": "{}"},
    }


def to_openai(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """smolagents messages (``ChatMessage`` or dicts) as a Chat Completions history."""
    out: list[dict[str, Any]] = []
    roles = [_role(m) for m in messages]
    used: set[str] = set()
    for k, m in enumerate(messages):
        role = roles[k]
        content = _content(m)
        if role == "tool-call" and k + 1 < len(roles) and roles[k + 1] == "tool-response":
            out.append(
                {
                    "role": "assistant",
                    "content": _text(content),
                    "tool_calls": [_step_call(content, k, used)],
                }
            )
        elif role == "tool-response" and k > 0 and out and out[-1].get("tool_calls"):
            call_id = out[-1]["tool_calls"][0]["id"]
            out.append({"role": "tool", "tool_call_id": call_id, "content": _text(content)})
        elif role == "tool-call":
            out.append({"role": "assistant", "content": _parts(content)})
        elif role == "tool-response":
            out.append({"role": "user", "content": _parts(content)})
        else:
            out.append({"role": role, "content": _parts(content)})
    return out


def _text_parts(text: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text if isinstance(text, str) else _text(text)}]


def _calls_text(content: Any, tool_calls: Sequence[Mapping[str, Any]]) -> Any:
    """The ``tool-call`` message's text: as smolagents wrote it, unless the ladder
    shortened the call's arguments (a stub), then written again from the call."""
    calls = _parsed_calls(content)
    if calls is None or len(calls) != 1 or len(tool_calls) != 1:
        return content
    fn = tool_calls[0].get("function") or {}
    if fn.get("name") == _CALL_NAME or fn.get("arguments") == _json_arguments(
        calls[0]["function"]["arguments"]
    ):
        return content
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except ValueError:
        args = fn.get("arguments")
    call = {**calls[0], "function": {**calls[0]["function"], "arguments": args}}
    return _CALLING + str([call])


def from_openai(history: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """The Chat Completions history of :func:`to_openai` (and the ladder) as smolagents messages."""
    out: list[ChatMessage] = []
    for m in history:
        role, content = m.get("role"), m.get("content")
        if role == "tool":
            out.append(ChatMessage(role=MessageRole.TOOL_RESPONSE, content=_text_parts(content)))
        elif role == "assistant" and m.get("tool_calls"):
            text = _calls_text(content or "", m["tool_calls"])
            out.append(ChatMessage(role=MessageRole.TOOL_CALL, content=_text_parts(text)))
        else:
            parts = (
                _text_parts(content)
                if isinstance(content, str) or content is None
                else [dict(p) for p in content]
            )
            out.append(ChatMessage(role=MessageRole(role), content=parts))
    return out


class GlyphfoldModel(Model):
    """``CodeAgent(tools, model=GlyphfoldModel(model, budget=...))``: compacts each request.

    Options as :class:`~glyphfold.integrations._loop.LoopOptions`: ``budget`` and/or
    ``window`` (+ ``ratio``), ``low``, ``reserve``, ``profile`` (default: the wrapped
    model's, from its ``model_id``), ``counter``, ``on_compact`` and
    :func:`glyphfold.compact`'s options. One wrapper is one conversation: give each
    agent (and each ``agent.run(..., reset=True)`` conversation) its own, or call
    :meth:`reset`.
    """

    def __init__(
        self, model: Model, budget: int | None = None, **options: Unpack[LoopOptions]
    ) -> None:
        super().__init__(
            model_id=getattr(model, "model_id", None),
            flatten_messages_as_text=getattr(model, "flatten_messages_as_text", False),
            tool_name_key=getattr(model, "tool_name_key", "name"),
            tool_arguments_key=getattr(model, "tool_arguments_key", "arguments"),
        )
        self.model = model
        self.compactor: Compactor
        self.compactor, self._done = make_compactor(
            budget, model, options, "glyphfold.integrations.smolagents.GlyphfoldModel"
        )
        self.last: Fitted[Any] | None = None  # the last request's Fitted (action, tokens)

    def reset(self) -> None:
        """Forget the conversation (a new task on the same wrapper)."""
        self.compactor.reset()

    def compacted(
        self, messages: Sequence[Any], tools_to_call_from: Sequence[Any] | None = None
    ) -> list[ChatMessage]:
        """What the wrapped model is sent for ``messages`` (and the tools' schemas)."""
        tools = [get_tool_json_schema(t) for t in tools_to_call_from or ()]
        fitted = self.compactor(to_openai(messages), tools=tools)
        self.last = fitted
        self._done(fitted)
        if fitted.action == "none":
            return list(messages)
        return from_openai(fitted.messages)

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        sent = self.compacted(messages, tools_to_call_from)
        return self.model.generate(
            sent,
            stop_sequences=stop_sequences,
            response_format=response_format,
            tools_to_call_from=tools_to_call_from,
            **kwargs,
        )

    def generate_stream(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> Generator[Any]:
        sent = self.compacted(messages, tools_to_call_from)
        yield from self.model.generate_stream(
            sent,
            stop_sequences=stop_sequences,
            response_format=response_format,
            tools_to_call_from=tools_to_call_from,
            **kwargs,
        )

    def parse_tool_calls(self, message: ChatMessage) -> ChatMessage:
        return self.model.parse_tool_calls(message)

    def __getattr__(self, name: str) -> Any:  # the wrapped model's other attributes
        if name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)
