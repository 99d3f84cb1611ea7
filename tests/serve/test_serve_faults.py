"""Faults: the upstream down, slow, killed mid-stream or answering garbage; the client
leaving mid-stream; bodies over the limit; routes that do not exist. Every failure is
an error in the provider's own shape, and the proxy stays up with nothing leaked."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from tests.serve.histories import anthropic_history

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

MSGS = [{"role": "user", "content": "hello"}]


def _oa(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-test", max_retries=0)


def _an(srv):
    return anthropic.Anthropic(base_url=srv.url, api_key="sk-ant-test", max_retries=0)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(srv) -> bool:
    return httpx.get(srv.url + "/healthz").json()["status"] == "ok"


def _idle(srv) -> bool:
    """No stream in flight and every pooled upstream connection idle or closed."""
    proxy = srv.proxy
    if proxy.metrics.streams._value.get() != 0:
        return False
    for up in proxy.upstreams.values():
        pool = up.client._transport._pool  # httpcore's pool: the test looks inside on purpose
        if any(not (c.is_idle() or c.is_closed()) for c in pool.connections):
            return False
    return True


def _wait(pred, timeout=5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_upstream_down_is_a_provider_shaped_502(serve):
    port = _closed_port()
    srv = serve(
        openai_upstream=f"http://127.0.0.1:{port}", anthropic_upstream=f"http://127.0.0.1:{port}"
    )
    with pytest.raises(openai.InternalServerError) as err:
        _oa(srv).chat.completions.create(model="gpt-4o", messages=MSGS)
    assert err.value.status_code == 502
    assert "unreachable" in err.value.body["message"]
    assert err.value.response.headers["x-glyphfold-error"] == "proxy"
    with pytest.raises(anthropic.APIStatusError) as aerr:
        _an(srv).messages.create(model="claude-haiku-4-5", max_tokens=10, messages=MSGS)
    assert aerr.value.status_code == 502
    assert aerr.value.body["type"] == "error" and aerr.value.body["error"]["type"] == "api_error"
    assert _healthy(srv)
    assert 'kind="connect"' in httpx.get(srv.url + "/metrics").text


def test_upstream_timing_out_is_a_504(serve, fake):
    srv = serve(read_timeout_s=0.5)
    t = time.monotonic()
    with pytest.raises(openai.APIStatusError) as err:
        _oa(srv).chat.completions.create(
            model="gpt-4o", messages=MSGS, extra_headers={"x-fake-fault": "slow"}
        )
    assert err.value.status_code == 504
    assert "timed out" in err.value.body["message"]
    assert time.monotonic() - t < 3
    assert _healthy(srv)


def test_malformed_upstream_json_is_a_502(serve, fake):
    srv = serve()
    with pytest.raises(openai.APIStatusError) as err:
        _oa(srv).chat.completions.create(
            model="gpt-4o", messages=MSGS, extra_headers={"x-fake-fault": "malformed"}
        )
    assert err.value.status_code == 502
    assert "not valid JSON" in err.value.body["message"]
    with pytest.raises(anthropic.APIStatusError) as aerr:
        _an(srv).messages.create(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=MSGS,
            extra_headers={"x-fake-fault": "malformed"},
        )
    assert aerr.value.status_code == 502 and aerr.value.body["error"]["type"] == "api_error"


def test_upstream_5xx_comes_back_unchanged_once(serve, fake):
    srv = serve()
    with pytest.raises(anthropic.InternalServerError) as err:
        _an(srv).messages.create(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=MSGS,
            extra_headers={"x-fake-fault": "500"},
        )
    assert err.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": "Internal server error"},
    }
    assert "x-glyphfold-error" not in err.value.response.headers
    assert len(fake.received) == 1  # no retry storm


@pytest.mark.parametrize("fault", ["die-mid-stream", "stall-mid-stream"])
def test_openai_stream_broken_mid_way_ends_with_an_error_event(serve, fake, fault):
    srv = serve(read_timeout_s=0.5)
    got = []
    with pytest.raises(openai.APIError) as err:
        stream = _oa(srv).chat.completions.create(
            model="gpt-4o", messages=MSGS, stream=True, extra_headers={"x-fake-fault": fault}
        )
        for chunk in stream:
            got.append(chunk.choices[0].delta.content)
    assert got[0] == "ok" and len(got) == 2  # what arrived before the break was relayed as it came
    assert "glyphfold serve" in str(err.value)
    assert _wait(lambda: _idle(srv))
    assert _healthy(srv)


def test_anthropic_stream_killed_mid_way_ends_with_an_error_event(serve, fake):
    srv = serve()
    with (
        pytest.raises(anthropic.APIStatusError) as err,
        _an(srv).messages.stream(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=MSGS,
            extra_headers={"x-fake-fault": "die-mid-stream"},
        ) as s,
    ):
        for _ in s.text_stream:
            pass
    assert "broke mid-stream" in str(err.value)
    assert _wait(lambda: _idle(srv))


def test_client_disconnecting_mid_stream_closes_the_upstream(serve, fake):
    srv = serve()
    opened, closed = fake.streams_open, fake.streams_closed
    body = {"model": "gpt-4o", "messages": MSGS, "stream": True}
    with (
        httpx.Client() as c,
        c.stream(
            "POST", srv.url + "/v1/chat/completions", json=body, headers={"x-fake-fault": "drip"}
        ) as r,
    ):
        it = r.iter_bytes()
        assert b"data:" in next(it)
    # the client is gone: the proxy must close the upstream stream, not drain it
    assert _wait(lambda: fake.streams_closed == closed + 1 and fake.streams_open == opened + 1)
    assert _wait(lambda: _idle(srv))
    assert _healthy(srv)
    text = httpx.get(srv.url + "/metrics").text
    assert "glyphfold_serve_streams_in_flight 0.0" in text


@pytest.mark.parametrize("chunked", [False, True])
def test_bodies_over_the_limit_are_a_provider_shaped_413(serve, fake, chunked):
    srv = serve(max_body_bytes=50_000)
    h = anthropic_history(20)
    with pytest.raises(anthropic.APIStatusError) as err:
        _an(srv).messages.create(
            model="claude-haiku-4-5", max_tokens=10, system=h["system"], messages=h["messages"]
        )
    assert err.value.status_code == 413
    assert err.value.body["error"]["type"] == "request_too_large"
    big = b'{"model":"gpt-4o","messages":[' + b" " * 60_000 + b"]}"
    content = iter([big[:30_000], big[30_000:]]) if chunked else big
    r = httpx.post(
        srv.url + "/v1/chat/completions",
        content=content,
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "request_too_large"
    assert fake.received == []


def test_routes_without_an_upstream_are_a_provider_shaped_404(serve, fake):
    srv = serve(openai_upstream="none")
    with pytest.raises(openai.NotFoundError) as err:
        _oa(srv).chat.completions.create(model="gpt-4o", messages=MSGS)
    assert "no openai upstream" in err.value.body["message"]
    r = httpx.get(srv.url + "/v1/models", headers={"authorization": "Bearer sk-x"})
    assert r.status_code == 404 and r.json()["error"]["type"] == "invalid_request_error"


def test_other_paths_pass_through_unchanged(serve, fake):
    srv = serve()
    models = _oa(srv).models.list()
    assert [m.id for m in models.data] == ["gpt-fake"]
    assert fake.received[-1].path == "/v1/models"
    srv2 = serve(passthrough=False)
    r = httpx.get(srv2.url + "/v1/models", headers={"x-api-key": "k", "anthropic-version": "1"})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_a_body_that_is_not_json_is_a_400(serve, fake):
    srv = serve()
    r = httpx.post(
        srv.url + "/v1/messages", content=b"{nope", headers={"anthropic-version": "2023-06-01"}
    )
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert fake.received == []
