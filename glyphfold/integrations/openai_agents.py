"""OpenAI Agents SDK: a ``call_model_input_filter`` and a handoff input filter.

::

    from agents import Agent, RunConfig, Runner
    from glyphfold.integrations.openai_agents import GlyphfoldInputFilter

    config = RunConfig(call_model_input_filter=GlyphfoldInputFilter(budget=100_000))
    result = await Runner.run(agent, "task...", run_config=config)

The filter sees the Responses input items (and the instructions) right before each
model call and hands them to the conversation's :class:`~glyphfold.Compactor` (SPEC
§5.10, issue 19). The SDK keeps its own history unfiltered and hands the filter the
full input again at every call; each conversation's compactor (found by content: the
one whose last input this input extends, under the same profile) remembers its last
output: while the input extends it, the next call sends that output byte for byte plus
the new items (the pages, hence the provider's prompt cache, stay put), and when that
grows past the trigger it compacts to a lower target, keeping the pages already sent
frozen and imaging the newly old items as a new block. glyphfold's own keys are
removed from what the model receives.

Needs ``pip install glyphfold[openai-agents]``.
"""

# ruff: noqa: E402  (the framework is checked by require() before it is imported)
from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from glyphfold.integrations._requires import require

require("openai-agents", "agents.run_config", "glyphfold.integrations.openai_agents")
from agents.run_config import ModelInputData

import glyphfold
from glyphfold.compaction.history.markers import X_KEY
from glyphfold.compaction.history.wire.sdk import is_sdk_object, plain
from glyphfold.compaction.ladder.compactor import Compactor, Fitted
from glyphfold.integrations.policy import CompactionPolicy

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from glyphfold.integrations.policy import AdapterOptions

__all__ = ["GlyphfoldInputFilter", "glyphfold_handoff_filter"]


def _items(items: Sequence[Any]) -> list[Any]:
    return [plain(i) if is_sdk_object(i) else i for i in items]


