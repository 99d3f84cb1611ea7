"""The optional summary rung's summarizer, built from ``[summary]`` in the config file.

It calls the configured provider's upstream with the official SDK and a key read
from the environment variable the config names (the proxy never uses a client's
key for a call the client did not make). Summaries run in proactive compaction
only, never in recovery (SPEC §5.1).
"""

from __future__ import annotations

import os
from typing import Any

from glyphfold.errors import InputError
from glyphfold.serve.config import ServeConfig

__all__ = ["build_summarizer"]

PROMPT = (
    "Summarise the middle of this agent conversation so the agent can continue without it: "
    "goals, constraints, decisions, current state, open items, and every exact identifier "
    "(paths, names, commands, ids, numbers). Reply with the summary only."
)


def build_summarizer(cfg: ServeConfig) -> Any:
    """A ``text -> summary`` callable, or None when no summary is configured."""
    s = cfg.summary
    if s is None or "summary" not in cfg.rungs:
        return None
    key = os.environ.get(s.api_key_env)
    if not key:
        msg = f"[summary] reads its API key from ${s.api_key_env}, which is not set"
        raise InputError(msg)
    if s.provider == "anthropic":
        import anthropic

        client = anthropic.Anthropic(api_key=key, base_url=cfg.anthropic_upstream)

        def summarize(text: str) -> str:
            resp = client.messages.create(
                model=s.model,
                max_tokens=s.max_tokens,
                system=PROMPT,
                messages=[{"role": "user", "content": text}],
            )
            return "".join(getattr(b, "text", "") for b in resp.content)

        return summarize
    import openai

    base = (cfg.openai_upstream or "https://api.openai.com").rstrip("/")
    oclient = openai.OpenAI(api_key=key, base_url=base if base.endswith("/v1") else base + "/v1")

    def summarize_openai(text: str) -> str:
        resp = oclient.chat.completions.create(
            model=s.model,
            max_completion_tokens=s.max_tokens,
            messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": text}],
        )
        return resp.choices[0].message.content or ""

    return summarize_openai
