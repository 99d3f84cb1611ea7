"""Resume: the most recent messages root -> tip that fit a budget (SPEC §6.2, §2.4).

Stored per-message estimates pick the cut without reading old payloads; the
history core's position-aware estimate then has the last word on the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from glyphfold.checks import check_int
from glyphfold.compaction.history.tokens import TokenCounter, estimate_history_tokens
from glyphfold.compaction.store import canon
from glyphfold.compaction.store import conversations as convs
from glyphfold.compaction.store.backend import Tx
from glyphfold.compaction.store.conversations import Ctx
from glyphfold.compaction.store.rows import loads_many, wire
from glyphfold.compaction.store.tree import path_rows

_CHUNK = 500  # ids per IN (...) query: stay under SQLite's bound-parameter limit


def resume(
    ctx: Ctx,
    conversation: str,
    *,
    budget: int,
    counter: TokenCounter | None,
    profile: Any,
) -> list[dict[str, Any]] | dict[str, Any]:
    """The wire history to send after a restart (see :meth:`Store.resume`)."""
    check_int("budget", budget, minimum=0, unit="tokens")
    with ctx.backend.read() as tx:
        conv = convs.get(ctx, tx, conversation)
        meta = path_rows(tx, conversation, conv.tip_id, columns="id, role, turn_start, tokens")
        lead, keep_from = resume_cut(meta, budget, lambda ids: _tool_ids(tx, ids))
        ids = [r[0] for r in meta[:lead]] + [r[0] for r in meta[keep_from:]]
        payloads = _payloads(tx, ids)
        system = convs.system(tx, conversation)
    ctx.seen[conversation] = conv.tip_id
    out = wire(conv.format, system, payloads)
    # the stored estimates are per message; the position-aware estimate decides
    starts = [i for i in range(keep_from, len(meta)) if meta[i][2]]
    for start in starts[1:]:
        if estimate_history_tokens(out, counter=counter, profile=profile) <= budget:
            break
        kept = payloads[:lead] + payloads[lead + start - keep_from :]
        calls, results = _tool_ids_of(kept, conv.format)
        if not results <= calls:
            continue  # this cut would orphan a tool result: try the next turn
        out = wire(conv.format, system, kept)
    return out


def resume_cut(
    meta: Sequence[tuple[Any, ...]],
    budget: int,
    tool_ids: Callable[[Sequence[int]], tuple[set[str], set[str]]],
) -> tuple[int, int]:
    """(end of the kept prefix, start of the kept suffix) over the path's metadata rows.

    Rows are ``(id, role, turn_start, tokens)``; ``tool_ids(ids)`` returns the
    tool-call and tool-result ids of those messages (fetched only for the kept
    part, which is usually small).
    """
    n = len(meta)
    lead = 0
    while lead < n and meta[lead][1] in ("system", "developer"):
        lead += 1
    starts = [i for i in range(lead, n) if meta[i][2]]
    if not starts:
        return lead, lead  # one turn (or none): keep everything
    total = sum(r[3] for r in meta[:lead])
    # candidate cuts newest first; the newest turn is always kept (SPEC §2.4)
    keep_from = starts[-1]
    total += sum(r[3] for r in meta[keep_from:])
    for s in reversed(starts[:-1]):
        extra = sum(r[3] for r in meta[s:keep_from])
        if total + extra > budget:
            break
        total += extra
        keep_from = s
    if keep_from == starts[0] and total + sum(r[3] for r in meta[lead:keep_from]) <= budget:
        keep_from = lead  # everything fits: keep any pre-turn messages too
    # never start on an orphan: widen to an earlier turn until every result's call is kept
    while keep_from > lead:
        calls, results = tool_ids([r[0] for r in meta[keep_from:]])
        if results <= calls:
            break
        earlier = [s for s in starts if s < keep_from]
        keep_from = earlier[-1] if earlier else lead
    return lead, keep_from


def _tool_ids_of(payloads: list[dict[str, Any]], fmt: str | None) -> tuple[set[str], set[str]]:
    canons = canon.canon_messages(payloads, format=fmt)
    return (
        {c for m in canons for c in m.tool_call_ids},
        {r for m in canons for r in m.tool_result_ids},
    )


def _tool_ids(tx: Tx, ids: Sequence[int]) -> tuple[set[str], set[str]]:
    """Tool-call ids and tool-result ids carried by the messages ``ids``."""
    calls: set[str] = set()
    results: set[str] = set()
    for i in range(0, len(ids), _CHUNK):
        part = list(ids[i : i + _CHUNK])
        marks = ", ".join("?" * len(part))
        for c, r in tx.all(
            "SELECT tool_call_ids, tool_result_ids FROM messages "
            f"WHERE id IN ({marks}) AND (tool_call_ids <> '[]' OR tool_result_ids <> '[]')",
            part,
        ):
            calls.update(json.loads(c))
            results.update(json.loads(r))
    return calls, results


def _payloads(tx: Tx, ids: list[int]) -> list[dict[str, Any]]:
    out: dict[int, str] = {}
    for i in range(0, len(ids), _CHUNK):
        part = ids[i : i + _CHUNK]
        marks = ", ".join("?" * len(part))
        out.update(tx.all(f"SELECT id, payload FROM messages WHERE id IN ({marks})", part))
    return loads_many([out[i] for i in ids])
