"""Elision rung: clear what agents fill the window with, in the middle (SPEC §5.5, §5.8).

Outside the head and the tail, in any turn, oldest first and only as much as the
target needs (SPEC §5.6):

- a tool result with no notable event (SPEC §5.8: superseded, an exact duplicate,
  progress noise, a confirmation or empty output; see
  :mod:`glyphfold.compaction.ladder.rungs.superseded`) becomes a one-line stub,
  ``[elided: read_file, 48,213 chars, sha1 3f2a9c; reread by #call_9]``; the call
  stays, so pairing stays valid and the model sees what it asked for. File contents,
  search results, test runs and errors stay for the snapshot;
- the long argument values of a tool call whose file is written again or read whole
  later (a ``write_file`` body, a patch) become stubs the same way,
  ``[elided: write_file.content, 12,345 chars, sha1 3f2a9c]``; the call stays valid:
  OpenAI ``arguments`` stays a JSON string, Anthropic ``input`` an object, short
  values (a path) stay;
- the thinking blocks of earlier turns are cleared (the provider does not count
  them; the current tool cycle's thinking and signatures are never touched).

A rung that cannot save ``min_saving_tokens`` does not act: a small compaction
still breaks the provider's prompt cache. Images are left to the image rung; the
rules for what is notable live in :mod:`glyphfold.compaction.ladder.rungs.notable`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.markers import is_marker
from glyphfold.compaction.history.model import History, Image, Message, Text, ToolCall, ToolResult
from glyphfold.compaction.history.provider_blocks import is_thinking_block, thinking_chars
from glyphfold.compaction.history.steps import Regions
from glyphfold.compaction.ladder.ledger import LedgerEntry, Removed
from glyphfold.compaction.ladder.rungs.base import RungContext, RungOutcome
from glyphfold.compaction.ladder.rungs.common import (
    kept_steps,
    regions,
    result_text,
    stub_arguments,
    tool_names,
)
from glyphfold.compaction.ladder.rungs.notable import (
    DEFAULT_ERROR_PATTERNS,
    compile_error_patterns,
    elision_stub,
    error_text,
    is_stub,
    notable_reason,
)
from glyphfold.compaction.ladder.rungs.superseded import (
    Call,
    actions_of,
    argument_reasons,
    is_test_run,
    qualifying_reasons,
)

__all__ = ["Elide", "ElideConfig"]


POLICIES: tuple[str, ...] = ("spec", "unremarkable")


@dataclass(frozen=True, slots=True)
class ElideConfig:
    """Rules of the elision rung; every default has its reason in the comment."""

    keep_newest_results: int = 4  # the model is usually acting on its last few results
    short_result_chars: int = 600  # a ~45-char stub saves little below ~150 tokens
    protected_tools: frozenset[str] = frozenset()  # e.g. {"todo_write", "memory"}
    keep_errors: bool = True  # errors drive the agent's next step
    error_patterns: tuple[str, ...] = DEFAULT_ERROR_PATTERNS
    digest_hex: int = 6  # enough to tell two results apart, short enough to ignore
    # where tools print their verdict: a command's first lines and its last ones (exit
    # codes, tracebacks, test summaries); the middle of a long result is file content
    scan_head_chars: int = 2000
    scan_tail_chars: int = 6000
    # a write_file body or a patch is read once, like a result; values up to
    # short_result_chars (a path, a flag) stay, so the call still says what it did
    clear_arguments: bool = True
    # the provider strips earlier turns' thinking; clearing it keeps the stored history small
    clear_thinking: bool = True
    # "spec": only results SPEC §5.8 lets go (superseded, duplicates, progress noise,
    # confirmations, empty outputs; glyphfold.compaction.ladder.rungs.superseded): file
    # contents, search results, test runs and errors go to the snapshot, which keeps
    # every word. "unremarkable": every old result with no notable event (0.1's rule).
    policy: str = "spec"

    def __post_init__(self) -> None:
        for name in (
            "keep_newest_results",
            "short_result_chars",
            "scan_head_chars",
            "scan_tail_chars",
        ):
            check_int(name, getattr(self, name), minimum=0, error=ValueError)
        if self.policy not in POLICIES:
            msg = f"elide policy must be one of {POLICIES}, got {self.policy!r}"
            raise ValueError(msg)
        if not 4 <= self.digest_hex <= 40:
            msg = f"digest_hex must be in 4..40 hex digits, got {self.digest_hex}"
            raise ValueError(msg)
        if not isinstance(self.protected_tools, frozenset):
            msg = (
                f"protected_tools must be a frozenset of tool names, got "
                f"{type(self.protected_tools).__name__}; wrap it: frozenset({{...}})"
            )
            raise TypeError(msg)
        for p in self.error_patterns:
            try:
                re.compile(p)
            except re.error as exc:
                msg = f"error pattern {p!r} is not a valid regex ({exc}); fix or remove it"
                raise ValueError(msg) from exc

    def compiled_errors(self) -> re.Pattern[str]:
        """All error patterns as one multiline regex."""
        return compile_error_patterns(self.error_patterns)


@dataclass(frozen=True, slots=True)
class _Change:
    """One message the rung would rewrite, and what it saves."""

    index: int
    message: Message
    rows: tuple[Removed, ...]
    saving: int


@dataclass(frozen=True, slots=True)
class Reasons:
    """Why each call's result (and arguments) qualify for elision; None: any (0.1's rule)."""

    results: dict[str, str] | None
    arguments: dict[str, str] | None


def _verdict(text: str, config: ElideConfig) -> bool:
    """True when a result's text shows an error or a test run (never superseded)."""
    return error_text(text, config) or is_test_run(text)


