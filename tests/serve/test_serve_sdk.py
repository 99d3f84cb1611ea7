"""The official SDKs pointed at the proxy by base_url, against the fake upstream (issue 12).

The fake enforces a 20,000-token window and answers oversized requests with each
provider's real overflow error; a history 5x over the window must complete, and
the fake must never accept more than its window.
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.serve.fake_upstream import count_tokens
from tests.serve.histories import anthropic_history, openai_history

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

WINDOW = 20_000
MODEL = "fake-model"


def _oa(srv, **kw):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-test", max_retries=0, **kw)


def _an(srv, **kw):
    return anthropic.Anthropic(base_url=srv.url, api_key="sk-ant-test", max_retries=0, **kw)


def test_openai_small_request_passes_unchanged(serve, fake):
    srv = serve(windows={MODEL: WINDOW})
    msgs = [{"role": "user", "content": "hello"}]
    raw = _oa(srv).chat.completions.with_raw_response.create(model=MODEL, messages=msgs)
    before, after = raw.headers["x-glyphfold-tokens"].split("->")
    assert before == after and int(before) < 20
    assert raw.headers["x-glyphfold-rungs"] == "none"
    assert raw.headers["server-timing"].startswith("glyphfold;dur=")
    assert raw.parse().choices[0].message.content.startswith("ok ")
    (got,) = fake.accepted()
    assert json.loads(got.body) == {"model": MODEL, "messages": msgs}


@pytest.mark.parametrize("stream", [False, True])
def test_openai_history_5x_over_window_completes(serve, fake, stream):
    srv = serve(windows={MODEL: WINDOW})
    history = openai_history(25, chars=16_000)  # ~100k tokens by the fake's count
    before = copy.deepcopy(history)
    assert count_tokens({"messages": history}) > 5 * WINDOW
    client = _oa(srv)
    if stream:
        with client.chat.completions.with_streaming_response.create(
            model=MODEL, messages=history, stream=True
        ) as resp:
            text = "".join(c.choices[0].delta.content or "" for c in resp.parse() if c.choices)
            headers = resp.headers
    else:
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
        text, headers = raw.parse().choices[0].message.content, raw.headers
    assert text.startswith("ok ")
    assert history == before  # the client's history is untouched
    before_t, after_t = map(int, headers["x-glyphfold-tokens"].split("->"))
    assert before_t > 4 * WINDOW and after_t <= 0.9 * WINDOW
    assert headers["x-glyphfold-rungs"] != "none"
    accepted = fake.accepted()
    assert accepted and all(r.tokens <= WINDOW for r in accepted)
    assert all(r.accepted for r in fake.received)  # proactive: the fake never said "too long"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_history_5x_over_window_completes(serve, fake, stream):
    srv = serve(windows={MODEL: WINDOW})
    h = anthropic_history(25, chars=16_000)
    before = copy.deepcopy(h)
    assert count_tokens(h) > 5 * WINDOW
    client = _an(srv)
    kw = dict(model=MODEL, max_tokens=1024, system=h["system"], messages=h["messages"])
    if stream:
        with client.messages.stream(**kw) as s:
            text = "".join(s.text_stream)
    else:
        text = client.messages.create(**kw).content[0].text
    assert text.startswith("ok ")
    assert h == before
    accepted = fake.accepted()
    assert accepted and all(r.tokens <= WINDOW for r in accepted)
    assert all(r.accepted for r in fake.received)


def test_same_request_compacts_to_the_same_bytes(serve, fake):
    srv = serve(windows={MODEL: WINDOW})
    history = openai_history(25, chars=16_000)
    client = _oa(srv)
    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    second = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    assert first.headers["x-glyphfold-cache"] == "compact"
    assert second.headers["x-glyphfold-cache"] == "hit"
    a, b = fake.accepted()
    assert a.body == b.body


def test_next_turn_reuses_the_compacted_prefix(serve, fake):
    """Session growth: the compacted prefix is sent byte for byte (prompt cache keeps hitting)."""
    srv = serve(windows={MODEL: WINDOW})
    history = openai_history(25, chars=16_000)
    client = _oa(srv)
    client.chat.completions.create(model=MODEL, messages=history)
    grown = [
        *history,
        {"role": "assistant", "content": "Done reading."},
        {"role": "user", "content": "Now fix it."},
    ]
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=grown)
    assert raw.headers["x-glyphfold-cache"] == "append"
    a, b = (json.loads(r.body)["messages"] for r in fake.accepted())
    assert b[: len(a)] == a
    assert b[len(a) :] == grown[len(history) :]


def test_count_tokens_prices_the_compacted_request(serve, fake):
    srv = serve(windows={MODEL: WINDOW})
    h = anthropic_history(25, chars=16_000)
    n = _an(srv).messages.count_tokens(model=MODEL, system=h["system"], messages=h["messages"])
    assert 0 < n.input_tokens <= WINDOW
