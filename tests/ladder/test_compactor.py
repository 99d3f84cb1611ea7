"""The stateful compactor: compact once, then append (SPEC §5.10, issue 19)."""

from __future__ import annotations

import copy
import itertools
import json
import threading

import pytest

import glyphfold
from glyphfold.compaction.ladder.compactor import content_digests
from tests.serve.histories import anthropic_history, openai_history


def _dump(x: object) -> str:
    return json.dumps(x, sort_keys=True)


def _loop(compactor: glyphfold.Compactor, full: list, start: int = 4, step: int = 2) -> list:
    out = []
    for n in range(start, len(full) + 1, step):
        out.append(compactor(full[:n]))
    return out


def test_appends_the_previous_output_byte_for_byte_until_the_budget():
    full = openai_history(40, chars=6000)
    c = glyphfold.Compactor(budget=30_000)
    fits = _loop(c, full)
    actions = [f.action for f in fits]
    assert "compact" in actions and "append" in actions
    for prev, cur in itertools.pairwise(fits):
        if cur.action != "append":
            continue
        p, q = prev.messages, cur.messages
        assert _dump(q[: len(p)]) == _dump(p)  # the previous request, byte for byte
        assert cur.tokens <= c.budget
    # hysteresis: a compaction brings the history to the lower target, so steps append
    first = actions.index("compact")
    assert fits[first].tokens <= c.target
    assert actions[first + 1] == "append"
    assert c.compactions == actions.count("compact") < len(actions) // 3


def test_budget_is_the_high_watermark_and_low_the_target():
    c = glyphfold.Compactor(budget=10_000, low=0.5)
    assert (c.budget, c.target) == (10_000, 5_000)
    assert glyphfold.Compactor(window=200_000).budget == glyphfold.effective_context_budget(
        context_window=200_000
    )
    both = glyphfold.Compactor(budget=50_000, window=100_000, reserve=8_000)
    assert (both.budget, both.hard_limit) == (50_000, 92_000)
    for bad in ({"low": 0}, {"low": 1.5}, {"low": True}):
        with pytest.raises(glyphfold.InputError, match="low must be"):
            glyphfold.Compactor(budget=1000, **bad)
    with pytest.raises(glyphfold.InputError, match="budget="):
        glyphfold.Compactor()
    with pytest.raises(glyphfold.InputError, match="own"):
        glyphfold.Compactor(budget=1000, dry_run=True)


def test_the_same_history_again_is_a_hit_and_a_new_conversation_starts_over():
    full = openai_history(30, chars=6000)
    c = glyphfold.Compactor(budget=20_000)
    a = c(full)
    assert a.action == "compact"
    b = c(copy.deepcopy(full))
    assert b.action == "hit" and _dump(b.messages) == _dump(a.messages)
    other = openai_history(30, chars=6000, seed=7)
    assert c(other).action == "compact"  # does not extend the last input: compacted afresh


def test_cache_control_markers_are_not_content():
    """A harness that moves its marker to the newest message still extends the history."""
    h = anthropic_history(30, chars=6000)
    c = glyphfold.Compactor(budget=20_000)
    first = {"system": h["system"], "messages": copy.deepcopy(h["messages"][:41])}
    first["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    assert c(first).action == "compact"
    second = {"system": h["system"], "messages": copy.deepcopy(h["messages"][:43])}
    second["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    fitted = c(second)
    assert fitted.action == "append"
    marks = _dump(fitted.messages).count("cache_control")
    assert marks <= 2  # the harness's newest marker (and ours on a snapshot); stale ones gone
    assert fitted.messages["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    a = content_digests("s", None, [{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    b = content_digests(
        "s",
        None,
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    )
    assert a == b


def test_inputs_are_never_mutated_and_outputs_are_fresh():
    full = openai_history(30, chars=6000)
    before = copy.deepcopy(full)
    c = glyphfold.Compactor(budget=20_000)
    f1 = c(full[:40])
    f1.messages.append({"role": "user", "content": "caller scribbles on the output"})
    f2 = c(full[:42])
    assert full == before
    assert f2.action == "append"
    assert "caller scribbles" not in _dump(f2.messages)


def test_tools_count_toward_the_trigger():
    full = openai_history(10, chars=4000)
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"x": "y" * 8000}}}]
    budget = glyphfold.estimate_history_tokens(full, image_policy="all") + 100
    assert not glyphfold.needs_compaction(full, budget=budget)
    assert glyphfold.needs_compaction(full, budget=budget, tools=tools)
    c = glyphfold.Compactor(budget=budget)
    assert not c.needs_compaction(full)
    assert c.needs_compaction(full, tools=tools)
    fitted = c(full, tools=tools)
    assert fitted.action == "compact" and fitted.tokens <= budget


