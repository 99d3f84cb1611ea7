"""POST /v1/responses through the proxy with the official openai SDK (Responses input items,
parsed by glyphfold's Responses wire format)."""

from __future__ import annotations

import copy
import json

import pytest

openai = pytest.importorskip("openai")

WINDOW = 20_000


def _items(steps: int, chars: int) -> list[dict]:
    out: list[dict] = [{"role": "user", "content": "Find the failing test."}]
    for i in range(steps):
        out.append(
            {
                "type": "function_call",
                "call_id": f"call_{i}",
                "name": "bash",
                "arguments": json.dumps({"cmd": f"cat log{i}.txt"}),
            }
        )
        out.append(
            {
                "type": "function_call_output",
                "call_id": f"call_{i}",
                "output": "\n".join(
                    f"{i}:{k} test_parser ok value {k * i}" for k in range(chars // 32)
                ),
            }
        )
    return out


def test_responses_history_5x_over_the_window_completes(serve, fake):
    srv = serve(windows={"fake-model": WINDOW})
    items = _items(25, 16_000)
    before = copy.deepcopy(items)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-x", max_retries=0)
    raw = client.responses.with_raw_response.create(
        model="fake-model", instructions="You are a careful agent.", input=items
    )
    assert raw.parse().output_text.startswith("ok ")
    assert items == before
    b, a = map(int, raw.headers["x-glyphfold-tokens"].split("->"))
    assert b > 4 * WINDOW and a <= WINDOW
    (got,) = fake.accepted()
    sent = json.loads(got.body)
    assert got.tokens <= WINDOW and sent["instructions"] == "You are a careful agent."
    assert sent["input"][0] == items[0]  # the task stays verbatim


def test_responses_overflow_is_recovered(serve, fake):
    srv = serve()
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-x", max_retries=0)
    raw = client.responses.with_raw_response.create(model="mystery", input=_items(26, 3_200))
    assert raw.parse().output_text.startswith("ok ")
    assert "recovered" in raw.headers["x-glyphfold-recovery"]
    assert [r.accepted for r in fake.received] == [False, True]


def test_a_continued_response_is_forwarded_as_it_is(serve, fake):
    srv = serve(windows={"fake-model": WINDOW})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-x", max_retries=0)
    client.responses.create(
        model="fake-model",
        previous_response_id="resp_1",
        input=[{"role": "user", "content": "and now?"}],
    )
    (got,) = fake.received
    assert json.loads(got.body)["previous_response_id"] == "resp_1"
