"""The store's behaviour, the same suite on SQLite and PostgreSQL (SPEC §6)."""

from __future__ import annotations

import copy
import itertools
import json
import sqlite3
import threading

import psycopg
import pytest
from histories import anthropic_turn, openai_turn

from glyphfold.compaction.history.events import EventBus
from glyphfold.compaction.history.messages import to_canonical
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import validate_history
from glyphfold.compaction.store import CheckpointDropped, open_store
from glyphfold.errors import (
    ConflictError,
    HistoryFormatError,
    InputError,
    NotFoundError,
    StoreError,
)

SYSTEM = {"role": "system", "content": "You are a careful coding agent."}


def _grow(store, conv, turns, *, start=0, tag=""):
    ids = []
    for n in range(start, start + turns):
        ids.append(store.commit_turn(conv, openai_turn(n, tag=tag)))
    return ids


def test_commit_turn_round_trips_payloads_exactly(store):
    """SPEC §6.3: messages come back exactly as committed; the input is not mutated."""
    conv = store.create_conversation(title="demo")
    turn = [SYSTEM, *openai_turn(0, tools=2)]
    turn[1]["x_extra"] = {"nested": [1, 2.5, None, "ß"], "z": True, "a": 1}
    before = copy.deepcopy(turn)
    ids = store.commit_turn(conv, turn)
    assert turn == before
    assert len(ids) == len(turn) == len(set(ids))
    got = store.path(conv)
    assert json.dumps(got) == json.dumps(turn)  # same key order, same values
    assert store.export(conv) == turn


def test_parent_pointers_and_tip(store):
    """SPEC §6.3: every message records its parent; the conversation names its tip."""
    conv = store.create_conversation()
    first = store.commit_turn(conv, openai_turn(0))
    second = store.commit_turn(conv, openai_turn(1))
    records = store.path_records(conv)
    assert [r.id for r in records] == first + second
    assert records[0].parent_id is None
    assert all(b.parent_id == a.id for a, b in itertools.pairwise(records))
    assert [r.depth for r in records] == list(range(len(records)))
    assert store.tip(conv) == second[-1]
    assert [r.ends_turn for r in records].count(True) == 2
    assert records[0].turn_start and records[len(first)].turn_start
    assert store.conversation(conv).message_count == len(records)
    assert store.check() == []


def test_concurrent_writers_conflict_and_loser_loses_nothing(store_url):
    """SPEC §6.1: compare-and-set on the tip; the loser gets ConflictError, nothing written."""
    with open_store(store_url) as a, open_store(store_url) as b:
        conv = a.create_conversation()
        a.commit_turn(conv, openai_turn(0))
        b.path(conv)  # b has now seen the tip
        a.commit_turn(conv, openai_turn(1, tag="a"))
        count = a.conversation(conv).message_count
        with pytest.raises(ConflictError, match="moved"):
            b.commit_turn(conv, openai_turn(1, tag="b"))
        assert a.conversation(conv).message_count == count
        assert "step b1" not in json.dumps(a.path(conv))
        # the loser re-reads and wins the next round; nothing of either is lost
        b.tip(conv)
        b.commit_turn(conv, openai_turn(1, tag="b"))
        text = json.dumps(a.path(conv))
        assert "step a1" in text and "step b1" in text
        with pytest.raises(ConflictError):
            a.commit_turn(conv, openai_turn(2), expected_tip=None)


