"""Overflow detection and learned windows (issue 21 items 2-3; SPEC §3.2, §3.6): only the
upstream's own error is an overflow, and what it teaches is bounded, per upstream, and expires."""

from __future__ import annotations

import httpx

from glyphfold.serve.relay import first_event_error
from glyphfold.serve.windows import LearnedWindows, ModelResolution

CHAT = "/v1/chat/completions"


def _post(srv, body, fault=None, stream=False):
    headers = {"authorization": "Bearer sk-w"}
    if fault:
        headers["x-fake-fault"] = fault
    if not stream:
        return httpx.post(srv.url + CHAT, json=body, headers=headers, timeout=30)
    with httpx.stream(
        "POST", srv.url + CHAT, json={**body, "stream": True}, headers=headers, timeout=30
    ) as r:
        r.read()
        return r


def test_model_text_quoting_an_overflow_in_a_200_stream_is_passed_through(serve, fake):
    srv = serve()
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "quote an error"}]}
    r = _post(srv, body, "overflow-text", stream=True)
    assert r.status_code == 200
    events = [e for e in r.content.split(b"\n\n") if e.startswith(b"data: ")]
    assert len(events) == 22  # 20 deltas, the finish chunk, [DONE]: nothing cut
    assert b"maximum context length is 8192 tokens" in events[0]
    assert "x-glyphfold-recovery" not in r.headers
    assert len(fake.received) == 1  # sent once, billed once
    assert srv.proxy.learned.window(fake.url, "gpt-4o") is None  # nothing learned from it


def test_only_an_error_event_or_error_object_is_a_stream_error():
    quoted = (
        b'data: {"choices":[{"delta":{"content":"maximum context length is 8192 tokens"}}]}\n\n'
    )
    assert first_event_error(quoted) is None
    assert first_event_error(b'data: {"error": {"message": "too long"}}\n\n') == {
        "error": {"message": "too long"}
    }
    named = b'event: error\ndata: {"type": "error", "error": {"message": "x"}}\n\n'
    assert first_event_error(named)["error"] == {"message": "x"}
    assert first_event_error(b'{"error": {"message": "bare"}}') == {"error": {"message": "bare"}}
    assert (
        first_event_error(b"event: message_start\ndata: {}\n\nevent: error\ndata: {}\n\n") is None
    )


def test_a_tiny_or_contradicted_overflow_teaches_nothing(serve, fake):
    srv = serve()
    history = [{"role": "user", "content": "word " * 8000}]  # ~10k tokens, accepted
    assert _post(srv, {"model": "mystery", "messages": history}).status_code == 200
    # a 413-style overflow on a small request, and one stating less than what just succeeded
    small = {"model": "mystery", "messages": [{"role": "user", "content": "hi"}]}
    assert _post(srv, small, "overflow-at:5").status_code == 400
    assert _post(srv, small, "overflow-at:3000").status_code == 400
    assert srv.proxy.learned.window(fake.url, "mystery") is None
    r = _post(srv, {"model": "mystery", "messages": history})
    assert r.status_code == 200 and r.headers["x-glyphfold-window"].startswith("unknown")


def test_a_learned_window_never_overrides_a_configured_one(serve, fake):
    srv = serve(windows={"gpt-4o": 20_000})
    small = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert _post(srv, small, "overflow-at:8192").status_code == 400
    r = _post(srv, small)
    assert r.headers["x-glyphfold-window"] == "20000 (config)"


def _res(model="gpt-4o", window=128_000, source="table"):
    return ModelResolution(model, window, "openai-tile", source)


def test_learned_windows_are_per_upstream_and_expire():
    now = [0.0]
    learned = LearnedWindows(ttl_s=60, clock=lambda: now[0])
    assert learned.learn("http://a", "gpt-4o", 50_000)
    assert learned.apply("http://a", _res()).window == 50_000
    assert learned.apply("http://b", _res()).window == 128_000  # another upstream
    assert learned.apply("http://a", _res(source="config")).source == "config"
    assert not learned.learn("http://a", "gpt-4o", 5)  # below any real window
    learned.succeeded("http://a", "m", 40_000)
    assert not learned.learn("http://a", "m", 30_000)  # a 40k request went through
    assert learned.learn("http://a", "m", 45_000)
    learned.succeeded("http://a", "m", 46_000)  # contradicted: forgotten
    assert learned.window("http://a", "m") is None
    now[0] = 61.0
    assert learned.window("http://a", "gpt-4o") is None  # expired
    assert learned.apply("http://a", _res()).source == "table"
