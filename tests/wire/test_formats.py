"""Responses, Gemini and Bedrock histories: detected, lossless, compacted end to end.

Each format's output is checked the way its provider would: glyphfold's rules
(validate_history) and the provider SDK's own request building against a mock
transport (nothing is sent). SPEC §2.5 (unchanged -> same objects), §5.2-5.3.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json

import pytest
from sdk_mocks import send_bedrock, send_gemini, send_responses
from wire_samples import BUILDERS

import glyphfold
from glyphfold.compaction.history.messages import detect_format, to_canonical, to_wire
from glyphfold.compaction.history.validate import find_violations

KEYS = {"responses": "input", "gemini": "contents", "bedrock": "messages"}
PROFILES = {"responses": "openai", "gemini": "gemini-2", "bedrock": "anthropic"}
SEND = {"responses": send_responses, "gemini": send_gemini, "bedrock": send_bedrock}
FMTS = tuple(BUILDERS)
FIRST = 6_000  # a budget that elision alone cannot reach


@pytest.fixture(scope="module")
def bodies():
    return {fmt: build(turns=10, chars=9000) for fmt, build in BUILDERS.items()}


@pytest.fixture(params=FMTS)
def fmt(request):
    return request.param


def _clean(body):
    """The body as the provider takes it (glyphfold's x_glyphfold keys removed)."""
    return glyphfold.provider_messages(body)


def _without_unknown_items(body):
    # the sample's deliberately unknown Responses item type would be refused by any SDK
    out = dict(body)
    out["input"] = [i for i in body["input"] if i.get("type") != "future_item"]
    return out


def _sendable(fmt, body):
    body = _clean(body)
    return _without_unknown_items(body) if fmt == "responses" else body


def test_detected_from_envelope_and_from_the_list_alone(fmt, bodies):
    body = bodies[fmt]
    assert detect_format(body) == fmt
    assert detect_format(body[KEYS[fmt]]) == fmt
    assert to_canonical(body[KEYS[fmt]]).format == fmt


def test_unchanged_history_is_the_same_object(fmt, bodies):
    body = bodies[fmt]
    h = to_canonical(body)
    assert to_wire(h) is body
    result = glyphfold.shake(body, dry_run=True)
    assert result.messages is body


def test_rebuilt_from_blocks_is_lossless(fmt, bodies):
    """Every message re-serialised from its blocks gives the input back, bytes included."""
    body = bodies[fmt]
    before = copy.deepcopy(body)
    h = to_canonical(body)
    rebuilt = to_wire(h.replace_messages([dataclasses.replace(m) for m in h.messages]))
    assert rebuilt == before
    assert rebuilt is not body
    assert body == before  # never mutated


def test_the_provider_sdk_takes_the_input(fmt, bodies):
    sent = SEND[fmt](_sendable(fmt, bodies[fmt]))
    assert sent  # the SDK validated and serialised it


@pytest.fixture(scope="module")
def compacted(bodies):
    out = {}
    for fmt, body in bodies.items():
        first = glyphfold.compact(body, budget=FIRST, profile=PROFILES[fmt])
        out[fmt] = first
    return out


def test_compacts_end_to_end(fmt, bodies, compacted):
    body = bodies[fmt]
    before = copy.deepcopy(body)
    r = compacted[fmt]
    assert r.tokens_before > FIRST >= r.tokens_after
    assert "snapshot" in [e.rung for e in r.ledger]
    assert r.pages
    out = r.messages
    assert isinstance(out, dict) and detect_format(out) == fmt
    assert find_violations(out) == []
    assert body == before
    # the untouched envelope keys and the system prompt survive
    for k, v in body.items():
        if k != KEYS[fmt]:
            assert out[k] == v


def _images_in(sent) -> list[bytes]:
    """Every base64 image payload of a request body, decoded (standard or URL-safe)."""
    out = []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str) and len(x) > 200:
            payload = x.partition("base64,")[2] or x
            alt = b"-_" if ("-" in payload or "_" in payload) else None
            try:
                raw = base64.b64decode(payload, altchars=alt, validate=True)
            except ValueError:
                return
            if raw.startswith(b"\x89PNG"):
                out.append(raw)

    walk(sent)
    return out