def test_one_result_over_the_budget_goes_through_inside_the_window():
    """Budget is a target, the window the hard limit."""
    h = openai_history(6, chars=2000)
    h.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "big",
                    "type": "function",
                    "function": {"name": "bash", "arguments": "{}"},
                }
            ],
        }
    )
    h.append({"role": "tool", "tool_call_id": "big", "content": "word " * 12_000})
    with pytest.raises(glyphfold.ContextOverflowError):
        glyphfold.Compactor(budget=8_000)(h)
    fitted = glyphfold.Compactor(budget=8_000, window=40_000)(h)
    assert fitted.action == "compact" and fitted.over_budget
    assert 8_000 < fitted.tokens <= 40_000


def test_concurrent_calls_are_serialised():
    full = openai_history(40, chars=6000)
    c = glyphfold.Compactor(budget=30_000)
    c(full[:60])
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            f = c(full[:n])
            assert f.tokens <= c.budget
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in (62, 64, 66, 68, 70, 72)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_canonical_histories_append_too():
    full = glyphfold.to_canonical(openai_history(40, chars=6000))
    c = glyphfold.Compactor(budget=30_000)
    fits = [c(full.replace_messages(full.messages[:n])) for n in range(4, len(full.messages), 2)]
    for prev, cur in itertools.pairwise(fits):
        if cur.action == "append":
            assert cur.compacted.messages[: len(prev.compacted.messages)] == (
                prev.compacted.messages
            )
    assert {"compact", "append"} <= {f.action for f in fits}


def test_markers_stay_within_the_four_breakpoint_limit():
    """Ours on the newest block + the harness's on system, tools and its newest messages."""
    h = anthropic_history(30, chars=6000)
    system = [{"type": "text", "text": h["system"], "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": "bash", "input_schema": {}, "cache_control": {"type": "ephemeral"}}]
    c = glyphfold.Compactor(budget=20_000, rungs=("snapshot",))
    for n in (41, 43, 45):
        msgs = copy.deepcopy(h["messages"][:n])
        for m in msgs[-2:]:
            m["content"][-1]["cache_control"] = {"type": "ephemeral"}
        before = copy.deepcopy(msgs)
        fitted = c({"system": system, "messages": msgs}, tools=tools)
        assert msgs == before
        marks = _dump(fitted.messages).count('"cache_control"') + 1  # + the tools'
        assert marks <= 4, (n, fitted.action, marks)
        assert fitted.messages["messages"][-1]["content"][-1].get("cache_control")


# ---------------------------------------------------------------- the append path (item 2)


def test_an_append_prices_only_the_new_messages(monkeypatch):
    """Issue 19 item 2: appending a few messages does not re-price the whole history."""
    from glyphfold.compaction.history import counters

    full = openai_history(40, chars=6000)
    c = glyphfold.Compactor(budget=30_000)
    priced: list[int] = []
    real = counters.estimate_history_tokens

    def spy(history, **kw):
        priced.append(
            len(history.get("messages", history) if isinstance(history, dict) else history)
        )
        return real(history, **kw)

    monkeypatch.setattr(counters, "estimate_history_tokens", spy)
    appends = 0
    for n in range(4, len(full) + 1, 2):
        priced.clear()
        fitted = c(full[:n])
        if fitted.action != "append":
            continue
        appends += 1
        assert max(priced) <= 2, priced  # the two new messages, never the history
        # and the figure is the one a whole re-pricing gives
        assert fitted.tokens == real(fitted.compacted, profile="anthropic", image_policy="all")
    assert appends >= 5


