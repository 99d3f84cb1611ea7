"""Prompt-cache breakpoints: kept markers survive, one lands on the snapshot, four at most."""

from __future__ import annotations

import copy
import json

import pytest
from sdk_mocks import ANTHROPIC_REPLY, Capture, anthropic_client, send_bedrock
from wire_samples import bedrock_history

import glyphfold
from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.validate import count_breakpoints, find_violations

EPHEMERAL = {"type": "ephemeral"}


def _mark(block):
    return {**block, "cache_control": dict(EPHEMERAL)}


@pytest.fixture(scope="module")
def anthropic_body():
    body = convert_history(bedrock_history(turns=10, chars=9000), to="anthropic")
    # the harness marked its two system blocks, the task (head) and the rolling tail
    body["system"] = [
        _mark({"type": "text", "text": body["system"]}),
        _mark({"type": "text", "text": "Project rules: keep the public API."}),
    ]
    msgs = body["messages"]
    for i in (0, -1):
        c = msgs[i]["content"]
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else c
        msgs[i]["content"] = [_mark(blocks[0]), *blocks[1:]]
    assert count_breakpoints(body, "cache_control") == 4
    return body


def _snapshot_message(messages):
    return next(m for m in messages if (m.get("x_glyphfold") or {}).get("kind") == "snapshot")


def test_one_breakpoint_on_the_snapshot_and_four_at_most(anthropic_body):
    before = copy.deepcopy(anthropic_body)
    r = glyphfold.compact(anthropic_body, budget=6_000)
    out = r.messages
    assert anthropic_body == before
    snap = _snapshot_message(out["messages"])
    assert snap["content"][-1]["cache_control"] == EPHEMERAL
    assert sum("cache_control" in b for b in snap["content"]) == 1
    assert count_breakpoints(out, "cache_control") == 4
    # the system prompt's and the tail's markers are kept; the oldest (the head's) gave way
    assert all(b["cache_control"] == EPHEMERAL for b in out["system"])
    assert out["messages"][-1]["content"][0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in out["messages"][0]["content"][0]
    assert find_violations(out) == []
    cap = Capture(ANTHROPIC_REPLY)
    request = {"model": "claude-test", "max_tokens": 256, **glyphfold.provider_messages(out)}
    anthropic_client(cap).messages.create(**request)
    assert cap.bodies[-1]["messages"][-1]["content"][0]["cache_control"] == EPHEMERAL


def test_the_cached_prefix_is_byte_identical_for_the_same_input(anthropic_body):
    a = glyphfold.provider_messages(glyphfold.compact(anthropic_body, budget=6_000).messages)
    b = glyphfold.provider_messages(
        glyphfold.compact(copy.deepcopy(anthropic_body), budget=6_000).messages
    )
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_no_breakpoint_when_the_system_prompt_holds_four(anthropic_body):
    body = copy.deepcopy(anthropic_body)
    body["system"] = [_mark({"type": "text", "text": f"rule {k}"}) for k in range(4)]
    for m in body["messages"]:
        if isinstance(m["content"], list):
            m["content"] = [
                {k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]
            ]
    out = glyphfold.compact(body, budget=6_000).messages
    snap = _snapshot_message(out["messages"])
    assert not any("cache_control" in b for b in snap["content"])
    assert count_breakpoints(out, "cache_control") == 4


def test_bedrock_cache_point_after_the_snapshot():
    body = bedrock_history(turns=10, chars=9000)
    r = glyphfold.compact(body, budget=6_000)
    out = r.messages
    snap = _snapshot_message(out["messages"])
    assert snap["content"][-1] == {"cachePoint": {"type": "default"}}
    assert count_breakpoints(out, "cachePoint") == 3  # system, the task, the snapshot
    assert out["messages"][0]["content"][1] == {"cachePoint": {"type": "default"}}
    send_bedrock(glyphfold.provider_messages(out))


def test_no_marker_where_the_provider_caches_by_itself():
    body = convert_history(bedrock_history(turns=10, chars=9000), to="openai")
    out = glyphfold.compact(body, budget=6_000, profile="openai").messages
    assert "cache_control" not in json.dumps(out)
