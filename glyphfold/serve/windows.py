"""Context windows of known models, and how the proxy resolves a request's model.

The table holds each model's *input* context window (tokens) and the glyphfold
render profile that prices its images and lays out its snapshot pages. Figures
come from the providers' model pages (see ``docs/serve.md``); a deployment
overrides any row (``--window MODEL=TOKENS``, ``[models]`` in the config file).

Resolution is exact: a dated snapshot (``claude-sonnet-4-5-20250929``,
``gpt-4o-2024-08-06``, ``claude-3-7-sonnet-latest``) is the same model as its
base name, but a *different* model never lends its window (``gpt-4o-mini`` is not
``gpt-4o``; an unknown model has no window, and the budget falls back to the
documented default).
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "KNOWN_MODELS",
    "MIN_LEARNED_WINDOW",
    "LearnedWindows",
    "ModelInfo",
    "ModelResolution",
    "resolve_model",
    "stated_window",
]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model's input context window (tokens) and its glyphfold render profile."""

    window: int
    profile: str


_TILE = "openai-tile"  # 512-px tile pricing (gpt-4o, gpt-4.1, o1, o3)
_PATCH = "openai"  # 32-px patch pricing (gpt-4.1-mini/nano, o4-mini, gpt-5.x)
_TEXT = "text-only"  # no vision: snapshots step aside, images are stripped
_CLAUDE = "anthropic"
_CLAUDE_HIRES = "anthropic-hires"

KNOWN_MODELS: dict[str, ModelInfo] = {
    # OpenAI
    "gpt-3.5-turbo": ModelInfo(16_385, _TEXT),
    "gpt-4": ModelInfo(8_192, _TEXT),
    "gpt-4-32k": ModelInfo(32_768, _TEXT),
    "gpt-4-turbo": ModelInfo(128_000, _TILE),
    "gpt-4o": ModelInfo(128_000, _TILE),
    "chatgpt-4o-latest": ModelInfo(128_000, _TILE),
    "gpt-4o-mini": ModelInfo(128_000, _TILE),
    "gpt-4.5-preview": ModelInfo(128_000, _TILE),
    "gpt-4.1": ModelInfo(1_047_576, _TILE),
    "gpt-4.1-mini": ModelInfo(1_047_576, _PATCH),
    "gpt-4.1-nano": ModelInfo(1_047_576, _PATCH),
    "o1": ModelInfo(200_000, _TILE),
    "o1-mini": ModelInfo(128_000, _TEXT),
    "o1-pro": ModelInfo(200_000, _TILE),
    "o3": ModelInfo(200_000, _TILE),
    "o3-pro": ModelInfo(200_000, _TILE),
    "o3-mini": ModelInfo(200_000, _TEXT),
    "o4-mini": ModelInfo(200_000, _PATCH),
    # gpt-5.x: 400k context = 272k input + 128k output; the input window is what fits
    "gpt-5": ModelInfo(272_000, _PATCH),
    "gpt-5-mini": ModelInfo(272_000, _PATCH),
    "gpt-5-nano": ModelInfo(272_000, _PATCH),
    "gpt-5-codex": ModelInfo(272_000, _PATCH),
    "gpt-5.1": ModelInfo(272_000, _PATCH),
    "gpt-5.4": ModelInfo(272_000, _PATCH),
    "gpt-5.4-mini": ModelInfo(272_000, _PATCH),
    # Anthropic (standard 200k window; the 1M beta is opt-in, override it per model)
    "claude-3-haiku": ModelInfo(200_000, _CLAUDE),
    "claude-3-sonnet": ModelInfo(200_000, _CLAUDE),
    "claude-3-opus": ModelInfo(200_000, _CLAUDE),
    "claude-3-5-haiku": ModelInfo(200_000, _CLAUDE),
    "claude-3-5-sonnet": ModelInfo(200_000, _CLAUDE),
    "claude-3-7-sonnet": ModelInfo(200_000, _CLAUDE),
    "claude-sonnet-4": ModelInfo(200_000, _CLAUDE),
    "claude-opus-4": ModelInfo(200_000, _CLAUDE),
    "claude-opus-4-1": ModelInfo(200_000, _CLAUDE),
    "claude-sonnet-4-5": ModelInfo(200_000, _CLAUDE),
    "claude-haiku-4-5": ModelInfo(200_000, _CLAUDE),
    "claude-opus-4-5": ModelInfo(200_000, _CLAUDE),
    "claude-opus-4-7": ModelInfo(1_000_000, _CLAUDE_HIRES),
    # Google, through its OpenAI-compatible endpoint
    "gemini-2.5-pro": ModelInfo(1_048_576, "gemini-2"),
    "gemini-2.5-flash": ModelInfo(1_048_576, "gemini-2"),
}

# A snapshot suffix names a dated release of the *same* model.
_SNAPSHOT = re.compile(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest)$")


