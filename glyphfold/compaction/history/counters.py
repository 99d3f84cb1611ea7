"""Pricing a whole request: the estimate by default, a provider's count-tokens endpoint on demand.

A :class:`RequestCounter` prices what is actually sent: the messages, the system
prompt, the tool schemas and the images. :class:`EstimateRequestCounter` is the
default (SPEC §3.4's estimate, no network); the provider adapters ask the
provider's own endpoint, one request per call, so use them where an exact figure
is worth a round trip (deciding whether to compact, checking a request before
sending it) and let the ladder work on the estimate:

- :class:`AnthropicRequestCounter`: ``client.messages.count_tokens``;
- :class:`OpenAIRequestCounter`: ``client.responses.input_tokens.count``;
- :class:`GeminiRequestCounter`: ``client.models.count_tokens`` (the Developer API
  counts no system instruction or tools; they are counted as leading text there);
- :class:`BedrockRequestCounter`: the bedrock-runtime ``count_tokens`` operation.

Each takes a client of its SDK (glyphfold imports no SDK) and a history in any
wire format: it is converted to the provider's format first, and glyphfold's own
``x_glyphfold`` keys are removed. :func:`calibrated_budget` turns an exact budget
into the estimate's units, so that ``compact(budget=...)`` lands under the exact one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from glyphfold.checks import check_int
from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.markers import X_KEY
from glyphfold.compaction.history.messages import coerce, to_wire
from glyphfold.compaction.history.model import (
    ANTHROPIC,
    BEDROCK,
    GEMINI,
    RESPONSES,
    History,
    Unknown,
)
from glyphfold.compaction.history.tokens import DEFAULT_PROFILE, estimate_history_tokens
from glyphfold.render.profiles import ProfileArg

__all__ = [
    "AnthropicRequestCounter",
    "BedrockRequestCounter",
    "EstimateRequestCounter",
    "GeminiRequestCounter",
    "OpenAIRequestCounter",
    "RequestCounter",
    "calibrated_budget",
]


@runtime_checkable
class RequestCounter(Protocol):
    """Prices a whole request: messages, system prompt, tools and images, in tokens."""

    def count_request(self, history: Any, *, tools: Sequence[Any] | None = None) -> int: ...


class EstimateRequestCounter:
    """The default: SDK-free estimate (docs/budget.md), every image billed, tools by JSON size."""

    def __init__(self, *, profile: ProfileArg = DEFAULT_PROFILE, counter: Any = None) -> None:
        self.profile = profile
        self.counter = counter

    def count_request(self, history: Any, *, tools: Sequence[Any] | None = None) -> int:
        n = estimate_history_tokens(
            history, profile=self.profile, counter=self.counter, image_policy="all"
        )
        return n + self.count_tools(tools)

    def count_tools(self, tools: Sequence[Any] | None) -> int:
        """What the tool schemas add to a request: their JSON text, priced as text."""
        if not tools:
            return 0
        text = json.dumps(list(tools), ensure_ascii=False, sort_keys=True, default=str)
        return self.counter.count(text) if self.counter is not None else -(-len(text) // 4)


def _sendable(h: History) -> History:
    """Without blocks that are no wire value (a framework's own part objects)."""
    if all(
        not isinstance(b, Unknown) or isinstance(b.raw, Mapping)
        for m in h.messages
        for b in m.blocks
    ):
        return h
    return h.replace_messages(
        [
            dataclasses.replace(
                m,
                blocks=tuple(
                    b for b in m.blocks if not isinstance(b, Unknown) or isinstance(b.raw, Mapping)
                ),
            )
            for m in h.messages
        ]
    )


def _wire(history: Any, fmt: str) -> Any:
    """The history in ``fmt``, as the provider takes it (no x_glyphfold keys)."""
    h, _ = coerce(history)
    h = _sendable(h)
    if h.format != fmt:
        h = convert_history(h, to=fmt)
    wire = to_wire(h) if isinstance(h, History) else h

    def clean(entries: Any) -> list[Any]:
        return [
            {k: v for k, v in m.items() if k != X_KEY} if isinstance(m, Mapping) else m
            for m in entries
        ]

    if isinstance(wire, Mapping):
        out = dict(wire)
        for key in ("messages", "input", "contents"):
            if key in out:
                out[key] = clean(out[key])
        return out
    return clean(wire)


def _part(wire: Any, key: str, system_key: str) -> tuple[Any, Any]:
    if isinstance(wire, Mapping):
        return wire[key], wire.get(system_key)
    return wire, None


class AnthropicRequestCounter:
    """Exact count from Anthropic's ``messages.count_tokens`` (one request per call)."""

    def __init__(self, client: Any, *, model: str) -> None:
        self.client = client
        self.model = model

    def count_request(self, history: Any, *, tools: Sequence[Any] | None = None) -> int:
        messages, system = _part(_wire(history, ANTHROPIC), "messages", "system")
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if system is not None:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = list(tools)
        return int(self.client.messages.count_tokens(**kwargs).input_tokens)


class OpenAIRequestCounter:
    """Exact count from OpenAI's ``responses.input_tokens.count`` (one request per call)."""

    def __init__(self, client: Any, *, model: str) -> None:
        self.client = client
        self.model = model

    def count_request(self, history: Any, *, tools: Sequence[Any] | None = None) -> int:
        items, instructions = _part(_wire(history, RESPONSES), "input", "instructions")
        kwargs: dict[str, Any] = {"model": self.model, "input": items}
        if instructions is not None:
            kwargs["instructions"] = instructions
        if tools:
            kwargs["tools"] = list(tools)
        return int(self.client.responses.input_tokens.count(**kwargs).input_tokens)


class GeminiRequestCounter:
    """Exact count from google-genai's ``models.count_tokens`` (one request per call)."""

    def __init__(self, client: Any, *, model: str) -> None:
        self.client = client
        self.model = model

    def count_request(self, history: Any, *, tools: Sequence[Any] | None = None) -> int:
        wire = _wire(history, GEMINI)
        contents, system = _part(wire, "contents", "system_instruction")
        if system is None and isinstance(wire, Mapping):
            system = wire.get("systemInstruction")
        config: dict[str, Any] = {}
        if getattr(self.client, "vertexai", False):
            if system is not None:
                config["system_instruction"] = system
            if tools:
                config["tools"] = list(tools)
        else:  # the Developer API counts contents only: system and tools as leading text
            lead = []
            if system is not None:
                text = system if isinstance(system, str) else json.dumps(system, default=str)
                lead.append({"text": text})
            if tools:
                lead.append({"text": json.dumps(list(tools), sort_keys=True, default=str)})
            if lead:
                contents = [{"role": "user", "parts": lead}, *contents]
        resp = self.client.models.count_tokens(
            model=self.model, contents=contents, config=config or None
        )
        return int(resp.total_tokens or 0)


class BedrockRequestCounter:
    """Exact count from the bedrock-runtime ``count_tokens`` operation (boto3 client)."""

    def __init__(self, client: Any, *, model_id: str) -> None:
        self.client = client
        self.model_id = model_id

    def count_request(self, history: Any, *, tools: Sequence[Any] | None = None) -> int:
        messages, system = _part(_wire(history, BEDROCK), "messages", "system")
        converse: dict[str, Any] = {"messages": messages}
        if system is not None:
            converse["system"] = system
        if tools:
            converse["toolConfig"] = {"tools": list(tools)}
        resp = self.client.count_tokens(modelId=self.model_id, input={"converse": converse})
        return int(resp["inputTokens"])


def calibrated_budget(history: Any, budget: int, counter: RequestCounter, **kw: Any) -> int:
    """``budget`` (exact tokens) in the estimate's units, from one exact count of ``history``.

    ``compact(history, budget=calibrated_budget(history, 100_000, counter))`` lands
    under 100,000 tokens as the provider counts them, as far as the estimate's
    error is the same across the history. ``kw`` go to the count (``tools=``).
    """
    check_int("budget", budget, minimum=1, unit="tokens")
    exact = counter.count_request(history, **kw)
    estimate = EstimateRequestCounter().count_request(history, **kw)
    if exact <= 0 or estimate <= 0:
        return budget
    return max(1, budget * estimate // exact)
