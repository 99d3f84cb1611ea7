"""Calls a type checker must reject (each line names the error code mypy reports)."""

import glyphfold
from glyphfold.integrations.langchain import GlyphfoldMiddleware
from glyphfold.integrations.pydantic_ai import GlyphfoldHistory

messages: list[dict[str, object]] = []
glyphfold.compcat(messages, budget=60_000)  # expect: attr-defined
glyphfold.compact(messages, budget="60k")  # expect: arg-type
glyphfold.render_text(b"bytes, not text")  # expect: arg-type
glyphfold.trim_to_recent_turns(messages, budget=32_000, colour="red")  # expect: call-arg

GlyphfoldMiddleware(budget=6000, trigerr=9000)  # expect: call-arg
GlyphfoldHistory(budget=6000, trigger="9k")  # expect: arg-type
