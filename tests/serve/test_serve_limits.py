"""What one client may hold and do (issue 21 items 4-9): head deadline and size, connection
cap, body deadline, pricing that never queues behind compaction, hung-up clients not
forwarded, bounded replies, dot segments, gzip bodies, deep JSON, long model names, warm-up.
Servers on 127.0.0.1 only; every loop is bounded in count and time."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time

import httpx
import pytest

from glyphfold.serve import ServeConfig
from glyphfold.serve.upstream import Upstream
from tests.serve.histories import openai_history

CHAT = "/v1/chat/completions"
AUTH = {"authorization": "Bearer sk-limits", "content-type": "application/json"}


def _port(srv) -> int:
    return int(srv.url.rsplit(":", 1)[1])


def _closed(sock: socket.socket, within: float) -> bool:
    """True when the server closes ``sock`` within ``within`` seconds."""
    sock.settimeout(within)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def _half_head(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: 1")
    return s


# -- item 4: heads, connections, bodies -------------------------------------------------


def test_half_sent_heads_and_silent_connections_are_closed_at_the_deadline(serve, fake):
    srv = serve(header_timeout_s=0.5)
    port = _port(srv)
    half, silent = _half_head(port), socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        assert _closed(half, 5.0) and _closed(silent, 5.0)
    finally:
        half.close()
        silent.close()
    assert fake.received == []


def test_a_flood_of_half_open_connections_does_not_lock_clients_out(serve, fake):
    srv = serve(max_client_connections=20, header_timeout_s=30)
    socks = []
    try:
        for _ in range(60):  # three times the cap, all holding half a head
            socks.append(_half_head(_port(srv)))
        r = httpx.post(
            srv.url + CHAT,
            json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            headers=AUTH,
            timeout=10,
        )
        assert r.status_code == 200
        # the oldest half-open ones made room: at most the cap is still held
        still_open = sum(not _closed(s, 0.05) for s in socks)
        assert still_open <= 20
    finally:
        for s in socks:
            s.close()


def test_a_stalled_body_is_answered_408_and_released(serve, fake):
    srv = serve(body_idle_timeout_s=0.5)
    with socket.create_connection(("127.0.0.1", _port(srv)), timeout=10) as s:
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 31457280\r\n\r\n" + b" " * (1024 * 1024)
        )
        t = time.monotonic()
        reply = s.recv(65536)
        assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
        assert time.monotonic() - t < 8
        # the body may come in a second segment after the head (seen under load)
        deadline = time.monotonic() + 2.0
        while b"body_idle_timeout_s" not in reply and time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            reply += chunk
        assert b"body_idle_timeout_s" in reply or _closed(s, 2.0)
    assert fake.received == []


def test_a_megabyte_of_headers_is_refused(serve, fake):
    srv = serve()
    with socket.create_connection(("127.0.0.1", _port(srv)), timeout=10) as s:
        body = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Big: "
            + b"a" * (1024 * 1024)
            + b"\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 4"), reply[:100]
    assert fake.received == []


def test_the_cli_runs_uvicorn_with_these_limits():
    from glyphfold.serve.server import uvicorn_options

    opts = uvicorn_options(ServeConfig(max_header_bytes=32_768, header_timeout_s=3))
    assert opts["h11_max_incomplete_event_size"] == 32_768
    assert opts["http"].header_timeout_s == 3 and opts["http"].max_client_connections >= 16


# -- item 5: pricing, compaction, clients that hung up ---------------------------------


def _block_compaction(srv) -> tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]:
    """Take every compaction slot away (the test gives them back with ``release``)."""
    loop = srv.server.servers[0].get_loop()
    sem = asyncio.Semaphore(0)
    srv.proxy._cpu = sem
    return loop, sem


def test_pricing_never_queues_behind_compaction(serve, fake):
    srv = serve()
    fake.windows["gpt-4o"] = 200_000
    loop, sem = _block_compaction(srv)
    # ~350 KB that fits gpt-4o's window: only pricing is needed
    history = openai_history(20, chars=16_000)
    body = json.dumps({"model": "gpt-4o", "messages": history}).encode()
    assert len(body) > 300_000
    try:
        r = httpx.post(srv.url + CHAT, content=body, headers=AUTH, timeout=15)
        assert r.status_code == 200 and r.headers["x-glyphfold-rungs"] == "none"
    finally:
        fake.windows.pop("gpt-4o")
        for _ in range(2):
            loop.call_soon_threadsafe(sem.release)


def test_pricing_runs_off_the_event_loop(serve, fake, monkeypatch):
    import glyphfold.serve.proxy as proxy_mod

    threads: list[str] = []
    real = proxy_mod.price

    def spy(ctx):
        threads.append(threading.current_thread().name)
        return real(ctx)

    monkeypatch.setattr(proxy_mod, "price", spy)
    srv = serve()
    tiny = [{"role": "user" if i % 2 == 0 else "assistant", "content": "k"} for i in range(3000)]
    r = httpx.post(
        srv.url + CHAT, json={"model": "gpt-4o", "messages": tiny}, headers=AUTH, timeout=15
    )
    assert r.status_code == 200
    assert threads and all(t.startswith("glyphfold-price") for t in threads)


def test_a_client_that_hangs_up_is_not_compacted_nor_forwarded(serve, fake):
    srv = serve()
    loop, sem = _block_compaction(srv)
    history = openai_history(30, chars=4_000)  # needs compaction for a 20k window
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                srv.url + CHAT,
                json={"model": "gpt-4", "messages": history},
                headers=AUTH,
                timeout=1.0,
            )
        time.sleep(0.3)
    finally:
        for _ in range(2):
            loop.call_soon_threadsafe(sem.release)
    time.sleep(1.0)
    assert fake.received == []  # never sent upstream: never billed
    text = httpx.get(srv.url + "/metrics").text
    assert 'glyphfold_serve_client_gone_total{endpoint="chat_completions"} 1.0' in text


# -- item 6: replies ----------------------------------------------------------------------


def test_a_gzip_bomb_reply_stops_at_the_limit_and_identity_is_asked(serve, fake):
    srv = serve(max_response_bytes=1024 * 1024)
    r = httpx.post(
        srv.url + CHAT,
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        headers={**AUTH, "x-fake-fault": "gzip-bomb", "accept-encoding": "gzip"},
        timeout=30,
    )
    assert r.status_code == 502
    assert "max_response_bytes" in r.json()["error"]["message"]
    assert fake.received[-1].headers["accept-encoding"] == "identity"


# -- item 7: paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1/../../admin/keys",
        "/v1/%2e%2e/%2E%2E/admin/keys",
        "/v1/%252e%252e/admin",
        "/v1/models/./../chat/completions",
        "/v1/x/..%2fchat/completions",
    ],
)
def test_dot_segments_are_refused(serve, fake, path):
    srv = serve()
    with socket.create_connection(("127.0.0.1", _port(srv)), timeout=10) as s:
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            "Connection: close\r\n\r\n{}".encode()
        )
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    assert b"segments" in reply
    assert fake.received == []


@pytest.mark.parametrize(
    "path",
    ["/v1//chat/completions", "/v1/chat/completions/", "/V1/Chat/Completions", "//v1/messages"],
)
def test_no_chat_request_goes_around_compaction(serve, fake, path):
    srv = serve()
    r = httpx.post(
        srv.url + path,
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        headers=AUTH,
        timeout=10,
    )
    assert r.status_code == 400 and "canonical path" in r.json()["error"]["message"]
    assert fake.received == []


def test_other_methods_on_chat_paths_still_pass_through(serve, fake):
    srv = serve()
    r = httpx.get(srv.url + "/v1/chat/completions", headers=AUTH, timeout=10)
    assert r.status_code != 400  # OpenAI lists stored completions here: not refused


def test_the_upstream_prefix_is_kept():
    up = Upstream("openai", "https://gw.example.com/tenant-a/v1", ServeConfig())
    assert up.url(b"/v1/chat/completions", b"").raw_path == b"/tenant-a/v1/chat/completions"
    for path in (b"/v1/../../admin/keys", b"/v1/%2e%2e/%2e%2e/admin"):
        with pytest.raises(ValueError):
            up.url(path, b"")


# -- item 8: bodies that broke the proxy ---------------------------------------------


def test_json_nested_too_deep_is_a_provider_shaped_400(serve, fake):
    srv = serve()
    deep = '{"model":"gpt-4o","messages":[{"role":"user","content":' + "[" * 5000 + "]" * 5000
    r = httpx.post(srv.url + CHAT, content=deep + "}]}", headers=AUTH, timeout=10)
    assert r.status_code == 400
    assert "nested too deeply" in r.json()["error"]["message"]
    # nested 990 deep parses; pricing it must not raise either
    raw = (
        '{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"t","x":'
        + "[" * 990
        + "]" * 990
        + "}]}]}"
    )
    r = httpx.post(srv.url + CHAT, content=raw, headers=AUTH, timeout=10)
    assert r.status_code in (200, 400) and "Traceback" not in r.text


def test_a_lone_surrogate_in_a_tool_result_is_forwarded(serve, fake):
    srv = serve()
    history = openai_history(30, chars=4_000)
    for m in history:
        if m.get("role") == "tool":
            m["content"] = "cut \udfff here " + m["content"]
    body = json.dumps({"model": "gpt-4", "messages": history}).encode()  # \udfff escaped
    for _ in range(2):  # and the next request of that agent too
        r = httpx.post(srv.url + CHAT, content=body, headers=AUTH, timeout=60)
        assert r.status_code == 200, r.text[:300]


def test_gzip_request_bodies(serve, fake):
    srv = serve()
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "zip"}]})
    r = httpx.post(
        srv.url + CHAT,
        content=gzip.compress(body.encode()),
        headers={**AUTH, "content-encoding": "gzip"},
        timeout=10,
    )
    assert r.status_code == 200
    got = fake.received[-1]
    assert json.loads(got.body)["messages"][0]["content"] == "zip"
    assert "content-encoding" not in got.headers  # decoded before it was fitted
    # a small bomb stops at the limit, as a 413
    small = serve(max_body_bytes=1024 * 1024)
    bomb = gzip.compress(b" " * (8 * 1024 * 1024))
    r = httpx.post(
        small.url + CHAT, content=bomb, headers={**AUTH, "content-encoding": "gzip"}, timeout=10
    )
    assert r.status_code == 413 and "once decoded" in r.json()["error"]["message"]
    # passthrough: the body goes up as sent, with its content-encoding
    zipped = gzip.compress(b'{"purpose": "batch"}')
    r = httpx.post(
        small.url + "/v1/echo",
        content=zipped,
        headers={**AUTH, "content-encoding": "gzip"},
        timeout=10,
    )
    assert r.status_code == 200
    assert fake.received[-1].headers.get("content-encoding") == "gzip"


def test_a_huge_model_name_is_not_a_huge_log_line(serve, fake, tmp_path):
    log = tmp_path / "events.jsonl"
    srv = serve(event_log=str(log))
    name = "m" * (5 * 1024 * 1024)
    r = httpx.post(
        srv.url + CHAT,
        json={"model": name, "messages": [{"role": "user", "content": "hi"}]},
        headers=AUTH,
        timeout=30,
    )
    assert r.status_code == 200
    srv.__exit__()
    lines = log.read_text().splitlines()
    assert lines and max(len(line) for line in lines) < 4096
    assert f"({len(name)} chars)" in lines[-1]


# -- item 9: warm-up -------------------------------------------------------------------------


def test_serve_warms_pricing_and_the_renderer_at_start_up(serve, fake):
    srv = serve()
    threads = srv.proxy.warm_threads
    assert len(threads) == 2  # the renderer (glyphfold.warm_up) and pricing
    deadline = time.monotonic() + 120
    for t in threads:
        if hasattr(t, "join"):
            t.join(max(0.0, deadline - time.monotonic()))
            assert not t.is_alive()
        else:
            t.result(timeout=max(0.0, deadline - time.monotonic()))
    assert serve(warm_up=False).proxy.warm_threads == []
