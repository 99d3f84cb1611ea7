"""Load (issue 12): 50 concurrent clients x 20 requests through the proxy on loopback,
bounded in count and time: every request answered, none lost, none mixed up."""

from __future__ import annotations

import json

import pytest

from tests.serve.load import run_load

CLIENTS, REQUESTS = 50, 20


def _body(i: int, j: int) -> tuple[str, dict[str, str], bytes]:
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"marker c{i:02d}r{j:02d}: " + "say hi " * 40},
    ]
    body = json.dumps({"model": "gpt-4o", "messages": msgs}).encode()
    return (
        "/v1/chat/completions",
        {"content-type": "application/json", "authorization": "Bearer sk-load"},
        body,
    )


@pytest.mark.slow
def test_fifty_clients_twenty_requests_each(serve, fake):
    srv = serve(compact_in="process")  # glyphfold serve's default: workers spawned at start
    result = run_load(
        srv.url, clients=CLIENTS, requests=REQUESTS, make=_body, timeout_s=120, keep_bodies=True
    )
    assert result.errors == []
    assert result.statuses == {200: CLIENTS * REQUESTS}
    assert all(
        json.loads(b)["choices"][0]["message"]["content"].startswith("ok ") for b in result.bodies
    )
    # nothing lost or duplicated on the way up: each marker reached the upstream once
    markers = sorted(json.loads(r.body)["messages"][1]["content"][7:14] for r in fake.received)
    assert markers == sorted(f"c{i:02d}r{j:02d}:" for i in range(CLIENTS) for j in range(REQUESTS))
    assert len(result.added_ms) == CLIENTS * REQUESTS
    text = __import__("httpx").get(srv.url + "/metrics").text
    assert (
        f'glyphfold_serve_requests_total{{endpoint="chat_completions",status="200"}} '
        f"{float(CLIENTS * REQUESTS)}" in text
    )
