"""Where a history's tokens go: by role, by content kind, the largest messages.

The figures ``glyphfold context`` prints, for a library user's own dashboards and
budgets. Every row is priced the way the total prices its message (SPEC §3.4, the
estimate of :func:`~glyphfold.compaction.history.tokens.token_costs`), so the kinds
and the roles each add up to :attr:`TokenBreakdown.total`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.messages import FormatArg, WireHistory, coerce
from glyphfold.compaction.history.model import (
    OPENAI,
    Block,
    History,
    Image,
    Message,
    ToolCall,
    ToolResult,
)
from glyphfold.compaction.history.tokens import (
    DEFAULT_IMAGE_POLICY,
    DEFAULT_PROFILE,
    FRAMING_TOKENS,
    TokenCosts,
    TokenCounter,
    estimate_message_tokens,
    token_costs,
)
from glyphfold.render.profiles import Profile, get_profile

__all__ = ["KINDS", "RoleTokens", "TokenBreakdown", "token_breakdown"]

# the content kinds, in the order they are reported
KINDS = ("text", "tool calls", "tool results", "images", "tool schemas", "framing")
SYSTEM_TOP_LEVEL = "system (top-level)"  # the role row of a top-level system prompt
TOOLS_TOP_LEVEL = "tools (top-level)"  # the role row of the tool schemas a request sends


@dataclass(frozen=True, slots=True)
class RoleTokens:
    """How many messages of one role, and their tokens."""

    messages: int
    tokens: int


@dataclass(frozen=True, slots=True)
class TokenBreakdown:
    """The estimate of a history, split by role and by content kind.

    ``costs`` holds the per-message figures (``costs.messages[i]`` is message ``i``);
    ``by_kind`` has one entry per :data:`KINDS`, ``by_role`` one per role present
    (a top-level system prompt counts as ``"system (top-level)"``). Both sum to
    :attr:`total`.
    """

    format: str
    costs: TokenCosts
    by_role: Mapping[str, RoleTokens]
    by_kind: Mapping[str, int]

    @property
    def total(self) -> int:
        """The whole history's estimate."""
        return self.costs.total

    def largest(self, n: int) -> list[int]:
        """Indices of the ``n`` costliest messages, costliest first (ties: oldest first)."""
        check_int("n", n, minimum=0)
        costs = self.costs.messages
        return sorted(range(len(costs)), key=lambda i: (-costs[i], i))[:n]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able figures (what ``glyphfold context --json`` reports)."""
        return {
            "format": self.format,
            "tokens": self.total,
            "by_role": {
                r: {"messages": t.messages, "tokens": t.tokens} for r, t in self.by_role.items()
            },
            "by_kind": dict(self.by_kind),
        }


def token_breakdown(
    history: WireHistory | History,
    *,
    profile: str | Profile = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    format: FormatArg = "auto",
) -> TokenBreakdown:
    """Where the tokens of ``history`` (wire or canonical) go; see :class:`TokenBreakdown`.

    ``profile``, ``counter`` and ``image_policy`` price as
    :func:`~glyphfold.estimate_history_tokens` does (docs/budget.md).
    """
    h, _ = coerce(history, format=format, plain=OPENAI)  # plain text prices alike
    prof = get_profile(profile)
    costs = token_costs(h, profile=prof, counter=counter, image_policy=image_policy)
    return TokenBreakdown(
        format=h.format,
        costs=costs,
        by_role=MappingProxyType(_by_role(h, costs)),
        by_kind=MappingProxyType(_by_kind(h, costs, prof, counter)),
    )


def _by_role(h: History, costs: TokenCosts) -> dict[str, RoleTokens]:
    counts: dict[str, list[int]] = {}
    for m, c in zip(h.messages, costs.messages, strict=True):
        r = counts.setdefault(m.role, [0, 0])
        r[0] += 1
        r[1] += c
    if costs.system:
        counts[SYSTEM_TOP_LEVEL] = [1, costs.system]
    if costs.envelope:
        counts[TOOLS_TOP_LEVEL] = [1, costs.envelope]
    return {role: RoleTokens(n, t) for role, (n, t) in sorted(counts.items())}


def _by_kind(
    h: History, costs: TokenCosts, profile: Profile, counter: TokenCounter | None
) -> dict[str, int]:
    """Tokens per content kind, priced the way the total prices each message (rows add up)."""
    kinds = dict.fromkeys(KINDS, 0)
    for m, cost in zip(h.messages, costs.messages, strict=True):
        parts = dict.fromkeys(KINDS[:4], 0)
        for b in m.blocks:
            for kind, piece in _pieces(b):
                parts[kind] += _block_tokens(m.role, piece, profile, counter)
        # whatever the per-block figures miss (rounding, bytes vs chars of old results,
        # images the policy does not price) is settled against the message's real cost
        body = max(cost - FRAMING_TOKENS, 0)
        unpriced = sum(parts.values()) - body
        if unpriced > 0:
            take = min(unpriced, parts["images"])
            parts["images"] -= take
            unpriced -= take
        biggest = max(parts, key=lambda k: parts[k])
        parts[biggest] -= unpriced
        for k, v in parts.items():
            kinds[k] += v
        kinds["framing"] += cost - body
    kinds["text"] += costs.system  # the top-level system prompt
    kinds["tool schemas"] += costs.envelope
    return kinds


def _pieces(b: Block) -> list[tuple[str, Block]]:
    """The kind(s) a block counts as: a tool result's images count as images."""
    if isinstance(b, ToolResult):
        text_only = dataclasses.replace(
            b, content=tuple(c for c in b.content if not isinstance(c, Image))
        )
        return [("tool results", text_only)] + [
            ("images", c) for c in b.content if isinstance(c, Image)
        ]
    if isinstance(b, ToolCall):
        return [("tool calls", b)]
    if isinstance(b, Image):
        return [("images", b)]
    return [("text", b)]


def _block_tokens(role: str, block: Block, profile: Profile, counter: TokenCounter | None) -> int:
    one = Message(role, (block,))
    n = estimate_message_tokens(
        one, images_sent=True, tool_results_by_bytes=False, profile=profile, counter=counter
    )
    return n - FRAMING_TOKENS
