"""Reactive recovery through the proxy (SPEC §3.6, §5.1): overflow -> recover() -> retry.

The proxy does not know ``mystery-model`` (its budget falls back to 32,000 x 0.9,
SPEC §3.1-3.2) while the fake's window is 20,000: a ~26k-token request is sent
as it is, the fake answers with the provider's real overflow error, and the proxy
recovers to two thirds and retries, bounded.
"""

from __future__ import annotations

import json

import pytest

from tests.serve.histories import anthropic_history, openai_history

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

UNKNOWN = "mystery-model"


def _oa(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-test", max_retries=0)


def _an(srv):
    return anthropic.Anthropic(base_url=srv.url, api_key="sk-ant-test", max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_overflow_is_recovered_and_retried(serve, fake, stream):
    srv = serve()
    history = openai_history(26, chars=4_000)  # ~26k tokens: under 28,800, over 20,000
    client = _oa(srv)
    if stream:
        with client.chat.completions.with_streaming_response.create(
            model=UNKNOWN, messages=history, stream=True
        ) as resp:
            text = "".join(c.choices[0].delta.content or "" for c in resp.parse() if c.choices)
            headers = resp.headers
    else:
        raw = client.chat.completions.with_raw_response.create(model=UNKNOWN, messages=history)
        text, headers = raw.parse().choices[0].message.content, raw.headers
    assert text.startswith("ok ")
    assert "overflow 1: recovered" in headers["x-glyphfold-recovery"]
    assert headers["x-glyphfold-cache"] == "recover"  # issue 19: not "none" (not compacted)
    # issue 24: says why and what to do (was "unknown (unknown)")
    assert headers["x-glyphfold-window"] == "unknown (not in the table; set --window MODEL=TOKENS)"
    first, second = fake.received
    assert not first.accepted and second.accepted
    assert second.tokens <= 2 / 3 * first.tokens + 200  # SPEC §3.6: two thirds


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_overflow_is_recovered_and_retried(serve, fake, stream):
    srv = serve()
    h = anthropic_history(26, chars=4_000)
    kw = dict(model=UNKNOWN, max_tokens=512, system=h["system"], messages=h["messages"])
    client = _an(srv)
    if stream:
        with client.messages.with_streaming_response.create(**kw, stream=True) as resp:
            headers = resp.headers
            body = resp.read().decode()
        assert "message_stop" in body
    else:
        raw = client.messages.with_raw_response.create(**kw)
        assert raw.parse().content[0].text.startswith("ok ")
        headers = raw.headers
    assert "recovered" in headers["x-glyphfold-recovery"]
    assert headers["x-glyphfold-cache"] == "recover"
    assert [r.accepted for r in fake.received] == [False, True]


def test_the_next_request_uses_the_window_the_upstream_stated(serve, fake):
    srv = serve()
    history = openai_history(26, chars=4_000)
    client = _oa(srv)
    client.chat.completions.create(model=UNKNOWN, messages=history)
    grown = [
        *history,
        {"role": "assistant", "content": "Read them all."},
        {"role": "user", "content": "Fix it now."},
    ]
    raw = client.chat.completions.with_raw_response.create(model=UNKNOWN, messages=grown)
    # the upstream said "maximum context length is 20000 tokens": the proxy now knows
    # this model's own window and compacts proactively
    assert raw.headers["x-glyphfold-window"] == "20000 (learned)"
    assert raw.headers["x-glyphfold-cache"] == "compact"
    assert "x-glyphfold-recovery" not in raw.headers
    assert [r.accepted for r in fake.received] == [False, True, True]


@pytest.mark.parametrize("retries", [1, 3])
def test_retries_are_bounded_then_the_providers_error_comes_back_unchanged(serve, fake, retries):
    srv = serve(max_retries=retries)
    fake.windows[UNKNOWN] = 500  # nothing a two-thirds cut can reach
    try:
        with pytest.raises(openai.BadRequestError) as err:
            _oa(srv).chat.completions.create(model=UNKNOWN, messages=openai_history(26))
    finally:
        fake.windows.pop(UNKNOWN)
    assert err.value.status_code == 400
    assert err.value.body["code"] == "context_length_exceeded"  # the fake's own body
    assert "maximum context length is 500 tokens" in err.value.body["message"]
    note = err.value.response.headers["x-glyphfold-recovery"]
    # each overflow is one recover() and one retry, until the retries run out or the
    # ladder cannot cut further (then it says why); never more sends than 1 + retries
    tries = note.count("recovered")
    assert 1 <= tries <= retries
    assert len(fake.received) == tries + 1
    assert (f"retries exhausted (max {retries})" in note) or ("recover failed" in note)
    if retries == 1:
        assert note.endswith("retries exhausted (max 1)")
    assert "x-glyphfold-error" not in err.value.response.headers  # the upstream's, not ours


def test_anthropic_exhausted_recovery_returns_anthropics_error(serve, fake):
    srv = serve()
    fake.windows[UNKNOWN] = 500
    try:
        with pytest.raises(anthropic.BadRequestError) as err:
            h = anthropic_history(26)
            _an(srv).messages.create(
                model=UNKNOWN, max_tokens=100, system=h["system"], messages=h["messages"]
            )
    finally:
        fake.windows.pop(UNKNOWN)
    assert err.value.body["error"]["message"].startswith("prompt is too long")
    assert err.value.body["request_id"] == "req_011CFakeOverflow"
    assert len(fake.received) == 2


@pytest.mark.parametrize("fault,status", [("500", 500), ("400", 400)])
def test_errors_that_are_not_overflows_are_never_retried(serve, fake, fault, status):
    srv = serve()
    with pytest.raises(openai.APIStatusError) as err:
        _oa(srv).chat.completions.create(
            model=UNKNOWN, messages=openai_history(26), extra_headers={"x-fake-fault": fault}
        )
    assert err.value.status_code == status
    assert len(fake.received) == 1
    assert "x-glyphfold-recovery" not in err.value.response.headers


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_overflow_as_the_first_stream_event_is_retried(serve, fake, provider):
    """A 200 stream whose first event is the overflow: no byte reached the client, so retry."""
    srv = serve()
    hdr = {"x-fake-fault": "overflow-event"}
    if provider == "openai":
        with _oa(srv).chat.completions.with_streaming_response.create(
            model=UNKNOWN, messages=openai_history(26), stream=True, extra_headers=hdr
        ) as resp:
            text = "".join(c.choices[0].delta.content or "" for c in resp.parse() if c.choices)
            headers = resp.headers
        assert text.startswith("ok ")
    else:
        h = anthropic_history(26)
        with _an(srv).messages.with_streaming_response.create(
            model=UNKNOWN,
            max_tokens=100,
            system=h["system"],
            messages=h["messages"],
            stream=True,
            extra_headers=hdr,
        ) as resp:
            body = resp.read().decode()
            headers = resp.headers
        assert "message_stop" in body and "prompt is too long" not in body
    assert "recovered" in headers["x-glyphfold-recovery"]
    assert len(fake.received) == 2


def test_recovery_counts_in_metrics(serve, fake):
    srv = serve()
    _oa(srv).chat.completions.create(model=UNKNOWN, messages=openai_history(26))
    import httpx

    text = httpx.get(srv.url + "/metrics").text
    assert (
        'glyphfold_serve_recoveries_total{endpoint="chat_completions",outcome="retried"} 1.0'
        in text
    )
    assert 'kind="reactive"' in text
    assert json.loads(httpx.get(srv.url + "/healthz").text)["status"] == "ok"
