"""``glyphfold serve``: an HTTP proxy that makes every request fit its model's window.

It speaks the providers' own APIs (OpenAI Chat Completions and Responses,
Anthropic Messages), so any harness that lets its user set a base URL gets
proactive compaction before forwarding and reactive recovery after an upstream
overflow. Needs the ``serve`` extra: ``pip install 'glyphfold[serve]'``.
See docs/serve.md.
"""

from __future__ import annotations

from glyphfold.serve.app import create_app
from glyphfold.serve.config import ServeConfig, SummaryConfig, load_config
from glyphfold.serve.windows import KNOWN_MODELS, resolve_model

__all__ = [
    "KNOWN_MODELS",
    "ServeConfig",
    "SummaryConfig",
    "create_app",
    "load_config",
    "resolve_model",
]
