"""OpenAI Agents SDK: a ``call_model_input_filter`` and a handoff input filter.

::

    from agents import Agent, RunConfig, Runner
    from glyphfold.integrations.openai_agents import GlyphfoldInputFilter

    config = RunConfig(call_model_input_filter=GlyphfoldInputFilter(budget=100_000))
    result = await Runner.run(agent, "task...", run_config=config)

The filter sees the Responses input items (and the instructions) right before each
model call and returns them compacted when they pass the trigger. The SDK keeps its
own history unfiltered and hands the filter the full input again at every call, so
the filter remembers its last output: while the input still begins with the items it
compacted, the next call sends that output plus the new items (the pages, hence the
provider's prompt cache, stay put), and when that grows past the trigger it compacts
the remembered output, whose snapshot keeps its source text (``x_glyphfold``), so
the new pages are rendered again from text (pass N+1 never images pages). glyphfold's
own keys are removed from what the model receives.

Needs ``pip install glyphfold[openai-agents]``.
"""

# ruff: noqa: E402  (the framework is checked by require() before it is imported)
from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from glyphfold.integrations._requires import require

require("openai-agents", "agents.run_config", "glyphfold.integrations.openai_agents")
from agents.run_config import ModelInputData

import glyphfold
from glyphfold.compaction.history.wire.sdk import is_sdk_object, plain
from glyphfold.integrations.policy import CompactionPolicy

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.integrations.policy import AdapterOptions

__all__ = ["GlyphfoldInputFilter", "glyphfold_handoff_filter"]


def _items(items: Sequence[Any]) -> list[Any]:
    return [plain(i) if is_sdk_object(i) else i for i in items]


def _digest(item: Any) -> str:
    text = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclasses.dataclass
class _Memo:
    """The last compaction: the input items it covered (digests) and what it produced."""

    digests: list[str]
    instructions: str | None
    output: dict[str, Any]  # {"instructions"?, "input": [...]} with x_glyphfold kept


