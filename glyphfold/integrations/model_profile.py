"""The provider profile of the model a framework is about to call (issue 23).

Every framework names its provider somewhere: LangChain chat models by class
(``ChatAnthropic``, ``ChatOpenAI``...) and ``_llm_type``/``ls_provider``; pydantic-ai
models by ``system`` (``"anthropic"``, ``"openai"``, ``"google-gla"``...) and
``model_name``; the Agents SDK, smolagents and LlamaIndex by class and model id
(``"gpt-5"``, ``"anthropic/claude-..."``, ``"openai:gpt-5"``). :func:`profile_for_model`
reads them in that order and returns a profile name, or None when nothing says.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["profile_for_model", "profile_for_name"]

# provider words (classes, _llm_type, ls_provider, pydantic-ai `system`) -> profile
_PROVIDERS: tuple[tuple[str, str], ...] = (
    ("anthropic", "anthropic"),
    ("claude", "anthropic"),
    ("bedrockconverse", "anthropic"),  # refined by the model id below
    ("azureopenai", "openai"),
    ("openai", "openai"),
    ("google", "gemini"),
    ("gemini", "gemini"),
    ("vertex", "gemini"),
    ("qwen", "qwen-vl"),
    ("dashscope", "qwen-vl"),
)


def profile_for_name(model_id: str) -> str | None:
    """The profile of a model id (``"claude-opus-4-7"``, ``"openai:gpt-5"``, ``"gpt-4.1"``)."""
    name = model_id.lower().rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    if re.search(r"claude-(opus-4-[7-9]|opus-[5-9])", name):
        return "anthropic-hires"  # the high-resolution tier (docs/budget.md)
    if "claude" in name:
        return "anthropic"
    if re.match(r"gpt-4(\.1|o)|gpt-4-", name):
        return "openai-tile"  # 512-px tile models
    if re.match(r"(gpt-[5-9]|o[1-9]\b|o[1-9]-|chatgpt|computer-use)", name):
        return "openai"
    if name.startswith("gemini-2") or name.startswith("gemini-1"):
        return "gemini-2"
    if name.startswith("gemini"):
        return "gemini"
    if "qwen" in name and "vl" in name:
        return "qwen-vl"
    return None


def _ids(model: Any) -> list[str]:
    out = []
    for attr in ("model_name", "model", "model_id", "deployment_name", "name"):
        v = getattr(model, attr, None)
        if isinstance(v, str) and v:
            out.append(v)
    return out


def _provider_words(model: Any) -> list[str]:
    words = [c.__name__.lower() for c in type(model).__mro__[:3]]
    words.append(type(model).__module__.lower())
    for attr in ("system", "_llm_type", "provider", "provider_name"):
        v = getattr(model, attr, None)
        if isinstance(v, str):
            words.append(v.lower())
    get_params = getattr(model, "_get_ls_params", None)
    if callable(get_params):  # LangChain: ls_provider ("anthropic", "openai", "google_genai")
        try:
            params = get_params()
        except Exception:  # a model's own bug must not break the agent
            params = {}
        prov = params.get("ls_provider") if isinstance(params, dict) else None
        if isinstance(prov, str):
            words.insert(0, prov.lower())
    return words


def profile_for_model(model: Any) -> str | None:
    """The profile name for ``model`` (a framework model object or a model id), or None.

    The model id decides when it names a known family (it tells tiers apart: Opus 4.7
    prices pages at the high-resolution tier, GPT-4.1 by 512-px tiles); else the
    provider its class or attributes name.
    """
    if isinstance(model, str):
        return profile_for_name(model)
    for model_id in _ids(model):
        found = profile_for_name(model_id)
        if found is not None:
            return found
    for word in _provider_words(model):
        compact = word.replace("_", "").replace("-", "").replace(".", "")
        for key, profile in _PROVIDERS:
            if key in compact:
                return profile
    return None