def test_snapshot_serialises_validly_for_the_provider_sdk(fmt, compacted):
    out = compacted[fmt].messages
    sent = SEND[fmt](_sendable(fmt, out))
    assert "x_glyphfold" not in json.dumps(sent)
    # the pages reach the wire encoded once (boto3 got bytes, not base64 text)
    images = _images_in(sent)
    for page in compacted[fmt].pages:
        assert page.png in images


def test_second_pass_rerenders_from_source(fmt, bodies):
    """SPEC §5.3: the next pass unfolds the old snapshot's source text, never its pixels."""
    # snapshots only, to half the size: the first pass keeps several verbatim tail steps,
    # which the second pass images together with the first pass's snapshot
    body = bodies[fmt]
    half = glyphfold.estimate_history_tokens(body) // 2
    # one snapshot per pass: the user messages imaged with the rest (SPEC §5.9 keeps them
    # text by default, which splits the pages around each of them)
    one = glyphfold.LadderConfig(snapshot=glyphfold.SnapshotConfig(keep_user_text=False))
    first = glyphfold.compact(
        body, budget=half, profile=PROFILES[fmt], rungs=["snapshot"], config=one
    )
    again = first.tokens_after * 2 // 3
    # a merging pass (SPEC §5.10: blocks stay frozen unless merged)
    second = glyphfold.compact(
        first.messages,
        budget=again,
        profile=PROFILES[fmt],
        rungs=["snapshot"],
        config=glyphfold.LadderConfig(
            freeze_blocks=False, snapshot=glyphfold.SnapshotConfig(keep_user_text=False)
        ),
    )
    snap = [e for e in second.ledger if e.rung == "snapshot"]
    assert snap, [(e.rung, e.note) for e in second.ledger]
    details = [r.detail for r in snap[0].removed]
    assert any("re-rendered from its source" in d for d in details)
    h1 = to_canonical(first.messages)
    h2 = to_canonical(second.messages)

    def sources(h):
        return [
            m.raw["x_glyphfold"]["source"]
            for m in h.messages
            if m.raw is not None and (m.raw.get("x_glyphfold") or {}).get("kind") == "snapshot"
        ]

    # real user messages of the middle stay text between snapshots (SPEC §5.9): one
    # snapshot per run of imaged steps, in both passes
    old, new = sources(h1), sources(h2)
    assert old and new
    assert all(o.strip()[-200:] in "\n".join(new) for o in old)
    assert find_violations(second.messages) == []
    SEND[fmt](_sendable(fmt, second.messages))


def test_compaction_is_byte_identical_for_the_same_input(fmt, bodies, compacted):
    again = glyphfold.compact(copy.deepcopy(bodies[fmt]), budget=FIRST, profile=PROFILES[fmt])
    assert [p.png for p in again.pages] == [p.png for p in compacted[fmt].pages]
    assert _clean(again.messages) == _clean(compacted[fmt].messages)


def test_reactive_recovery_end_to_end(fmt, bodies):
    """SPEC §3.6: after an overflow, two thirds of the estimate, model-free, still valid."""
    body = bodies[fmt]
    err = ValueError("prompt is too long: 210000 tokens > 200000 maximum")
    r = glyphfold.recover(body, error=err, profile=PROFILES[fmt])
    assert r.tokens_after <= r.tokens_before * 2 // 3
    assert find_violations(r.messages) == []
    SEND[fmt](_sendable(fmt, r.messages))


def test_the_estimate_prices_each_byte_once(fmt, bodies):
    """Keys a wire dict sends are priced, but never twice (a result's output is its text)."""
    from glyphfold.compaction.history.convert import convert_history

    body = bodies[fmt]
    if fmt == "responses":  # MCP calls have no Chat Completions counterpart: leave them out
        body = {**body, "input": [i for i in body["input"] if i.get("type") != "mcp_call"]}
    as_chat = convert_history(body, to="openai")  # the same text, images and calls
    own, chat = glyphfold.estimate_history_tokens(body), glyphfold.estimate_history_tokens(as_chat)
    assert chat * 0.9 <= own <= chat * 1.15, (own, chat)


def test_a_middle_of_only_the_last_snapshot_compacts_again(bodies):
    """The second pass's middle can be the first pass's snapshot and its acknowledgement."""
    body = bodies["responses"]
    first = glyphfold.compact(body, budget=14_000, profile="openai", rungs=["snapshot"])
    second = glyphfold.compact(first.messages, budget=9_000, profile="openai", rungs=["snapshot"])
    assert second.tokens_after <= 9_000
    assert find_violations(second.messages) == []
