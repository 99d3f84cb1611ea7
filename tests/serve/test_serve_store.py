"""--db: every conversation through the proxy is committed at turn boundaries (SPEC §6.1)."""

from __future__ import annotations

import time

import pytest

import glyphfold
from tests.serve.histories import openai_history

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


def _path(db, title_key, n, timeout=5.0):
    """The stored path of the conversation named ``title_key`` once it has ``n`` messages."""
    deadline = time.monotonic() + timeout
    while True:
        with glyphfold.open_store(db) as store:
            conv = next(
                (
                    c
                    for c in store.conversations()
                    if c.title.startswith("glyphfold serve ") and c.title.endswith(f"/{title_key}")
                ),
                None,
            )
            path = store.path_records(conv.id) if conv else []
        if len(path) >= n or time.monotonic() > deadline:
            return conv, path
        time.sleep(0.05)


def test_openai_turns_are_committed_at_boundaries(serve, fake, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    srv = serve(db=db)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-x", max_retries=0)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "One?"}]
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
    key = raw.headers["x-glyphfold-conversation"]
    assert key.startswith("h:")
    reply = raw.parse().choices[0].message
    _, path = _path(db, key, 3)
    assert [m.role for m in path] == ["system", "user", "assistant"]
    assert path[-1].ends_turn and path[-1].payload["content"] == reply.content
    # the next turn: the client echoes the reply and asks again; same conversation
    msgs2 = [
        *msgs,
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": "Two?"},
    ]
    raw2 = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs2)
    assert raw2.headers["x-glyphfold-conversation"] == key
    _, path = _path(db, key, 5)
    assert [m.role for m in path] == ["system", "user", "assistant", "user", "assistant"]
    assert [m.turn_start for m in path] == [False, True, False, True, False]


def test_a_tool_turn_is_committed_when_it_is_complete(serve, fake, tmp_path):
    """Mid-turn (tool steps, streaming): nothing; the next real user message commits it."""
    db = f"sqlite:///{tmp_path / 's.db'}"
    srv = serve(db=db)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-x", max_retries=0)
    history = openai_history(3, chars=200)
    hdr = {"x-glyphfold-conversation": "run-42"}
    for _ in client.chat.completions.create(
        model="gpt-4o", messages=history, stream=True, extra_headers=hdr
    ):
        pass
    time.sleep(0.3)
    _conv, path = _path(db, "run-42", 1, timeout=0.5)
    assert path == []  # the turn is still going: a crash restores the last complete turn
    grown = [
        *history,
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks, next task."},
    ]
    for _ in client.chat.completions.create(
        model="gpt-4o", messages=grown, stream=True, extra_headers=hdr
    ):
        pass
    _, path = _path(db, "run-42", len(history) + 1)
    assert len(path) == len(history) + 1
    assert [m.payload for m in path] == grown[:-1]
    assert path[-1].ends_turn


def test_anthropic_system_and_a_restarted_proxy_continue_the_same_conversation(
    serve, fake, tmp_path
):
    db = f"sqlite:///{tmp_path / 's.db'}"
    hdr = {"x-glyphfold-conversation": "sess-a"}
    srv = serve(db=db)
    client = anthropic.Anthropic(base_url=srv.url, api_key="k", max_retries=0)
    first = [{"role": "user", "content": "Hi"}]
    r1 = client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, system="Terse.", messages=first, extra_headers=hdr
    )
    _, path = _path(db, "sess-a", 2)
    assert [m.role for m in path] == ["user", "assistant"]
    srv.__exit__()  # the proxy goes away; a new one opens the same store
    srv2 = serve(db=db)
    client2 = anthropic.Anthropic(base_url=srv2.url, api_key="k", max_retries=0)
    second = [
        *first,
        {"role": "assistant", "content": r1.content[0].text},
        {"role": "user", "content": "Again"},
    ]
    client2.messages.create(
        model="claude-haiku-4-5", max_tokens=50, system="Terse.", messages=second, extra_headers=hdr
    )
    conv, path = _path(db, "sess-a", 4)
    assert [m.role for m in path] == ["user", "assistant", "user", "assistant"]
    with glyphfold.open_store(db) as store:
        assert store.dump(conv.id)["conversation"]["system"] == "Terse."
