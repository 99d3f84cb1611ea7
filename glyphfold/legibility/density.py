"""Density on real transcripts: what the snapshot pages of real sessions carry and cost.

For each history and profile the snapshot rung alone compacts the history, at
the tightest of ``BUDGET_FRACTIONS`` of its size that it reaches (so as much of
the middle as can be is imaged; histories it cannot shrink are left out); then:

- ``chars_per_image_token``: transcript characters the pages show per image token;
- saved versus text: the imaged transcript as text (exact o200k_base count) minus
  the pages' image tokens;
- ``tokens_saved``: history tokens before minus after (o200k_base for text, the
  profile's price for images): it also counts the middle's own images and the
  transcript's caps on long tool results;
- legibility of those same pages: whole-page OCR of a sample of pages against the
  transcript span each page shows (CER and the exact rate of the identifiers in it).

``python -m glyphfold.legibility.density DIR`` runs it on every ``*.anthropic.json``
of DIR (the project's real-session corpus) and prints one row per profile.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glyphfold.compaction.history.markers import X_KEY
from glyphfold.errors import ContextOverflowError, InputError

# budgets tried, as fractions of the history's size: the tightest one that the snapshot
# rung reaches wins (the most middle imaged); a page costs ~1,500 tokens, so a small
# history is imaged only when that saves tokens
BUDGET_FRACTIONS = (0.8, 0.6, 0.45, 0.33, 0.25)


def transcript_of(history: Any) -> str:
    """Return the transcript the snapshot rung would image for the whole of ``history``."""
    from glyphfold.compaction.ladder.api import transcript_of as ladder_transcript

    return ladder_transcript(history)


def load_histories(paths: Iterable[Path]) -> list[tuple[str, Any]]:
    """Return ``(name, history)`` for each JSON file (a directory: its ``*.anthropic.json``)."""
    out = []
    for path in paths:
        files = sorted(path.glob("*.anthropic.json")) if path.is_dir() else [path]
        for f in files:
            try:
                out.append((f.name, json.loads(f.read_text(encoding="utf-8"))))
            except (OSError, ValueError) as exc:
                msg = f"cannot read history {f}: {exc}"
                raise InputError(msg) from None
    return out


@dataclass(frozen=True)
class SessionDensity:
    """One history compacted by the snapshot rung for one profile."""

    name: str
    profile: str
    source_chars: int
    pages: int
    image_tokens: int
    tokens_before: int
    tokens_after: int
    page_sample: tuple[tuple[str, bytes], ...]  # (reference span, png) pairs kept for OCR

    @property
    def chars_per_image_token(self) -> float:
        return self.source_chars / self.image_tokens if self.image_tokens else 0.0


def snapshot_density(
    name: str, history: Any, *, profile: str, counter: Any
) -> SessionDensity | None:
    """Compact with the snapshot rung alone; None when there is no middle to image."""
    from glyphfold.compaction.ladder.api import compact
    from glyphfold.compaction.ladder.transcript import plain_text

    before = compact(history, profile=profile, budget=10**9, counter=counter).tokens_before
    result = None
    for fraction in BUDGET_FRACTIONS:
        try:
            tried = compact(
                history, profile=profile, budget=max(1, int(before * fraction)),
                rungs="snapshot", counter=counter,
            )  # fmt: skip
        except ContextOverflowError:
            break
        if tried.pages:
            result = tried
    if result is None:
        return None
    snaps = [m for m in _wire_list(result.messages) if _meta(m).get("kind") == "snapshot"]
    source = str(_meta(snaps[-1]).get("source", "")) if snaps else ""
    sample = tuple(
        (plain_text(source[p.source_span[0] : p.source_span[1]]), p.png) for p in result.pages
    )
    return SessionDensity(
        name=name,
        profile=profile,
        source_chars=len(source),
        pages=len(result.pages),
        image_tokens=sum(p.image_tokens for p in result.pages),
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        page_sample=sample,
    )


def _wire_list(messages: Any) -> list[Any]:
    return list(messages["messages"]) if isinstance(messages, dict) else list(messages)


def _meta(m: Any) -> dict[str, Any]:
    return m.get(X_KEY, {}) if isinstance(m, dict) else {}


@dataclass(frozen=True)
class ProfileDensity:
    """The corpus for one profile: totals and the OCR of a page sample."""

    profile: str
    sessions: int
    source_chars: int
    pages: int
    image_tokens: int
    tokens_saved: int
    text_tokens_of_middle: int  # o200k_base of the imaged transcripts, as plain text
    ocr_pages: int
    cer: float | None
    ids_matched: int
    ids_total: int

    @property
    def chars_per_image_token(self) -> float:
        return self.source_chars / self.image_tokens if self.image_tokens else 0.0


def measure_profile(
    histories: Sequence[tuple[str, Any]],
    *,
    profile: str,
    engine: Any | None,
    ocr_pages: int = 3,
    counter: Any,
) -> ProfileDensity:
    """Density of every history for ``profile``; OCR of the ``ocr_pages`` fullest pages."""
    from glyphfold.legibility.measure import decode_png
    from glyphfold.legibility.metrics import cer, identifier_matches, normalise

    rows = [snapshot_density(n, h, profile=profile, counter=counter) for n, h in histories]
    done = [r for r in rows if r is not None]
    spans = sorted((ref for r in done for ref in r.page_sample), key=lambda x: -len(x[0]))
    errors = ref_chars = matched = total = 0
    sampled = spans[:ocr_pages] if engine is not None else []
    for ref, png in sampled:
        assert engine is not None  # sampled is empty without an engine
        read = engine.read_page(decode_png(png))
        errors += round(cer(ref, read) * len(normalise(ref)))
        ref_chars += len(normalise(ref))
        m, t = identifier_matches(ref, read)
        matched, total = matched + m, total + t
    middle_text = sum(counter.count("".join(x[0] for x in r.page_sample)) for r in done)
    return ProfileDensity(
        profile=profile,
        sessions=len(done),
        source_chars=sum(r.source_chars for r in done),
        pages=sum(r.pages for r in done),
        image_tokens=sum(r.image_tokens for r in done),
        tokens_saved=sum(r.tokens_before - r.tokens_after for r in done),
        text_tokens_of_middle=middle_text,
        ocr_pages=len(sampled),
        cer=errors / ref_chars if ref_chars else None,
        ids_matched=matched,
        ids_total=total,
    )


def format_table(rows: Sequence[ProfileDensity]) -> str:
    """A markdown table, one row per profile."""
    out = [
        "| profile | sessions | pages | chars/image token | image tokens | middle as text "
        "(o200k) | saved vs text | history tokens saved | OCR pages | CER | ids exact |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cer_s = "-" if r.cer is None else f"{r.cer:.2%}"
        ids = f"{r.ids_matched}/{r.ids_total}" if r.ids_total else "-"
        vs_text = r.text_tokens_of_middle - r.image_tokens
        share = f" ({vs_text / r.text_tokens_of_middle:.0%})" if r.text_tokens_of_middle else ""
        out.append(
            f"| {r.profile} | {r.sessions} | {r.pages:,} | {r.chars_per_image_token:.2f} | "
            f"{r.image_tokens:,} | {r.text_tokens_of_middle:,} | {vs_text:,}{share} | "
            f"{r.tokens_saved:,} | "
            f"{r.ocr_pages} | {cer_s} | {ids} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the density table of the real corpus (see the module docstring)."""
    from glyphfold.compaction.history.tokens import BpeCounter
    from glyphfold.render.profiles import PROFILES

    parser = argparse.ArgumentParser(prog="python -m glyphfold.legibility.density")
    parser.add_argument("paths", nargs="+", type=Path, help="history files or directories")
    parser.add_argument("--profile", action="append", help="profile (default: every vision one)")
    parser.add_argument("--ocr-pages", type=int, default=3, help="pages OCR'd per profile")
    parser.add_argument("--no-ocr", action="store_true", help="density only")
    args = parser.parse_args(argv)
    histories = load_histories(args.paths)
    profiles = args.profile or [p.name for p in PROFILES.values() if p.vision]
    engine = None
    if not args.no_ocr:
        from glyphfold.legibility.ocr import RapidOcrEngine

        engine = RapidOcrEngine()
    counter = BpeCounter("o200k_base")
    rows = []
    for name in profiles:
        print(f"density: {name} ({len(histories)} histories)", file=sys.stderr, flush=True)
        rows.append(
            measure_profile(histories, profile=name, engine=engine, ocr_pages=args.ocr_pages,
                            counter=counter)
        )  # fmt: skip
    print(format_table(rows))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
