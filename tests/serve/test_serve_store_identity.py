"""--db: one user never sees, changes or breaks another's transcript (issue 21 item 1,
SPEC §6.1): exact-prefix commits, per-API-key namespaces, unguessable automatic names,
a bounded table and no scan of every stored conversation."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time

import httpx

import glyphfold
from glyphfold.serve.eventlog import EventLog
from glyphfold.serve.recorder import Recorder, client_identity, conversation_name

CHAT = "/v1/chat/completions"
SYSTEM = {"role": "system", "content": "You are the support bot."}


def _chat(srv, key, messages, header=None):
    headers = {"authorization": f"Bearer {key}"}
    if header:
        headers["x-glyphfold-conversation"] = header
    r = httpx.post(
        srv.url + CHAT, json={"model": "gpt-4o", "messages": messages}, headers=headers, timeout=30
    )
    assert r.status_code == 200
    return r


def _stored(db, expect, timeout=5.0):
    """{title: [message contents]} of every serve conversation, once ``expect`` exist."""
    deadline = time.monotonic() + timeout
    while True:
        with glyphfold.open_store(db) as store:
            out = [
                (c.title, [m.get("content") for m in store.path(c.id)])
                for c in store.conversations()
                if (c.title or "").startswith("glyphfold serve ")
            ]
        if len(out) >= expect or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


def _drain(srv):
    fut = asyncio.run_coroutine_threadsafe(
        srv.proxy.recorder.drain(), srv.server.servers[0].get_loop()
    )
    fut.result(10)


def test_two_users_who_open_alike_get_two_transcripts(serve, fake, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    srv = serve(db=db)
    hi = [SYSTEM, {"role": "user", "content": "hi"}]
    a = _chat(srv, "sk-org", hi)  # user A (a shared org key)
    reply = a.json()["choices"][0]["message"]["content"]
    _drain(srv)
    card = [*hi, {"role": "assistant", "content": reply}, {"role": "user", "content": "card 4111"}]
    _chat(srv, "sk-org", card)
    _drain(srv)
    b = _chat(srv, "sk-org", hi)  # user B, same key, same opening, shorter history
    _drain(srv)
    assert a.headers["x-glyphfold-conversation"] == b.headers["x-glyphfold-conversation"]
    convs = _stored(db, 2)
    assert len(convs) == 2
    paths = sorted((p for _, p in convs), key=len)
    assert paths[0] == ["You are the support bot.", "hi", reply]  # B: not lost, not grafted
    assert paths[1][:4] == ["You are the support bot.", "hi", reply, "card 4111"]
    assert all("card 4111" not in p for p in paths[:1])


def test_a_daily_job_with_the_same_prompt_is_a_new_transcript_each_day(serve, fake, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    srv = serve(db=db)
    task = [SYSTEM, {"role": "user", "content": "summarise yesterday's tickets"}]
    for _ in range(2):
        _chat(srv, "sk-cron", task)
        _drain(srv)
    convs = _stored(db, 2)
    assert len(convs) == 2 and all(len(p) == 3 for _, p in convs)


def test_the_conversation_header_cannot_reach_another_namespace(serve, fake, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    srv = serve(db=db)
    first = [{"role": "user", "content": "secret plan"}]
    _chat(srv, "sk-alice", first, header="run-1")
    _drain(srv)
    # bob names alice's conversation and sends a history that extends it
    stolen = [
        *first,
        {"role": "assistant", "content": "ok 7 tokens"},
        {"role": "user", "content": "x"},
    ]
    _chat(srv, "sk-bob", stolen, header="run-1")
    _drain(srv)
    convs = _stored(db, 2)
    assert len(convs) == 2
    (alice,) = [p for _, p in convs if len(p) == 2]
    assert alice == ["secret plan", "ok 7 tokens"] or alice[0] == "secret plan"
    titles = [t for t, _ in convs]
    assert len({t.split("/")[0] for t in titles}) == 2  # two namespaces
    assert not any("sk-alice" in t or "sk-bob" in t for t in titles)  # keys never stored


def test_automatic_names_are_not_guessable_from_public_content():
    history = [SYSTEM, {"role": "user", "content": "hi"}]
    a = conversation_name(client_identity({"authorization": "Bearer k1"}), "openai", history, None)
    b = conversation_name(client_identity({"authorization": "Bearer k2"}), "openai", history, None)
    assert a != b
    public = json.dumps(["openai", None, history], sort_keys=True, default=str)
    assert a != "h:" + hashlib.blake2b(public.encode(), digest_size=12).hexdigest()
    shared = client_identity({"authorization": "Bearer k1"}, shared=True)
    assert shared == client_identity({"authorization": "Bearer k2"}, shared=True)


def test_the_table_is_bounded_and_no_new_conversation_scans_the_store(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path / 's.db'}"
    recorder = Recorder(db, EventLog(None), max_tracked_bytes=64 * 16)
    ident = client_identity({"authorization": "Bearer k"})

    async def run() -> None:
        recorder.open()

        def no_scan(*a, **k):
            raise AssertionError("the recorder listed every conversation")

        monkeypatch.setattr(type(recorder._store), "conversations", no_scan)
        for i in range(40):
            history = [{"role": "user", "content": f"task {i}"}]
            reply = {"role": "assistant", "content": f"done {i}"}
            recorder.record("openai", ident, f"job-{i}", history, reply)
        await recorder.drain()
        assert recorder.tracked_bytes <= 64 * 16
        # a forgotten conversation is found again by its title and continued, not forked
        history = [
            {"role": "user", "content": "task 0"},
            {"role": "assistant", "content": "done 0"},
            {"role": "user", "content": "again"},
        ]
        recorder.record("openai", ident, "job-0", history, {"role": "assistant", "content": "ok"})
        await recorder.drain()
        await recorder.aclose()

    asyncio.run(run())
    monkeypatch.undo()
    with glyphfold.open_store(db) as store:
        convs = store.conversations()
        assert len(convs) == 40
        (job0,) = [c for c in convs if c.title.endswith("/job-0")]
        assert [m["content"] for m in store.path(job0.id)] == ["task 0", "done 0", "again", "ok"]