def test_branch_moves_only_the_pointer_and_lists_abandoned_path(store):
    """SPEC §6.4: branch writes nothing but the tip; the old path stays and is listed."""
    conv = store.create_conversation()
    t0 = store.commit_turn(conv, openai_turn(0))
    t1 = store.commit_turn(conv, openai_turn(1))
    t2 = store.commit_turn(conv, openai_turn(2))
    count = store.conversation(conv).message_count
    store.branch(conv, t0[-1])
    assert store.conversation(conv).message_count == count
    assert [m.id for m in store.path_records(conv)] == t0
    alt = store.commit_turn(conv, openai_turn(1, tag="alt"))
    branches = store.branches(conv)
    assert [b.tip_id for b in branches] == [alt[-1], t2[-1]]
    assert branches[0].is_current and not branches[1].is_current
    assert branches[1].fork_point == t0[-1]
    assert branches[1].abandoned_ids == tuple(t1 + t2)
    abandoned_copy = store.fork(conv, t2[-1])  # an abandoned branch can be forked too
    assert store.path(abandoned_copy) == [*openai_turn(0), *openai_turn(1), *openai_turn(2)]
    store.branch(conv, t2[-1])  # going back is one more pointer move
    assert [m.id for m in store.path_records(conv)] == t0 + t1 + t2
    with pytest.raises(InputError, match="inside a turn"):
        store.branch(conv, t1[1])
    store.branch(conv, None)
    assert store.path(conv) == []
    assert store.check() == []


def test_fork_copies_with_new_ids_and_never_shares_rows(store):
    """SPEC §6.5: fork copies the path into a new conversation with new ids."""
    conv = store.create_conversation(title="origin")
    t0 = store.commit_turn(conv, openai_turn(0))
    store.checkpoint(conv, "after-0")
    t1 = store.commit_turn(conv, openai_turn(1))
    fork = store.fork(conv)
    assert fork != conv
    assert store.path(fork) == store.path(conv)
    fork_ids = [m.id for m in store.path_records(fork)]
    assert not set(fork_ids) & set(t0 + t1)
    assert store.conversation(fork).forked_from == conv
    assert [c.label for c in store.checkpoints(fork)] == ["after-0"]
    store.commit_turn(fork, openai_turn(2, tag="fork"))
    store.commit_turn(conv, openai_turn(2, tag="orig"))
    assert "step fork2" not in json.dumps(store.path(conv))
    assert "step orig2" not in json.dumps(store.path(fork))
    early = store.fork(conv, t0[-1])
    assert store.path(early) == openai_turn(0)
    assert store.rewind(fork, "after-0").to_message == fork_ids[len(t0) - 1]


def test_checkpoint_rewind_digest_persists_across_reopen(store_url):
    """SPEC §6.6: rewind returns to the label with a digest; checkpoints persist."""
    with open_store(store_url) as store:
        conv = store.create_conversation()
        t0 = store.commit_turn(conv, openai_turn(0))
        cp = store.checkpoint(conv, "clean")
        assert cp.message_id == t0[-1]
        store.commit_turn(conv, openai_turn(1, tools=2))
        store.commit_turn(conv, openai_turn(2, tools=0))
    with open_store(store_url) as store:  # a restart keeps the label
        rewind = store.rewind(conv, "clean")
        assert store.tip(conv) == t0[-1]
        assert "2 turn(s)" in rewind.digest
        assert "read_file" in rewind.digest and "src/f1_1.py" in rewind.digest
        assert len(rewind.abandoned_ids) == 5 + 2
        store.commit_turn(conv, openai_turn(1, tag="retry"))
        second = store.rewind(conv, "clean", digest="tried X, it failed on Y")
        assert second.digest == "tried X, it failed on Y"
        assert [r.digest for r in store.rewinds(conv)] == [rewind.digest, second.digest]
        assert len(store.branches(conv)) == 3


def test_unknown_label_and_duplicate_label(store):
    """SPEC §6.6: a rewind to an unknown label is a clear error and changes nothing."""
    conv = store.create_conversation()
    store.commit_turn(conv, openai_turn(0))
    store.checkpoint(conv, "a")
    tip = store.commit_turn(conv, openai_turn(1))[-1]
    with pytest.raises(NotFoundError, match=r"no checkpoint 'nope'.*'a'"):
        store.rewind(conv, "nope")
    assert store.tip(conv) == tip
    assert store.rewinds(conv) == []
    with pytest.raises(InputError, match="already exists"):
        store.checkpoint(conv, "a")
    with pytest.raises(InputError, match="non-empty"):
        store.checkpoint(conv, " ")


