"""Every wire format, the same checks (LangGraph-conformance style): one row in
``WIRE_FORMATS`` is all a format needs for eviction, trimming, cache breakpoints, the store
and the proxy's recorder to treat it right (issue 24).

The formats come from the registry, never a hand-written list: a new row is checked here
the moment it exists.
"""

from __future__ import annotations

import json

import pytest

import glyphfold
from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.evict import EvictingHistory
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.trim import trim_to_recent_turns
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.history.wire import WIRE_FORMATS, split_envelope, wire_format
from glyphfold.serve.eventlog import EventLog
from glyphfold.serve.recorder import Recorder

FORMATS = tuple(WIRE_FORMATS)
SYSTEM = "You are a careful coding agent."


def _openai_loop(turns: int) -> list[dict]:
    """An agent run: each turn a request, two tool steps, a text step, then a reply."""
    out: list[dict] = []
    for t in range(turns):
        out.append({"role": "user", "content": f"Task {t}: fix the failing test number {t}."})
        for s in range(2):
            cid = f"call_{t}_{s}"
            args = json.dumps({"path": f"src/mod_{t}_{s}.py"})
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": args},
                        }
                    ],
                }
            )
            out.append({"role": "tool", "tool_call_id": cid, "content": f"line {s}\n" * 40})
        out.append({"role": "assistant", "content": f"Turn {t}: the test passes now."})
    return out


def _body(fmt: str, turns: int = 4) -> object:
    """The loop in ``fmt``, in its envelope with a system prompt where the format has one."""
    plain = [{"role": "system", "content": SYSTEM}, *_openai_loop(turns)]
    body = convert_history(plain, to=fmt)
    row = wire_format(fmt)
    if row.system_key is not None and isinstance(body, list):
        # a request body keeps its system prompt under the format's key (Responses:
        # "instructions"), not as an item of the list
        rest = [m for m in body if m.get("role") != "system"]
        body = {row.system_key: SYSTEM, row.messages_key: rest}
    return body


def _messages(fmt: str, turns: int = 4) -> list:
    """The loop's messages without the system prompt (what a FIFO holds)."""
    env = split_envelope(_body(fmt, turns))
    return [m for m in env.messages if not (isinstance(m, dict) and m.get("role") == "system")]


def _violations(fmt: str, messages: list) -> list:
    h = to_canonical(messages, format=fmt)
    return [(v.index, v.rule) for v in find_violations(h, provider=fmt)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_loop_is_valid_in_every_format(fmt):
    body = _body(fmt)
    assert glyphfold.detect_format(body) == fmt
    assert _violations(fmt, _messages(fmt)) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_eviction_leaves_a_history_the_provider_accepts(fmt):
    """Bedrock eviction cut at an assistant message (first-user); Gemini before a call."""
    messages = _messages(fmt)
    total = EvictingHistory(messages, format=fmt).total_tokens
    for limit in range(total // 20, total, max(1, total // 40)):
        h = EvictingHistory(messages, format=fmt, max_safe_tokens=limit)
        h.evict_old_messages()
        kept = h.messages
        assert kept, f"limit {limit}: everything was evicted"
        assert _violations(fmt, kept) == [], f"limit {limit}: cut at {len(messages) - len(kept)}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_trimming_leaves_a_history_the_provider_accepts(fmt):
    body = _body(fmt, turns=6)
    row = wire_format(fmt)
    out = trim_to_recent_turns(body, 400)
    h = to_canonical(out)
    assert h.format == fmt
    assert [(v.index, v.rule) for v in find_violations(h, provider=fmt)] == []
    crumb_roles = [m.role for m in h.messages if "omitted" in m.text.lower()]
    assert crumb_roles, "the trim left no breadcrumb"
    assert crumb_roles[0] == ("system" if row.system_in_messages else "user")


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_store_imports_and_exports_every_envelope(fmt):
    """import_history understood only the Anthropic envelope (issue 24)."""
    body = _body(fmt)
    with glyphfold.open_store("sqlite:///:memory:") as store:
        conv = store.import_history(body)
        assert store.export(conv) == body
        assert len(store.path(conv)) == len(split_envelope(body).messages)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_recorder_commits_every_envelope(fmt, tmp_path):
    """The proxy's recorder took the system prompt from Anthropic bodies only."""
    body = _body(fmt, turns=3)
    env = split_envelope(body)
    rec = Recorder(f"sqlite:///{tmp_path / 'rec.db'}", EventLog(None))
    try:
        store = rec._open()
        rec._record("anthropic", "k", body, None)  # commits every complete turn
        conv = store.conversations()[0].id
        exported = store.export(conv)
        kept = split_envelope(exported)
        assert kept.system_key == env.system_key
        assert kept.system == env.system
        assert kept.messages == env.messages[: len(kept.messages)]
        assert len(kept.messages) > len(env.messages) // 2  # all but the newest turn
    finally:
        rec._close()
        rec._pool.shutdown(wait=True)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_cache_breakpoint_is_written_the_formats_way(fmt):
    row = wire_format(fmt)
    body = _body(fmt, turns=8)
    cfg = glyphfold.LadderConfig(tail_tokens=0)
    res = glyphfold.compact(body, budget=1500, config=cfg, rungs=["snapshot"])
    text = json.dumps(res.messages, default=str)
    if row.cache_marker is None or row.cache_marker.explicit_only:
        # no marker where the format takes none, or uses its automatic prefix caching
        assert all(
            f'"{r.cache_marker.key}"' not in text for r in WIRE_FORMATS.values() if r.cache_marker
        )
    else:
        assert f'"{row.cache_marker.key}"' in text
