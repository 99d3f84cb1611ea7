"""The retention benchmark's accounting (issue 20): what a budget holds, and the check that
no words are cut while their pages would fit.

``benchmarks/bench_retention.py`` reports, per budget, the share of the target each part
of what glyphfold sends holds (the fixed text every method sends, other text, the
snapshots' own text, pages, unused) and flags a lossy snapshot that leaves more room
unused than its fit rounds allow. These tests pin that accounting on a synthetic
session, text only (no OCR engine).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from glyphfold.compaction.history.messages import coerce
from glyphfold.compaction.history.steps import split_regions
from glyphfold.compaction.history.tokens import estimate_history_tokens, token_costs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retention import (  # noqa: E402
    ROOM,
    Reader,
    drop_middle,
    fact_ceiling,
    middle_facts,
    run_method,
)

from tests.ladder.test_tight_budgets import plain_session  # noqa: E402


def test_the_parts_of_a_tight_budget_add_up_to_its_target():
    wire = plain_session(40)
    h = coerce(wire)[0]
    facts = middle_facts(h)
    assert facts
    budget = estimate_history_tokens(wire) // 5
    out = run_method("glyphfold", wire, budget, Reader([], None), facts)
    assert out.fits and out.lossy and out.pages >= 1
    room = out.room
    assert sum(room[k] for k in ROOM) == budget  # every token of the target accounted for
    assert room["pages"] > 0 and room["snapshot_text"] > 0
    assert room["fixed"] + room["room"] == budget  # the room is what the fixed text leaves
    assert 0 < room["page_chars"] < room["middle_chars"]  # cut: the pages hold part of it
    # the cut pages fill the room: no words cut while their pages would fit (SPEC §5.6)
    assert out.cut_with_room == 0
    assert room["unused"] < 64


def test_no_room_accounting_for_the_other_methods():
    wire = plain_session(40)
    h = coerce(wire)[0]
    facts = middle_facts(h)
    budget = estimate_history_tokens(wire) // 2
    for method in ("no-snapshot", "drop-middle"):
        out = run_method(method, wire, budget, Reader([], None), facts)
        assert out.fits and not out.room and out.pages == 0


def request_session(steps: int = 12) -> list[dict[str, Any]]:
    """A task, tool steps, a second task (the request), more tool steps, an answer."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Count the files in /etc."}]

    def step(k: int) -> None:
        cid = f"call_{k}"
        call = {"id": cid, "type": "function"}
        call["function"] = {"name": "bash", "arguments": f'{{"command": "ls -1 /etc/dir_{k}"}}'}
        msgs.append({"role": "assistant", "content": f"Listing dir_{k}.", "tool_calls": [call]})
        body = "\n".join(f"/etc/dir_{k}/file_{k}_{j}.conf" for j in range(8))
        msgs.append({"role": "tool", "tool_call_id": cid, "content": body})

    for k in range(steps):
        step(k)
    msgs.append({"role": "user", "content": "Now find the biggest file under /var/log instead."})
    for k in range(steps, 2 * steps):
        step(k)
    msgs.append({"role": "assistant", "content": "The biggest file is /var/log/syslog.1."})
    return msgs


def test_drop_middle_keeps_the_request_as_every_method_must():
    """SPEC §5.5: the newest real user message reaches the model as text. drop-middle
    dropped it when the budget had room for one more step without it (adp_agenttuning_os_3
    at 50%: 4 facts bought with the task's words), a baseline no compliant method can be."""
    wire = request_session()
    h = coerce(wire, format="openai")[0]
    costs = token_costs(h, image_policy="all")
    reg = split_regions(h, costs=costs.messages, tail_tokens=0)
    (req,) = reg.request
    assert reg.head_end <= req < reg.tail_start  # the request lies in the middle
    # room for the head, the newest step and one more step, but not the request too
    fixed = sum(costs.messages[: reg.head_end]) + sum(costs.messages[reg.tail_start :])
    newest = reg.steps[-2]
    budget = fixed + sum(costs.messages[newest.start : newest.end]) + 1
    out, used = drop_middle(h, budget)
    texts = [m.text for m in out.messages]
    assert "Now find the biggest file under /var/log instead." in texts
    assert used <= budget or out.messages[-1] is h.messages[-1]
    assert used == token_costs(out, image_policy="all").total
    # with room, the newest steps follow it in order, the request before them
    out, used = drop_middle(h, fixed + costs.messages[req] + 400)
    assert used <= fixed + costs.messages[req] + 400
    idx = [i for i, m in enumerate(h.messages) if any(m is k for k in out.messages)]
    assert req in idx and idx == sorted(idx) and len(idx) > reg.head_end + 2


def test_the_fact_ceiling_is_the_newest_suffix_that_fits_as_pages():
    """issue 20: the facts a snapshot can send at a target under SPEC §5.5/§5.9 (the
    fixed text kept, words cut oldest first, the whole room as densest pages)."""
    wire = plain_session(40)
    h = coerce(wire)[0]
    facts = middle_facts(h)
    est = estimate_history_tokens(wire)
    tight = fact_ceiling(h, est // 5, facts)
    assert tight["facts"] == len(facts)
    assert tight["reach"] >= 0.95 * len(facts)  # the matching finds the facts in the text
    assert 0 < tight["ceiling"] < tight["reach"]
    assert 0 < tight["suffix_chars"] < tight["middle_chars"]
    assert tight["ceiling_level"] >= tight["ceiling"]  # level 0 is one of the levels tried
    wider = fact_ceiling(h, est // 2, facts)
    assert wider["room"] > tight["room"]
    assert wider["suffix_chars"] > tight["suffix_chars"]
    assert wider["ceiling"] >= tight["ceiling"]
    whole = fact_ceiling(h, est, facts)  # everything fits: the ceiling is the reach
    assert whole["suffix_chars"] == whole["middle_chars"]
    assert whole["ceiling"] == whole["reach"]
