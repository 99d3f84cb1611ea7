"""Security (issue 12): keys pass through untouched and reach no log, store, event,
metric or error message; no request can choose the upstream; loopback by default."""

from __future__ import annotations

import logging
import socket

import httpx
import pytest

from glyphfold.serve import ServeConfig
from glyphfold.serve.config import is_loopback
from glyphfold.serve.upstream import Upstream
from tests.serve.histories import anthropic_history, openai_history

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

OA_KEY = "sk-proj-SECRETopenaiKEY0123456789"
AN_KEY = "sk-ant-api03-SECRETanthropicKEY987"
ORG = "org-SECRETorg42"


def _exercise(srv, down_srv):
    """Every path a request can take: plain, compacted, recovered, 5xx, stream, 413, down."""
    oa = openai.OpenAI(base_url=srv.url + "/v1", api_key=OA_KEY, organization=ORG, max_retries=0)
    an = anthropic.Anthropic(base_url=srv.url, api_key=AN_KEY, max_retries=0)
    oa.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    oa.chat.completions.create(model="fake-model", messages=openai_history(25, chars=16_000))
    oa.chat.completions.create(model="mystery", messages=openai_history(26))  # overflow, recovered
    for fault in ("500", "malformed", "die-mid-stream"):
        with pytest.raises(openai.APIError):
            stream = oa.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": "x"}],
                stream=True,
                extra_headers={"x-fake-fault": fault},
            )
            for _ in stream:
                pass
    h = anthropic_history(25, chars=16_000)
    an.messages.create(
        model="fake-model", max_tokens=10, system=h["system"], messages=h["messages"]
    )
    with pytest.raises(anthropic.APIStatusError):
        an.messages.create(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=[{"role": "user", "content": "y" * 1_200_000}],
        )  # 413
    oa.models.list()
    bad = openai.OpenAI(base_url=down_srv.url + "/v1", api_key=OA_KEY, max_retries=0)
    with pytest.raises(openai.APIStatusError) as err:
        bad.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "z"}])
    return err.value.response.text


def test_keys_pass_through_untouched_and_are_never_recorded(serve, fake, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "events.jsonl"
    db = tmp_path / "store.db"
    srv = serve(
        windows={"fake-model": 20_000},
        event_log=str(log),
        db=f"sqlite:///{db}",
        max_body_bytes=1_000_000,
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    down = serve(openai_upstream=f"http://127.0.0.1:{dead}", event_log=str(log))
    received = fake.received  # serve() cleared it; the second proxy did not send anything
    error_text = _exercise(srv, down)
    # untouched on the way up
    oa = [r for r in received if r.path != "/v1/messages"]
    assert oa and all(r.headers["authorization"] == f"Bearer {OA_KEY}" for r in oa)
    assert all(r.headers["openai-organization"] == ORG for r in oa)
    an = [r for r in received if r.path == "/v1/messages"]
    # (this anthropic SDK sends its key as a bearer token; older ones use x-api-key)
    assert an and all(
        r.headers.get("x-api-key", r.headers.get("authorization")) in (AN_KEY, f"Bearer {AN_KEY}")
        for r in an
    )
    # ... and nowhere else
    import time

    time.sleep(0.3)  # the store commits in its own thread
    metrics = httpx.get(srv.url + "/metrics").text
    places = {
        "event log": log.read_text(),
        "store": db.read_bytes().decode("latin-1"),
        "metrics": metrics,
        "error message": error_text,
        "logs": caplog.text,
    }
    assert "store_commit" in places["event log"] and '"event":"request"' in places["event log"]
    for secret in (OA_KEY, AN_KEY, ORG, "SECRET"):
        for where, text in places.items():
            assert secret not in text, f"{secret!r} leaked into the {where}"


def test_no_request_can_choose_the_upstream(serve, fake):
    srv = serve()
    # absolute-form target and a forged Host: the proxy still talks to its configured upstream
    port = int(srv.url.rsplit(":", 1)[1])
    body = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
    req = (
        b"POST http://evil.invalid/v1/chat/completions HTTP/1.1\r\nHost: evil.invalid\r\n"
        b"X-Forwarded-Host: evil.invalid\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(req)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200")
    assert fake.received[-1].path == "/v1/chat/completions"
    # a path that looks like another host stays on the configured one
    up = Upstream("openai", "https://api.example.com/v1", ServeConfig())
    for path in (b"//evil.invalid/v1/x", b"http://evil.invalid/"):
        assert up.url(path, b"").host == "api.example.com"
    with pytest.raises(ValueError, match="segment"):  # issue 21 item 7: refused outright
        up.url(b"/v1/../../@evil.invalid/x", b"")
    assert (
        str(up.url(b"/v1/chat/completions", b"a=1"))
        == "https://api.example.com/v1/chat/completions?a=1"
    )


def test_loopback_is_the_default_and_others_are_recognised():
    assert ServeConfig().host == "127.0.0.1"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.7")


def test_upstream_urls_with_credentials_are_refused():
    from glyphfold.errors import InputError

    with pytest.raises(InputError, match="must not carry credentials"):
        ServeConfig(openai_upstream="https://user:pw@api.example.com")
    with pytest.raises(InputError, match="http:// or https://"):
        ServeConfig(anthropic_upstream="file:///etc/passwd")
