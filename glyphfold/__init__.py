"""glyphfold: keep long LLM-agent conversations inside the model's context window.

Public names are resolved lazily from the explicit table below, so that
``import glyphfold`` stays cheap (history-only users never import numba).
"""

from __future__ import annotations

import importlib
from typing import Any

from glyphfold.errors import (
    ConflictError,
    ContextOverflowError,
    EncodeError,
    FontNotFoundError,
    GlyphfoldError,
    HistoryFormatError,
    InputError,
    LayoutError,
    NotFoundError,
    StoreError,
    UnknownProfileError,
    UnknownShapeError,
)

__version__ = "0.1.0"

# public name -> module that defines it (explicit registry, no import side effects)
_LAZY: dict[str, str] = {
    "render_text": "glyphfold.render.api",
    "RenderResult": "glyphfold.render.api",
    "compact": "glyphfold.compaction.ladder",
    "recover": "glyphfold.compaction.ladder",
    "shake": "glyphfold.compaction.ladder",
    "CompactionResult": "glyphfold.compaction.ladder",
    "LadderConfig": "glyphfold.compaction.ladder",
    "provider_messages": "glyphfold.compaction.ladder",
}

__all__ = [
    "ConflictError",
    "ContextOverflowError",
    "EncodeError",
    "FontNotFoundError",
    "GlyphfoldError",
    "HistoryFormatError",
    "InputError",
    "LayoutError",
    "NotFoundError",
    "StoreError",
    "UnknownProfileError",
    "UnknownShapeError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        msg = f"module 'glyphfold' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