@dataclass(frozen=True, slots=True)
class ModelResolution:
    """What the proxy knows about a request's model.

    ``window`` is None when the model is unknown (SPEC §3.2: its capacity is not
    borrowed from another model); ``source`` is ``"config"``, ``"table"`` or
    ``"unknown"``.
    """

    model: str
    window: int | None
    profile: str
    source: str


def resolve_model(
    model: str,
    *,
    provider_profile: str,
    windows: Mapping[str, int],
    profiles: Mapping[str, str],
) -> ModelResolution:
    """Resolve ``model``: configured overrides first, then the table, else unknown.

    ``provider_profile`` is the profile of the endpoint the request came to (used
    for an unknown model's images: the provider's own pricing).
    """
    names = [model]
    base = _SNAPSHOT.sub("", model)
    if base != model:
        names.append(base)
    info = next((KNOWN_MODELS[n] for n in names if n in KNOWN_MODELS), None)
    profile = next((profiles[n] for n in names if n in profiles), None)
    if profile is None:
        profile = info.profile if info is not None else provider_profile
    for n in names:
        if n in windows:
            return ModelResolution(model, windows[n], profile, "config")
    if info is not None:
        return ModelResolution(model, info.window, profile, "table")
    return ModelResolution(model, None, profile, "unknown")


# what providers' overflow messages say the window is (OpenAI and compatible servers,
# Anthropic's two messages)
_STATED_WINDOW = (
    re.compile(r"maximum context length is (\d+) tokens"),
    re.compile(r"prompt is too long: \d+ tokens > (\d+) maximum"),
    re.compile(r"exceed context limit: \d+ \+ \d+ > (\d+)"),
)


def stated_window(error_text: str) -> int | None:
    """The window an upstream's overflow error states, if it states one."""
    for pattern in _STATED_WINDOW:
        m = pattern.search(error_text)
        if m:
            return int(m.group(1))
    return None


# no model has a window this small: an "overflow" below it is not a window (a 413 from a
# gateway on a 5-token request must not turn compaction off for every client)
MIN_LEARNED_WINDOW = 1_024


@dataclass(slots=True)
class _Entry:
    window: int | None  # learned from an overflow error (None: only successes seen)
    succeeded: int  # the largest request (tokens) that this upstream accepted
    expires: float


class LearnedWindows:
    """Windows an upstream reported in its own overflow errors, per (upstream, model).

    Not a borrowed window (SPEC §3.2): it is this model's own provider saying so.
    A learned window only lowers the table's window and never overrides a configured
    one (``--window``, ``[models]``: the operator's word wins); it is never set
    below a request the same upstream accepted for that model, nor below
    :data:`MIN_LEARNED_WINDOW`; every entry expires ``ttl_s`` after it was last
    confirmed, and at most ``max_models`` entries are kept (oldest dropped).
    """

    def __init__(
        self,
        max_models: int = 1024,
        *,
        ttl_s: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._max = max_models
        self._ttl = ttl_s
        self._clock = clock

    def _get(self, key: tuple[str, str]) -> _Entry | None:
        e = self._entries.get(key)
        if e is not None and e.expires <= self._clock():
            del self._entries[key]
            return None
        return e

    def _put(self, key: tuple[str, str], entry: _Entry) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def succeeded(self, upstream: str, model: str, tokens: int | None) -> None:
        """The upstream accepted a request of ``tokens`` (estimated) for ``model``."""
        if tokens is None or tokens <= 0:
            return
        key = (upstream, model)
        e = self._get(key)
        if e is None:
            self._put(key, _Entry(None, tokens, self._clock() + self._ttl))
        elif tokens > e.succeeded:
            e.succeeded = tokens
            if e.window is not None and e.window < tokens:
                e.window = None  # contradicted by a success: forget it

    def learn(self, upstream: str, model: str, window: int) -> bool:
        """Remember an overflow's window; False when it is refused (too small, contradicted)."""
        key = (upstream, model)
        e = self._get(key)
        floor = max(MIN_LEARNED_WINDOW, e.succeeded if e is not None else 0)
        if window < floor:
            return False
        expires = self._clock() + self._ttl
        if e is None:
            self._put(key, _Entry(window, 0, expires))
        elif e.window is None or window <= e.window:
            e.window, e.expires = window, expires
            self._entries.move_to_end(key)
        return True

    def window(self, upstream: str, model: str) -> int | None:
        """The learned window, if one is known and not expired."""
        e = self._get((upstream, model))
        return None if e is None else e.window

    def apply(self, upstream: str, res: ModelResolution) -> ModelResolution:
        """``res`` with the learned window when it is smaller (never over a configured one)."""
        if res.source == "config":
            return res
        learned = self.window(upstream, res.model)
        if learned is None or (res.window is not None and res.window <= learned):
            return res
        return ModelResolution(res.model, learned, res.profile, "learned")