def test_compaction_drops_checkpoint_never_repoints(store_url):
    """SPEC §6.6: a checkpoint whose target a compaction replaced is dropped (event + record)."""
    events = []
    bus = EventBus()
    bus.subscribe(events.append)
    with open_store(store_url, bus=bus) as store:
        _compaction_drops_checkpoint(store, events)


def _compaction_drops_checkpoint(store, events):
    conv = store.create_conversation()
    t0 = store.commit_turn(conv, openai_turn(0))
    store.checkpoint(conv, "early")
    t1 = store.commit_turn(conv, openai_turn(1))
    store.checkpoint(conv, "late")
    store.commit_turn(conv, openai_turn(2))
    ledger = [{"rung": "snapshot", "removed": len(t0), "tokens_saved": 120}]
    record = store.record_compaction(conv, ledger, ["user: step 0 ..."], t0)
    assert record.dropped_checkpoints == ("early",)
    assert events == [CheckpointDropped(conv, "early", t0[-1], record.id)]
    assert [c.dropped for c in store.checkpoints(conv)] == [True, False]
    tip = store.tip(conv)
    with pytest.raises(NotFoundError, match="dropped"):
        store.rewind(conv, "early")
    assert store.tip(conv) == tip
    assert store.rewind(conv, "late").to_message == t1[-1]
    stored = store.compactions(conv)
    assert len(stored) == 1 and stored[0].ledger == ledger
    assert stored[0].snapshot_sources == ("user: step 0 ...",)
    assert stored[0].replaced_message_ids == tuple(t0)
    assert store.restore_compaction(record.id) == openai_turn(0)


def test_record_compaction_rejects_foreign_messages_atomically(store):
    """Bad input to record_compaction writes nothing."""
    a = store.create_conversation()
    b = store.create_conversation()
    ids_a = store.commit_turn(a, openai_turn(0))
    store.checkpoint(a, "cp")
    ids_b = store.commit_turn(b, openai_turn(0))
    with pytest.raises(NotFoundError):
        store.record_compaction(a, {"x": 1}, [], ids_a + ids_b)
    with pytest.raises(InputError, match="JSON"):
        store.record_compaction(a, {"x": object()}, [], ids_a)
    assert store.compactions(a) == []
    assert not store.checkpoints(a)[0].dropped


@pytest.mark.parametrize("budget", [0, 150, 400, 10**9])
def test_resume_cuts_at_turn_boundary_without_orphans(store, budget):
    """SPEC §6.2: resume keeps the most recent turns that fit, never an orphan tool result."""
    conv = store.create_conversation()
    store.commit_turn(conv, [SYSTEM, *openai_turn(0, tools=3)])
    for n in range(1, 12):
        store.commit_turn(conv, openai_turn(n, tools=n % 3))
    full = store.path(conv)
    out = store.resume(conv, budget=budget)
    assert out[0] == SYSTEM
    validate_history(out)  # the provider rules: no orphan tool result, pairs intact
    body = out[1:]
    assert body[0]["role"] == "user"
    assert full[-len(body) :] == body  # a suffix of the path
    assert body[-len(openai_turn(11, tools=2)) :] == openai_turn(11, tools=2)
    tokens = {m.id: m.tokens for m in store.path_records(conv)}
    if budget >= sum(tokens.values()):
        assert out == full
    elif budget == 0:
        assert body == openai_turn(11, tools=2)
    else:
        records = store.path_records(conv)
        used = records[0].tokens + sum(m.tokens for m in records[-len(body) :])
        newest = len(openai_turn(11, tools=2))
        assert used <= budget or len(body) == newest
        # maximal: the turn just before the cut would not have fitted
        start = len(records) - len(body)
        prev = max(i for i in range(1, start) if records[i].turn_start)
        assert used + sum(m.tokens for m in records[prev:start]) > budget


def test_resume_never_starts_on_tool_results_message(store):
    """SPEC §6.2 / §1: a '[Tool results]' user message belongs to the previous turn."""
    conv = store.create_conversation()
    store.commit_turn(conv, [{"role": "user", "content": "task " + "x" * 400}])
    store.commit_turn(
        conv,
        [
            {"role": "assistant", "content": "running"},
            {"role": "user", "content": "[Tool results] exit 0 " + "y" * 400},
            {"role": "assistant", "content": "fine"},
        ],
    )
    out = store.resume(conv, budget=50)
    assert out[0]["content"].startswith("task")