class GlyphfoldInputFilter:
    """``RunConfig(call_model_input_filter=GlyphfoldInputFilter(budget=...))``.

    Options as :class:`~glyphfold.integrations.policy.AdapterOptions` (``budget`` or
    ``window``, ``trigger``, ``profile`` (default: the agent's model's, else
    ``"openai"``), ``counter``, ``on_compact`` and :func:`glyphfold.compact`'s options).
    Callable sync or async: the SDK awaits it, so the ladder runs in a worker thread.

    One filter may serve many conversations (one ``RunConfig`` for every run, runs in
    parallel): it remembers the last compaction of each, up to ``max_conversations``
    (least recently used first out). A conversation is found by its content: the
    remembered compaction whose input items the new input begins with.
    """

    def __init__(
        self,
        budget: int | None = None,
        *,
        max_conversations: int = 256,
        **options: Unpack[AdapterOptions],
    ) -> None:
        self.policy = CompactionPolicy(budget, default_profile="openai", **options)
        if not isinstance(max_conversations, int) or max_conversations < 1:
            msg = f"max_conversations must be an int >= 1, got {max_conversations!r}"
            raise glyphfold.InputError(msg)
        self.max_conversations = max_conversations
        self._memos: OrderedDict[int, _Memo] = OrderedDict()
        self._next_key = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ planning

    def _find(self, digests: list[str], instructions: str | None) -> tuple[int, _Memo] | None:
        """The conversation's memo: the longest remembered input this input begins with."""
        best: tuple[int, _Memo] | None = None
        with self._lock:
            for key, memo in self._memos.items():
                n = len(memo.digests)
                if (
                    memo.instructions == instructions
                    and n <= len(digests)
                    and digests[:n] == memo.digests
                    and (best is None or n > len(best[1].digests))
                ):
                    best = (key, memo)
            if best is not None:
                self._memos.move_to_end(best[0])
        return best

    def _candidate(
        self, items: list[Any], instructions: str | None
    ) -> tuple[dict, list[str], int | None]:
        """The request to price: the remembered output + the new items, or the input."""
        digests = [_digest(i) for i in items]
        found = self._find(digests, instructions)
        if found is not None:
            key, memo = found
            body: dict[str, Any] = dict(memo.output)
            body["input"] = [*memo.output["input"], *items[len(memo.digests) :]]
            return body, digests, key
        body = {"input": items}
        if instructions is not None:
            body["instructions"] = instructions
        return body, digests, None

    def _remember(self, key: int | None, memo: _Memo) -> None:
        with self._lock:
            if key is None or key not in self._memos:
                key = self._next_key
                self._next_key += 1
            self._memos[key] = memo
            self._memos.move_to_end(key)
            while len(self._memos) > self.max_conversations:
                self._memos.popitem(last=False)

    def _finish(
        self, data: Any, body: dict, digests: list[str], key: int | None, result: Any
    ) -> Any:
        if result is not None:
            body = result.messages
            self._remember(key, _Memo(digests, data.model_data.instructions, body))
        clean = glyphfold.provider_messages(body)
        return ModelInputData(input=clean["input"], instructions=data.model_data.instructions)

    def _profile(self, data: Any) -> Any:
        return self.policy.resolve_profile(getattr(data.agent, "model", None))

    # ------------------------------------------------------------------ the hook

    def __call__(self, data: Any) -> Any:
        return self._run_async(data)

    async def _run_async(self, data: Any) -> Any:
        items = _items(data.model_data.input)
        body, digests, key = self._candidate(items, data.model_data.instructions)
        profile = self._profile(data)
        tools = _tool_schemas(data.agent)
        result = None
        if self.policy.over(body, tools, profile=profile):
            result = await self.policy.acompact(body, profile=profile, tools=tools)
        return self._finish(data, body, digests, key, result)

    def filter_sync(self, data: Any) -> Any:
        """The same filter, synchronously (for callers outside an event loop)."""
        items = _items(data.model_data.input)
        body, digests, key = self._candidate(items, data.model_data.instructions)
        profile = self._profile(data)
        tools = _tool_schemas(data.agent)
        result = None
        if self.policy.over(body, tools, profile=profile):
            result = self.policy.compact(body, profile=profile, tools=tools)
        return self._finish(data, body, digests, key, result)


def _tool_schemas(agent: Any) -> list[Any]:
    """The function tools' JSON schemas (priced with the request)."""
    out = []
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        if schema is not None:
            out.append(
                {
                    "name": getattr(tool, "name", ""),
                    "description": getattr(tool, "description", ""),
                    "parameters": schema,
                }
            )
    return out


def glyphfold_handoff_filter(
    budget: int | None = None,
    *,
    agent: Any = None,
    tools: Sequence[Any] | None = None,
    **options: Unpack[AdapterOptions],
) -> Any:
    """A ``handoff(..., input_filter=...)`` that compacts what the next agent receives.

    The history before the handoff (``input_history`` and the items generated before
    the turn that handed off) is compacted to the budget and becomes the new
    ``input_history``; the turn's own items (the handoff call and its output) stay
    verbatim. Under the trigger the data passes unchanged. The SDK does not tell a
    handoff filter which agent receives: pass it as ``agent=`` (the profile is taken
    from its model, its function tools' schemas are priced with the request), or the
    schemas as ``tools=``.
    """
    policy = CompactionPolicy(budget, default_profile="openai", **options)
    schemas = list(tools) if tools is not None else _tool_schemas(agent)
    model = getattr(agent, "model", None)

    def handoff_filter(data: Any) -> Any:
        history = data.input_history
        if isinstance(history, str):
            items: list[Any] = [{"role": "user", "content": history}]
        else:
            items = _items(history)
        items += [_items([i.to_input_item()])[0] for i in data.pre_handoff_items]
        body = {"input": items}
        profile = policy.resolve_profile(model)
        if not policy.over(body, schemas, profile=profile):
            return data
        out = glyphfold.provider_messages(
            policy.compact(body, profile=profile, tools=schemas).messages
        )
        return data.clone(input_history=tuple(out["input"]), pre_handoff_items=())

    return handoff_filter
