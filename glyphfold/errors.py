"""Exceptions raised by glyphfold.

Every error subclasses a builtin as well as :class:`GlyphfoldError`, so a caller's
``except ValueError`` / ``except OSError`` keeps working.
"""

from __future__ import annotations


class GlyphfoldError(Exception):
    """Base class of every error glyphfold raises on purpose."""


class InputError(GlyphfoldError, ValueError):
    """Input that glyphfold cannot use (empty, binary, invalid UTF-8, bad option value)."""


class FontNotFoundError(GlyphfoldError, OSError):
    """No usable font was found; the message names what to install."""


class UnknownProfileError(GlyphfoldError, ValueError):
    """A provider profile name that does not exist; the message lists the valid names."""


class UnknownShapeError(GlyphfoldError, ValueError):
    """A glyph shape name that does not exist; the message lists the valid names."""


class LayoutError(GlyphfoldError, ValueError):
    """A cell/page geometry that cannot hold text (e.g. a page smaller than one cell)."""


class EncodeError(GlyphfoldError, ValueError):
    """A page cannot be encoded within the requested limits."""


class HistoryFormatError(GlyphfoldError, ValueError):
    """A malformed or mixed-format chat history; ``index`` names the offending message."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class AmbiguousFormatError(HistoryFormatError):
    """Plain text that fits several wire formats and nothing tells which; pass ``format=``."""


class ContextOverflowError(GlyphfoldError):
    """A history that does not fit the model's context window, with the numbers."""

    def __init__(
        self,
        message: str,
        *,
        estimate: int | None = None,
        window: int | None = None,
        overshoot: int | None = None,
    ) -> None:
        super().__init__(message)
        self.estimate = estimate
        self.window = window
        self.overshoot = overshoot


class StoreError(GlyphfoldError, RuntimeError):
    """A transcript store failure (corrupt file, bad URL, schema too new...)."""


class NotFoundError(StoreError, LookupError):
    """A conversation, message or checkpoint label that does not exist."""


class ConflictError(StoreError):
    """Another writer moved the conversation tip first (compare-and-set failed)."""


class LockTimeoutError(StoreError, TimeoutError):
    """Another writer held the store's (or a conversation's) lock longer than the lock timeout."""


class CorruptStoreError(StoreError):
    """A store whose file is damaged (a corrupt SQLite page); nothing was written to it."""


class TokenizerUnavailableError(GlyphfoldError, RuntimeError):
    """An exact tokenizer that is not installed or not available offline."""


class SummarizerError(GlyphfoldError, RuntimeError):
    """A summarizer raised, timed out or returned something that is not text."""