def test_anthropic_history_round_trip_and_resume(store):
    """Anthropic {'system', 'messages'} histories come back in the same wire kind."""
    conv = store.create_conversation()
    first = {"system": "Be brief.", "messages": anthropic_turn(0)}
    store.commit_turn(conv, first)
    for n in range(1, 6):
        store.commit_turn(conv, anthropic_turn(n))
    exported = store.export(conv)
    assert exported["system"] == "Be brief."
    assert exported["messages"][:4] == anthropic_turn(0)
    assert store.conversation(conv).format == "anthropic"
    resumed = store.resume(conv, budget=120)
    assert resumed["system"] == "Be brief."
    kept = resumed["messages"]
    assert 4 <= len(kept) < 24 and len(kept) % 4 == 0
    assert kept == exported["messages"][-len(kept) :]
    assert estimate_history_tokens(resumed) <= 120
    wider = {"system": "Be brief.", "messages": exported["messages"][-len(kept) - 4 :]}
    assert estimate_history_tokens(wider) > 120  # the cut keeps as much as fits
    validate_history(resumed)
    with pytest.raises(HistoryFormatError):
        store.commit_turn(conv, openai_turn(9))
    with pytest.raises(InputError, match="different system"):
        store.commit_turn(conv, {"system": "Other.", "messages": anthropic_turn(9)})
    assert len(store.path(conv)) == 24


def test_bad_messages_write_nothing(store):
    """Malformed turns are rejected before anything is written."""
    conv = store.create_conversation()
    store.commit_turn(conv, openai_turn(0))
    count = store.conversation(conv).message_count
    for bad in ([], [{"content": "no role"}], ["text"], "text", [{"role": "wizard"}]):
        with pytest.raises((InputError, HistoryFormatError)):
            store.commit_turn(conv, bad)
    mixed = [*openai_turn(1), *anthropic_turn(1)]
    with pytest.raises(HistoryFormatError, match="mix"):
        store.commit_turn(conv, mixed)
    assert store.conversation(conv).message_count == count


def test_unknown_conversation_is_a_clear_error(store):
    """A conversation id that does not exist -> NotFoundError naming it, for every call."""
    calls = [
        lambda s: s.commit_turn("missing", openai_turn(0)),
        lambda s: s.path("missing"),
        lambda s: s.branch("missing", None),
        lambda s: s.fork("missing"),
        lambda s: s.checkpoint("missing", "x"),
        lambda s: s.rewind("missing", "x"),
        lambda s: s.resume("missing", budget=10),
        lambda s: s.export("missing"),
        lambda s: s.record_compaction("missing", [], [], []),
    ]
    for call in calls:
        with pytest.raises(NotFoundError, match="missing"):
            call(store)
    assert store.conversations() == []


def test_dump_load_round_trip_and_orphan_parent_rejected(store):
    """Import validates the tree first: a message without a parent -> error, nothing written."""
    conv = store.create_conversation(title="t")
    t0 = store.commit_turn(conv, openai_turn(0))
    store.checkpoint(conv, "cp")
    store.commit_turn(conv, openai_turn(1))
    store.branch(conv, t0[-1])
    store.commit_turn(conv, openai_turn(1, tag="alt"))
    dump = json.loads(json.dumps(store.dump(conv)))
    copy_id = store.load(dump)
    assert store.path(copy_id) == store.path(conv)
    assert len(store.branches(copy_id)) == 2
    assert [c.label for c in store.checkpoints(copy_id)] == ["cp"]
    before = len(store.conversations())
    broken = copy.deepcopy(dump)
    broken["messages"][3]["parent"] = 999_999
    with pytest.raises(InputError, match="parent 999999"):
        store.load(broken)
    mid = copy.deepcopy(dump)
    mid["conversation"]["tip"] = mid["messages"][1]["id"]
    with pytest.raises(InputError, match="inside a turn"):
        store.load(mid)
    with pytest.raises(InputError, match="not a glyphfold transcript"):
        store.load({"messages": []})
    assert len(store.conversations()) == before


