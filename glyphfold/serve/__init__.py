"""``glyphfold serve``: an HTTP proxy that makes every request fit its model's window.

It speaks the providers' own APIs (OpenAI Chat Completions and Responses,
Anthropic Messages), so any harness that lets its user set a base URL gets
proactive compaction before forwarding and reactive recovery after an upstream
overflow. Needs the ``serve`` extra: ``pip install 'glyphfold[serve]'``.
See docs/serve.md.

The names below are imported on first use, so the model table
(:mod:`glyphfold.serve.windows`, standard library only) is usable without the
``serve`` extra: ``glyphfold context --model`` reads it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    "KNOWN_MODELS": "glyphfold.serve.windows",
    "resolve_model": "glyphfold.serve.windows",
    "ServeConfig": "glyphfold.serve.config",
    "SummaryConfig": "glyphfold.serve.config",
    "load_config": "glyphfold.serve.config",
    "create_app": "glyphfold.serve.app",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        msg = f"module 'glyphfold.serve' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(home), name)