def elision_reasons(history: History, config: ElideConfig) -> Reasons:
    """The SPEC §5.8 reasons of every call of ``history`` (the whole history: later calls
    in the tail supersede earlier ones)."""
    if config.policy == "unremarkable":
        return Reasons(None, None)
    results: dict[str, tuple[str, bool | Callable[[], bool]]] = {}
    for m in history.messages:
        for b in m.blocks:
            if isinstance(b, ToolResult):
                text = result_text(b)
                # whether it is an error or a test run: asked only when a rule would elide it
                verdict = True if b.is_error else functools.partial(_verdict, text, config)
                results[b.call_id] = (text, verdict)
    calls = []
    for m in history.messages:
        for b in m.blocks:
            if isinstance(b, ToolCall):
                found: tuple[str | None, Any] = results.get(b.id, (None, False))
                calls.append(Call(b.id, b.name, b.arguments, found[0], found[1]))
    actions = actions_of(calls)  # each call's action read once, for both rules
    return Reasons(qualifying_reasons(calls, actions), argument_reasons(calls, actions))


def _arg_chars(c: ToolCall) -> int:
    a = c.arguments
    return len(a) if isinstance(a, str) else len(json.dumps(a, default=str))


class Elide:
    """Stub old, unremarkable tool results and long arguments; clear old thinking."""

    name = "elide"
    model_free = True

    def __init__(self, config: ElideConfig | None = None) -> None:
        self.config = config or ElideConfig()

    def apply(self, history: History, ctx: RungContext) -> RungOutcome:
        need = ctx.need(history)
        shake = ctx.target_tokens <= 0  # /shake: clear everything the rules allow
        if need <= 0 and not shake:
            return RungOutcome(history, None)
        messages = list(history.messages)
        removed: list[Removed] = []
        before = ctx.tokens_of(history)
        saved = 0
        out = history
        for c in self._changes(history, regions(history, ctx), ctx):  # oldest first
            messages[c.index] = c.message
            removed.extend(c.rows)
            saved += c.saving
            if shake or saved < need:
                continue
            out = history.replace_messages(messages)
            if ctx.count(out) <= before - need:
                break  # no further than the target needs
            saved = before - ctx.count(out)  # the per-message estimates were short: go on
        if not removed or (not shake and saved < ctx.min_saving_tokens):
            return RungOutcome(history, None)  # a small saving is not worth the cache
        if out.messages != tuple(messages):
            out = history.replace_messages(messages)
        entry = LedgerEntry(self.name, before, ctx.count(out), tuple(removed))
        return RungOutcome(out, entry)

    def _changes(self, history: History, reg: Regions, ctx: RungContext) -> Iterator[_Change]:
        """The messages the rung may rewrite, oldest first (computed as they are asked for)."""
        msgs = history.messages
        names = tool_names(history)
        ranks = self._result_ranks(history)
        kept = kept_steps(history, reg, ctx)
        skip = {i for s in reg.middle_steps if s.start in kept for i in s.indices}
        earlier = reg.newest_user if reg.newest_user is not None else 0
        costs = ctx.message_costs(history)
        reasons = elision_reasons(history, self.config)
        for i in reg.middle:
            m = msgs[i]
            if i in skip or is_marker(m) or ctx.is_pinned(m):
                continue
            change = self._rewrite(
                i, m, names, ranks, reasons, clear_thinking=i < earlier, cost=costs[i], ctx=ctx
            )
            if change is not None:
                yield change

    @staticmethod
    def _result_ranks(history: History) -> dict[tuple[int, int], int]:
        """(message, block) -> rank from the newest tool result of the history (0 = newest)."""
        located = [
            (i, j)
            for i, m in enumerate(history.messages)
            for j, b in enumerate(m.blocks)
            if isinstance(b, ToolResult)
        ]
        n = len(located)
        return {loc: n - 1 - r for r, loc in enumerate(located)}

    def _rewrite(
        self,
        i: int,
        m: Message,
        names: dict[str, str],
        ranks: dict[tuple[int, int], int],
        reasons: Reasons,
        *,
        clear_thinking: bool,
        cost: int,
        ctx: RungContext,
    ) -> _Change | None:
        cfg = self.config
        blocks: list[Any] = []
        rows: list[Removed] = []
        for j, b in enumerate(m.blocks):
            new: Any = b
            if isinstance(b, ToolResult):
                why = None if reasons.results is None else reasons.results.get(b.call_id)
                if reasons.results is None or why is not None:
                    new = self._result(b, names.get(b.call_id), ranks[(i, j)], why)
                if new is not b:
                    rows.append(
                        Removed(
                            i,
                            "stub",
                            len(result_text(b)),
                            0,
                            id=b.call_id,
                            role=m.role,
                            detail=result_text(new),
                        )
                    )
            elif isinstance(b, ToolCall) and cfg.clear_arguments:
                allowed = reasons.arguments is None or b.id in reasons.arguments
                if allowed and b.name not in cfg.protected_tools:
                    new = (
                        stub_arguments(
                            b, min_chars=cfg.short_result_chars, hex_digits=cfg.digest_hex
                        )
                        or b
                    )
                if new is not b:
                    rows.append(
                        Removed(
                            i,
                            "stub",
                            _arg_chars(b),
                            0,
                            id=b.id,
                            role=m.role,
                            detail=f"arguments of {b.name} -> {new.arguments}",
                        )
                    )
            elif clear_thinking and cfg.clear_thinking and is_thinking_block(b):
                new = None
            if new is not None:
                blocks.append(new)
        if clear_thinking and cfg.clear_thinking and len(blocks) < len(m.blocks):
            chars = thinking_chars(m)
            rows.append(
                Removed(
                    i,
                    "cleared",
                    chars,
                    0,
                    role=m.role,
                    detail="thinking of an earlier turn (not sent by the provider)",
                )
            )
            if not blocks:
                blocks.append(Text("[thinking cleared]"))
        if not rows:
            return None
        new_m = dataclasses.replace(m, blocks=tuple(blocks))
        # the estimate never counted earlier turns' thinking: clearing it saves no token
        saving = max(0, cost - ctx.count_message(new_m))
        rows[0] = dataclasses.replace(rows[0], tokens=saving)  # the saving, booked once
        return _Change(i, new_m, tuple(rows), saving)

    def _result(
        self, tr: ToolResult, name: str | None, rank: int, reason: str | None
    ) -> ToolResult:
        cfg = self.config
        text = result_text(tr)
        if not text or is_stub(text):
            return tr
        why = notable_reason(
            text,
            tool_name=name,
            is_error=tr.is_error,
            newest_rank=rank,
            pinned=False,
            config=cfg,
        )
        if why is not None:
            return tr
        stub = elision_stub(text, tool_name=name, hex_digits=cfg.digest_hex, reason=reason)
        images = tuple(c for c in tr.content if isinstance(c, Image))
        return dataclasses.replace(tr, content=(Text(stub), *images))