def test_import_history_commits_one_turn_per_user_message(store):
    """A plain wire history imports as whole turns (every tip a turn boundary)."""
    history = [SYSTEM, *openai_turn(0), *openai_turn(1), *openai_turn(2)]
    conv = store.import_history(history, title="imported")
    assert store.path(conv) == history
    boundaries = [m for m in store.path_records(conv) if m.ends_turn]
    assert len(boundaries) == 3
    assert store.check() == []


def test_conversation_prefix_resolution(store):
    """Humans type id prefixes: unique prefixes resolve, unknown ones are NotFoundError."""
    conv = store.create_conversation()
    assert store.resolve(conv[:8]) == conv
    assert store.resolve(conv) == conv
    with pytest.raises(NotFoundError):
        store.resolve("zzzz")


def test_conversations_listing(store):
    """conversations() lists every conversation, most recently updated first."""
    a = store.create_conversation(title="a")
    b = store.create_conversation(title="b")
    store.commit_turn(a, openai_turn(0))
    listed = store.conversations()
    assert [c.id for c in listed] == [a, b]
    assert listed[0].message_count == len(openai_turn(0))
    assert listed[1].tip_id is None


def test_wrong_urls_are_clear_errors(tmp_path):
    """Bad URLs name the problem and the fix."""
    with pytest.raises(StoreError, match="unknown store URL scheme 'mysql'"):
        open_store("mysql://u@h/db")
    with pytest.raises(StoreError, match="no path"):
        open_store("sqlite://x.db")
    with pytest.raises(StoreError, match="does not exist"):
        open_store(f"sqlite:///{tmp_path}/no/such/dir/x.db")
    with pytest.raises(StoreError, match="synchronous"):
        open_store(f"sqlite:///{tmp_path}/x.db?synchronous=off")
    with pytest.raises(StoreError, match=r"cannot connect.*\*\*\*") as info:
        open_store("postgresql://bob:hunter2@127.0.0.1:1/db")
    assert "hunter2" not in str(info.value)
    assert not (tmp_path / "x.db").exists()


def test_pointer_moves_wait_for_a_writer_holding_the_conversation(store, store_url):
    """Rewind serialises with another writer of the conversation and sees its result."""
    conv = store.create_conversation()
    t0 = store.commit_turn(conv, openai_turn(0))
    store.checkpoint(conv, "cp")
    store.commit_turn(conv, openai_turn(1))
    # another writer holds the conversation and moves its tip back to t0
    if store_url.startswith("sqlite"):
        blocker = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        blocker.execute("UPDATE conversations SET tip_id = ? WHERE id = ?", (t0[-1], conv))
    else:
        blocker = psycopg.connect(store_url, autocommit=True)
        blocker.execute("BEGIN")
        blocker.execute("SELECT id FROM conversations WHERE id = %s FOR UPDATE", (conv,))
        blocker.execute("UPDATE conversations SET tip_id = %s WHERE id = %s", (t0[-1], conv))
    done = threading.Event()
    results = []

    def rewind():
        try:
            results.append(store.rewind(conv, "cp"))
        except Exception as exc:  # reported by the assertion below
            results.append(exc)
        done.set()

    worker = threading.Thread(target=rewind)
    worker.start()
    assert not done.wait(0.4)  # waits for the other writer
    blocker.execute("COMMIT")
    blocker.close()
    worker.join(30)
    (result,) = results
    assert not isinstance(result, Exception), result
    # it read the tip after the other writer committed, not a stale one
    assert result.from_tip == t0[-1] and result.abandoned_ids == ()


def test_commit_turn_accepts_the_canonical_model(store):
    """A core History commits as its wire form (same payloads as the wire input)."""
    conv = store.create_conversation()
    store.commit_turn(conv, to_canonical({"system": "Be brief.", "messages": anthropic_turn(0)}))
    assert store.export(conv) == {"system": "Be brief.", "messages": anthropic_turn(0)}