def test_what_the_caller_changes_in_an_output_is_not_what_is_remembered():
    full = openai_history(40, chars=6000)
    c = glyphfold.Compactor(budget=30_000)
    n = 4
    while True:  # up to the first append after a compaction
        last = c(full[:n])
        if last.action == "append" and c.compactions:
            break
        n += 2
    sent = _dump(last.messages)
    mine = {id(m) for m in full}
    for out in (last.messages, last.compacted):  # the caller scribbles over what it got
        for m in out:
            if id(m) not in mine:  # (its own new messages are its history: not those)
                m["content"] = "changed"
                m.pop("x_glyphfold", None)
    nxt = c(full[: n + 2])
    assert nxt.action == "append"
    assert _dump(nxt.messages[: len(last.messages)]) == sent


def test_long_strings_seen_again_give_the_same_digests():
    """The digests skip hashing a long string object seen in the previous call; the
    digests are the same as without that shortcut, and a changed string is seen."""
    h = anthropic_history(12, chars=3000)
    system, items = h["system"], h["messages"]
    plain = content_digests("s", system, items)
    seen: dict = {}
    now: dict = {}
    assert content_digests("s", system, items, seen=seen, now=now) == plain
    assert now  # the long tool results were collected
    again: dict = {}
    assert content_digests("s", system, items, seen=now, now=again) == plain
    changed = copy.deepcopy(items)
    block = changed[4]["content"][0]  # a tool result: a long string
    block["content"] = block["content"][:-1] + "!"
    assert content_digests("s", system, changed, seen=again)[4:] != plain[4:]
    assert content_digests("s", system, changed, seen=again)[:4] == plain[:4]


def test_nbytes_follows_the_remembered_output():
    full = openai_history(40, chars=6000)
    c = glyphfold.Compactor(budget=30_000)
    seen = set()
    for n in range(4, len(full) + 1, 2):
        f = c(full[:n])
        seen.add(f.action)
        if f.action == "none":
            assert c.nbytes == 0
            continue
        data = json.dumps(_strip_markers(f.compacted), ensure_ascii=False, separators=(",", ":"))
        assert c.nbytes == pytest.approx(len(data.encode()), rel=0.01)
    assert {"compact", "append"} <= seen


def _strip_markers(x):
    if isinstance(x, dict):
        return {k: _strip_markers(v) for k, v in x.items() if k != "cache_control"}
    if isinstance(x, list):
        return [_strip_markers(v) for v in x]
    return x


def test_a_retry_and_an_older_marker_keep_the_callers_breakpoints():
    """The remembered output keeps no harness marker; the caller's, on messages the
    output holds unchanged, are placed again: a retry of the same request (a hit) is
    cached up to its end like the first try, and a marker on the message before the
    newest stays (issue 19: a hit sent without the harness's marker was billed 1x)."""
    h = anthropic_history(30, chars=6000)
    cc = {"type": "ephemeral"}

    def request(n: int, marked: tuple[int, ...] = (-1,)) -> dict:
        msgs = copy.deepcopy(h["messages"][:n])
        for i in marked:
            msgs[i]["content"][-1]["cache_control"] = cc
        return {"system": h["system"], "messages": msgs}

    c = glyphfold.Compactor(budget=20_000)
    first = c(request(41))
    assert first.action == "compact"
    again = c(request(41))
    assert again.action == "hit"
    assert again.messages["messages"][-1]["content"][-1]["cache_control"] == cc
    assert _dump(again.messages).replace('"cache_control": {"type": "ephemeral"}, ', "") == _dump(
        first.messages
    ).replace('"cache_control": {"type": "ephemeral"}, ', "")
    nxt = c(request(43, marked=(-1, -3)))
    assert nxt.action == "append"
    msgs = nxt.messages["messages"]
    assert msgs[-1]["content"][-1]["cache_control"] == cc
    assert msgs[-3]["content"][-1]["cache_control"] == cc
    assert _dump(nxt.messages).count("cache_control") <= 4
