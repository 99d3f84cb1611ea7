"""A tool loop through the proxy: compact once, then append (issue 19, SPEC §5.10).

Each conversation's compactor is found from the request itself (its prefix, compared
without cache_control markers); most requests append to the previous compacted
request byte for byte, so the provider's prompt cache keeps hitting.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading

import httpx
import pytest

from tests.serve.histories import anthropic_history, openai_history

WINDOW = 20_000
MODEL = "fake-model"


def _post(srv, path: str, body: dict) -> httpx.Response:
    headers = {"authorization": "Bearer sk-test", "x-api-key": "sk-ant-test"}
    headers["anthropic-version"] = "2023-06-01"
    return httpx.post(srv.url + path, json=body, headers=headers, timeout=120)


def _shared_prefix(a: bytes, b: bytes) -> float:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n / len(b)


def test_openai_loop_appends_between_compactions(serve, fake):
    srv = serve(windows={MODEL: WINDOW})
    full = openai_history(40, chars=4_000)
    caches = []
    for n in range(20, len(full) + 1, 2):
        r = _post(srv, "/v1/chat/completions", {"model": MODEL, "messages": full[:n]})
        assert r.status_code == 200
        caches.append(r.headers["x-glyphfold-cache"])
    assert "compact" in caches and caches.count("append") > caches.count("compact")
    bodies = [json.loads(r.body)["messages"] for r in fake.accepted()]
    for prev, cur, how in zip(bodies, bodies[1:], caches[1:], strict=False):
        if how == "append":
            assert json.dumps(cur[: len(prev)]) == json.dumps(prev)  # byte for byte
    assert all(r.tokens <= WINDOW for r in fake.accepted())
    metrics = httpx.get(srv.url + "/metrics").text
    assert 'cache="append"' in metrics and 'cache="compact"' in metrics


def test_anthropic_moving_markers_still_append(serve, fake):
    """A harness that puts cache_control on its newest message every turn (Claude Code)."""
    srv = serve(windows={MODEL: WINDOW})
    h = anthropic_history(40, chars=4_000)
    caches = []
    for n in range(21, len(h["messages"]) + 1, 2):
        msgs = copy.deepcopy(h["messages"][:n])
        msgs[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        body = {"model": MODEL, "max_tokens": 256, "system": h["system"], "messages": msgs}
        r = _post(srv, "/v1/messages", body)
        assert r.status_code == 200, r.text
        caches.append(r.headers["x-glyphfold-cache"])
    assert caches.count("append") >= len(caches) // 2, caches
    raws = [r.body for r in fake.accepted()]
    shares = [_shared_prefix(a, b) for a, b in itertools.pairwise(raws)]
    appended = [s for s, how in zip(shares, caches[1:], strict=False) if how == "append"]
    assert min(appended) > 0.8
    for r in fake.accepted():
        assert r.body.count(b"cache_control") <= 4


def test_interleaved_conversations_keep_their_own_compactor(serve, fake):
    srv = serve(windows={MODEL: WINDOW})
    a = openai_history(36, chars=4_000, seed=1)
    b = openai_history(36, chars=4_000, seed=2)
    results: dict[str, list[str]] = {"a": [], "b": []}

    def run(name: str, full: list) -> None:
        for n in range(40, len(full) + 1, 2):
            r = _post(srv, "/v1/chat/completions", {"model": MODEL, "messages": full[:n]})
            assert r.status_code == 200
            results[name].append(r.headers["x-glyphfold-cache"])

    threads = [threading.Thread(target=run, args=x) for x in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in "ab":
        assert "compact" in results[name] and "append" in results[name], results[name]
    assert len(srv.proxy.cache) == 2


@pytest.mark.parametrize("max_bytes", [1])
def test_conversations_are_bounded(serve, fake, max_bytes):
    srv = serve(windows={MODEL: WINDOW}, cache_bytes=max_bytes)
    full = openai_history(30, chars=4_000)
    r = _post(srv, "/v1/chat/completions", {"model": MODEL, "messages": full})
    assert r.headers["x-glyphfold-cache"] == "compact"
    assert len(srv.proxy.cache) == 0  # larger than the whole cache: not kept
    r = _post(srv, "/v1/chat/completions", {"model": MODEL, "messages": full})
    assert r.headers["x-glyphfold-cache"] == "compact"
