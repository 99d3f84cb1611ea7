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

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Sequence
from typing import Any

try:
    from agents.run_config import ModelInputData
except ImportError as exc:  # pragma: no cover - depends on the environment
    msg = (
        "glyphfold.integrations.openai_agents needs the Agents SDK: "
        "pip install 'glyphfold[openai-agents]'"
    )
    raise ImportError(msg) from exc

import glyphfold
from glyphfold.compaction.history.wire.sdk import is_sdk_object, plain
from glyphfold.integrations.policy import CompactionPolicy

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

    Options as :class:`~glyphfold.integrations.policy.CompactionPolicy` (``budget`` or
    ``window``, ``trigger``, ``profile`` (default ``"openai"``), ``counter``,
    ``on_compact`` and :func:`glyphfold.compact`'s options). Callable sync or async:
    the SDK awaits it, so the ladder runs in a worker thread.
    """

    def __init__(self, budget: int | None = None, **options: Any) -> None:
        options.setdefault("profile", "openai")
        self.policy = CompactionPolicy(budget, **options)
        self._memo: _Memo | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ planning

    def _candidate(self, items: list[Any], instructions: str | None) -> tuple[dict, list[str]]:
        """The request to price: the remembered output + the new items, or the input."""
        digests = [_digest(i) for i in items]
        memo = self._memo
        n = len(memo.digests) if memo is not None else 0
        if (
            memo is not None
            and memo.instructions == instructions
            and n <= len(items)
            and digests[:n] == memo.digests
        ):
            body = dict(memo.output)
            body["input"] = [*memo.output["input"], *items[n:]]
            return body, digests
        body: dict[str, Any] = {"input": items}
        if instructions is not None:
            body["instructions"] = instructions
        return body, digests

    def _finish(self, data: Any, body: dict, digests: list[str], result: Any) -> Any:
        if result is not None:
            body = result.messages
            with self._lock:
                self._memo = _Memo(digests, data.model_data.instructions, body)
        clean = glyphfold.provider_messages(body)
        return ModelInputData(input=clean["input"], instructions=data.model_data.instructions)

    # ------------------------------------------------------------------ the hook

    def __call__(self, data: Any) -> Any:
        return self._run_async(data)

    async def _run_async(self, data: Any) -> Any:
        items = _items(data.model_data.input)
        body, digests = self._candidate(items, data.model_data.instructions)
        tools = _tool_schemas(data.agent)
        result = None
        if self.policy.over(body, tools):
            result = await self.policy.acompact(body)
        return self._finish(data, body, digests, result)

    def filter_sync(self, data: Any) -> Any:
        """The same filter, synchronously (for callers outside an event loop)."""
        items = _items(data.model_data.input)
        body, digests = self._candidate(items, data.model_data.instructions)
        result = None
        if self.policy.over(body, _tool_schemas(data.agent)):
            result = self.policy.compact(body)
        return self._finish(data, body, digests, result)


def _tool_schemas(agent: Any) -> list[Any]:
    """The function tools' JSON schemas (priced with the request)."""
    out = []
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        if schema is not None:
            out.append({"name": getattr(tool, "name", ""), "parameters": schema})
    return out


def glyphfold_handoff_filter(budget: int | None = None, **options: Any) -> Any:
    """A ``handoff(..., input_filter=...)`` that compacts what the next agent receives.

    The history before the handoff (``input_history`` and the items generated before
    the turn that handed off) is compacted to the budget and becomes the new
    ``input_history``; the turn's own items (the handoff call and its output) stay
    verbatim. Under the trigger the data passes unchanged.
    """
    options.setdefault("profile", "openai")
    policy = CompactionPolicy(budget, **options)

    def handoff_filter(data: Any) -> Any:
        history = data.input_history
        if isinstance(history, str):
            items: list[Any] = [{"role": "user", "content": history}]
        else:
            items = _items(history)
        items += [_items([i.to_input_item()])[0] for i in data.pre_handoff_items]
        body = {"input": items}
        if not policy.over(body):
            return data
        out = glyphfold.provider_messages(policy.compact(body).messages)
        return data.clone(input_history=tuple(out["input"]), pre_handoff_items=())

    return handoff_filter
