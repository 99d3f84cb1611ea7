"""OpenAI Agents SDK: a ``call_model_input_filter`` and a handoff input filter.

::

    from agents import Agent, RunConfig, Runner
    from glyphfold.integrations.openai_agents import GlyphfoldInputFilter

    config = RunConfig(call_model_input_filter=GlyphfoldInputFilter(budget=100_000))
    result = await Runner.run(agent, "task...", run_config=config)

The filter sees the Responses input items (and the instructions) right before each
model call and hands them to the run's :class:`~glyphfold.Compactor`. The SDK keeps
its own history unfiltered and hands the filter the full input again at every call;
the compactor remembers its last output: while the input extends the items it
compacted, the next call sends that output byte for byte plus the new items (the
pages, hence the provider's prompt cache, stay put), and when that grows past the
trigger it compacts to a lower target, keeping the pages already sent frozen and
imaging the newly old items as a new block (SPEC §5.10). glyphfold's own keys are
removed from what the model receives.

Needs ``pip install glyphfold[openai-agents]``.
"""

from __future__ import annotations

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


class GlyphfoldInputFilter:
    """``RunConfig(call_model_input_filter=GlyphfoldInputFilter(budget=...))``.

    Options as :class:`~glyphfold.integrations.policy.CompactionPolicy` (``budget``
    and/or ``window``, ``trigger``, ``profile`` (default ``"openai"``), ``counter``,
    ``on_compact`` and :func:`glyphfold.compact`'s options). Callable sync or async:
    the SDK awaits it, so the ladder runs in a worker thread. One filter is one
    conversation (one compactor): give each run its own.
    """

    def __init__(self, budget: int | None = None, **options: Any) -> None:
        options.setdefault("profile", "openai")
        self.policy = CompactionPolicy(budget, **options)

    @staticmethod
    def _body(data: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"input": _items(data.model_data.input)}
        if data.model_data.instructions is not None:
            body["instructions"] = data.model_data.instructions
        return body

    @staticmethod
    def _finish(data: Any, fitted: Any) -> Any:
        return ModelInputData(
            input=list(fitted.messages["input"]), instructions=data.model_data.instructions
        )

    def __call__(self, data: Any) -> Any:
        return self._run_async(data)

    async def _run_async(self, data: Any) -> Any:
        fitted = await self.policy.afit(self._body(data), _tool_schemas(data.agent))
        return self._finish(data, fitted)

    def filter_sync(self, data: Any) -> Any:
        """The same filter, synchronously (for callers outside an event loop)."""
        return self._finish(data, self.policy.fit(self._body(data), _tool_schemas(data.agent)))


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
