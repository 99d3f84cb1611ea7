"""What a compaction returns: the new history and the record of everything that left."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from glyphfold.compaction.history.messages import HistoryT
from glyphfold.compaction.history.model import History
from glyphfold.compaction.ladder.ledger import LedgerEntry, ledger_to_json
from glyphfold.compaction.ladder.provider import provider_messages

if TYPE_CHECKING:
    from glyphfold.render.page import Page

__all__ = ["CompactionResult"]


@dataclass(frozen=True, kw_only=True)
class CompactionResult(Generic[HistoryT]):
    """What the ladder did: the new history and the record of everything that left.

    ``messages`` is the same kind as the input (wire list or dict, or a canonical
    History) and keeps the snapshot source under ``x_glyphfold`` for the next pass;
    send :meth:`for_provider`.
    """

    messages: HistoryT
    ledger: tuple[LedgerEntry, ...]
    events: tuple[object, ...]
    tokens_before: int
    tokens_after: int
    pages: tuple[Page, ...]  # the final snapshot's pages
    budget: int
    target: int  # budget minus reserve: what the history had to fit
    dry_run: bool = False
    history: History | None = field(default=None, repr=False)  # canonical result

    def __repr__(self) -> str:
        # a summary: the dataclass repr would inline the history and every page's PNG bytes
        rungs = ", ".join(e.rung for e in self.ledger) or "none"
        return (
            f"<CompactionResult {self.tokens_before:,} -> {self.tokens_after:,} tokens, "
            f"target {self.target:,}, {'fits' if self.fits else 'over'}"
            f"{', dry run' if self.dry_run else ''}; rungs: {rungs}; "
            f"{len(self.pages):,} page(s)>"
        )

    @property
    def fits(self) -> bool:
        """True when the history ends at or under the target."""
        return self.tokens_after <= self.target

    def for_provider(self) -> HistoryT:
        """``messages`` as a provider accepts them (``x_glyphfold`` keys stripped).

        Keep ``messages`` as the conversation's stored history (the snapshot source
        in it lets the next pass re-render from text, docs/ladder.md); send this.
        """
        return provider_messages(self.messages)

    @property
    def missing_glyphs(self) -> dict[str, int]:
        """Characters of the snapshot text that no font covers (``"U+XXXX"`` -> count).

        They are drawn as a replacement box on the pages; :attr:`hints` names a font
        package that covers them.
        """
        out: dict[str, int] = {}
        for e in self.ledger:
            for cp, n in e.extra.get("missing_glyphs", {}).items():
                out[cp] = out.get(cp, 0) + n
        return out

    @property
    def hints(self) -> tuple[str, ...]:
        """What to install so every character of the pages has a glyph (empty: nothing)."""
        seen: dict[str, None] = {}
        for e in self.ledger:
            seen.update(dict.fromkeys(e.extra.get("hints", ())))
        return tuple(seen)

    @property
    def plan(self) -> tuple[LedgerEntry, ...]:
        """For a dry run: per rung, what it would remove and the tokens it would save."""
        return self.ledger

    def report(self) -> dict[str, Any]:
        """A JSON-ready report (tokens, ledger; no page bytes)."""
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget,
            "target": self.target,
            "fits": self.fits,
            "dry_run": self.dry_run,
            "missing_glyphs": self.missing_glyphs,
            "hints": list(self.hints),
            "pages": [
                {
                    "width": p.width,
                    "height": p.height,
                    "image_tokens": p.image_tokens,
                    "png_bytes": len(p.png),
                    "source_span": list(p.source_span),
                }
                for p in self.pages
            ],
            "ledger": ledger_to_json(self.ledger),
        }

    def summary_lines(self) -> list[str]:
        """Short human summary: tokens before -> after and one line per rung."""
        head = (
            f"{'plan' if self.dry_run else 'compacted'}: {self.tokens_before:,} -> "
            f"{self.tokens_after:,} tokens (target {self.target:,})"
        )
        return [head, *(e.summary_line() for e in self.ledger), *self.hints]