class GlyphfoldInputFilter:
    """``RunConfig(call_model_input_filter=GlyphfoldInputFilter(budget=...))``.

    Options as :class:`~glyphfold.integrations.policy.AdapterOptions` (``budget``
    and/or ``window``, ``trigger``, ``low``, ``profile`` (default: the agent's model's, else
    ``"openai"``), ``counter``, ``on_compact`` and :func:`glyphfold.compact`'s options).
    Callable sync or async: the SDK awaits it, so the ladder runs in a worker thread.

    One filter may serve many conversations (one ``RunConfig`` for every run, runs in
    parallel): one :class:`~glyphfold.Compactor` per conversation and profile, up to
    ``max_conversations`` (least recently used first out). A conversation is found by
    its content: the compactor whose last input the new input extends.
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
        self._compactors: OrderedDict[int, tuple[Any, Compactor]] = OrderedDict()
        self._next_key = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ conversations

    def _find(self, body: dict[str, Any], profile: Any) -> tuple[Compactor, list[bytes]]:
        """The conversation's compactor: the one whose last input this input extends
        (longest first), under the same profile; else a new one (kept once it compacts)."""
        key = _profile_key(profile)
        fresh = self.policy.new_compactor(profile)
        digests = fresh.digests(body)  # every compactor of this profile has the same seed
        best: tuple[int, Compactor] | None = None
        with self._lock:
            for k, (pk, c) in self._compactors.items():
                last = c.last_digests
                n = len(last)
                if (
                    pk == key
                    and 0 < n <= len(digests)
                    and digests[n - 1] == last[-1]
                    and (best is None or n > len(best[1].last_digests))
                ):
                    best = (k, c)
            if best is not None:
                self._compactors.move_to_end(best[0])
                return best[1], digests
        return fresh, digests

    def _keep(self, compactor: Compactor, profile: Any) -> None:
        if not compactor.last_digests:
            return  # nothing compacted yet: nothing to remember
        with self._lock:
            for k, (_, c) in self._compactors.items():
                if c is compactor:
                    self._compactors.move_to_end(k)
                    return
            self._compactors[self._next_key] = (_profile_key(profile), compactor)
            self._next_key += 1
            while len(self._compactors) > self.max_conversations:
                self._compactors.popitem(last=False)

    @staticmethod
    def _body(data: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"input": _items(data.model_data.input)}
        if data.model_data.instructions is not None:
            body["instructions"] = data.model_data.instructions
        return body

    @staticmethod
    def _finish(data: Any, fitted: Fitted[Any]) -> Any:
        return ModelInputData(
            input=list(fitted.messages["input"]), instructions=data.model_data.instructions
        )

    def _profile(self, data: Any) -> Any:
        return self.policy.resolve_profile(getattr(data.agent, "model", None))

    # ------------------------------------------------------------------ the hook

    def __call__(self, data: Any) -> Any:
        return self._run_async(data)

    async def _run_async(self, data: Any) -> Any:
        body = self._body(data)
        profile = self._profile(data)
        compactor, digests = self._find(body, profile)
        tools = _tool_schemas(data.agent) or None
        fitted = await asyncio.to_thread(compactor, body, tools=tools, digests=digests)
        self.policy._fitted(fitted)
        self._keep(compactor, profile)
        return self._finish(data, fitted)

    def filter_sync(self, data: Any) -> Any:
        """The same filter, synchronously (for callers outside an event loop)."""
        body = self._body(data)
        profile = self._profile(data)
        compactor, digests = self._find(body, profile)
        fitted = self.policy._fitted(
            compactor(body, tools=_tool_schemas(data.agent) or None, digests=digests)
        )
        self._keep(compactor, profile)
        return self._finish(data, fitted)


def _profile_key(profile: Any) -> Any:
    return profile if isinstance(profile, str) else id(profile)


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
    sources = _Sources()

    def handoff_filter(data: Any) -> Any:
        history = data.input_history
        if isinstance(history, str):
            items: list[Any] = [{"role": "user", "content": history}]
        else:
            items = _items(history)
        items += [_items([i.to_input_item()])[0] for i in data.pre_handoff_items]
        # an earlier handoff's snapshot, as the SDK kept it (provider-ready), with its
        # source again: the ladder renders its pages from text, never from pages
        body = {"input": sources.restore(items)}
        profile = policy.resolve_profile(model)
        if not policy.over(body, schemas, profile=profile):
            return data
        full = policy.compact(body, profile=profile, tools=schemas).messages
        out = glyphfold.provider_messages(full)
        sources.remember(full["input"])
        return data.clone(input_history=tuple(out["input"]), pre_handoff_items=())

    return handoff_filter


class _Sources:
    """The snapshots a handoff filter handed on, with their source (SPEC §5.3, §5.9).

    The next agent's history is what the model receives, so glyphfold's keys leave it
    (the Responses API refuses unknown ones); a later handoff finds a snapshot again by
    its pages (their data URLs) and gets the item back with its ``x_glyphfold`` source.
    Bounded: the newest ``limit`` snapshots.
    """

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(item: Any) -> str | None:
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(content, list):
            return None
        urls = [
            p["image_url"]
            for p in content
            if isinstance(p, dict) and isinstance(p.get("image_url"), str)
        ]
        if not urls:
            return None
        h = hashlib.blake2b(digest_size=16)
        for u in urls:
            h.update(u.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def remember(self, items: Sequence[Any]) -> None:
        with self._lock:
            for it in items:
                if isinstance(it, dict) and X_KEY in it:
                    key = self._key(it)
                    if key is not None:
                        self._items[key] = it
                        self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)

    def restore(self, items: list[Any]) -> list[Any]:
        with self._lock:
            if not self._items:
                return items
            out = []
            for it in items:
                key = self._key(it) if isinstance(it, dict) and X_KEY not in it else None
                out.append(self._items.get(key, it) if key is not None else it)
            return out
