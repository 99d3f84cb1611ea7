"""The route says the wire format; serve never guesses it (issue 21 item 12).

A Claude model behind the Chat Completions route (gateways do this) with a plain-text
history: the profile (Anthropic) decided the format, so the compacted body sent to an
OpenAI-style endpoint carried Anthropic ``image`` blocks. And a GPT model on the
Messages route got ``image_url`` parts. The endpoint's own format decides now.
"""

from __future__ import annotations

import json

import httpx

MODEL_WINDOW = 9_000


def _plain(turns: int = 14) -> list[dict]:
    out = []
    for t in range(turns):
        out.append({"role": "user", "content": f"Question {t}: explain module {t}. " * 30})
        out.append({"role": "assistant", "content": f"Module {t} parses the input. " * 120})
    out.append({"role": "user", "content": "Now summarise what we found."})
    return out


def _sent(fake, path: str) -> str:
    bodies = [r.body for r in fake.accepted() if r.path == path]
    assert bodies, f"nothing reached {path}"
    return bodies[-1].decode()


def test_a_claude_model_on_the_chat_route_gets_openai_pages(serve, fake):
    model = "claude-sonnet-4-5"
    srv = serve(windows={model: MODEL_WINDOW}, rungs=("snapshot", "trim"))
    body = {"model": model, "max_tokens": 200, "messages": _plain()}
    r = httpx.post(srv.url + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    sent = _sent(fake, "/v1/chat/completions")
    assert '"image_url"' in sent  # pages, as Chat Completions takes them
    assert '"type":"image"' not in sent.replace(" ", "")


def test_a_gpt_model_on_the_messages_route_gets_anthropic_pages(serve, fake):
    model = "gpt-4o"
    srv = serve(windows={model: MODEL_WINDOW}, rungs=("snapshot", "trim"))
    body = {"model": model, "max_tokens": 200, "messages": _plain()}
    r = httpx.post(srv.url + "/v1/messages", json=body, timeout=60)
    assert r.status_code == 200, r.text
    sent = json.loads(_sent(fake, "/v1/messages"))
    blocks = [b for m in sent["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert any(b.get("type") == "image" for b in blocks)
    assert not any(b.get("type") == "image_url" for b in blocks)
