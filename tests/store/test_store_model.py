"""Model-based test: random operation sequences against a naive in-memory session tree."""

from __future__ import annotations

import itertools

import hypothesis.strategies as st
from histories import openai_turn
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from glyphfold.compaction.history.validate import validate_history
from glyphfold.compaction.store import open_store
from glyphfold.errors import NotFoundError


class NaiveTree:
    """The reference: a dict of messages with parents, a tip, labels (SPEC §6.3-6.6)."""

    def __init__(self) -> None:
        self.parent: dict[int, int | None] = {}
        self.payload: dict[int, dict] = {}
        self.boundaries: list[int] = []
        self.tip: int | None = None
        self.labels: dict[str, int | None] = {}
        self.dropped: set[str] = set()

    def path(self, start: int | None) -> list[int]:
        out = []
        while start is not None:
            out.append(start)
            start = self.parent[start]
        return out[::-1]

    def leaves(self) -> set[int]:
        parents = {p for p in self.parent.values() if p is not None}
        out = {m for m in self.parent if m not in parents}
        return out | ({self.tip} if self.tip is not None else set())


class StoreMachine(RuleBasedStateMachine):
    """Drives the real store and the naive tree with the same operations."""

    conversations = Bundle("conversations")

    def __init__(self) -> None:
        super().__init__()
        self.store = open_store("sqlite:///:memory:")
        self.model: dict[str, NaiveTree] = {}
        self.tags = itertools.count()

    def teardown(self) -> None:
        self.store.close()

    @initialize(target=conversations)
    def first(self):
        conv = self.create()
        self.commit(conv, 1)  # start non-empty: most rules have nothing to do on an empty tip
        return conv

    @rule(target=conversations)
    def create(self):
        conv = self.store.create_conversation()
        self.model[conv] = NaiveTree()
        return conv

    @rule(conv=conversations, tools=st.integers(0, 2))
    def commit(self, conv, tools):
        turn = openai_turn(next(self.tags), tools=tools)
        ids = self.store.commit_turn(conv, turn)
        m = self.model[conv]
        parent = m.tip
        for i, payload in zip(ids, turn, strict=True):
            m.parent[i], m.payload[i], parent = parent, payload, i
        m.boundaries.append(ids[-1])
        m.tip = ids[-1]

    @rule(conv=conversations, data=st.data())
    def branch(self, conv, data):
        m = self.model[conv]
        target = data.draw(st.sampled_from([None, *m.boundaries]))
        self.store.branch(conv, target)
        m.tip = target

    @rule(target=conversations, conv=conversations)
    def fork(self, conv):
        new = self.store.fork(conv)
        m, copy = self.model[conv], NaiveTree()
        stored = self.store.path_records(new)
        old_path = m.path(m.tip)
        mapping = dict(zip(old_path, [s.id for s in stored], strict=True))
        for old, s in zip(old_path, stored, strict=True):
            copy.parent[s.id] = s.parent_id
            copy.payload[s.id] = m.payload[old]
        copy.boundaries = [mapping[b] for b in m.boundaries if b in mapping]
        copy.tip = mapping.get(m.tip) if m.tip is not None else None
        copy.labels = {
            k: (mapping[v] if v is not None else None)
            for k, v in m.labels.items()
            if k not in m.dropped and (v is None or v in mapping)
        }
        self.model[new] = copy
        return new

    @rule(conv=conversations, label=st.sampled_from(["a", "b", "c"]))
    def checkpoint(self, conv, label):
        m = self.model[conv]
        if label in m.labels:
            return
        self.store.checkpoint(conv, label)
        m.labels[label] = m.tip

    @rule(conv=conversations, label=st.sampled_from(["a", "b", "c"]))
    def rewind(self, conv, label):
        m = self.model[conv]
        if label not in m.labels or label in m.dropped:
            try:
                self.store.rewind(conv, label)
            except NotFoundError:
                return
            raise AssertionError(f"rewind to {label!r} should have failed")
        self.store.rewind(conv, label)
        m.tip = m.labels[label]

    @rule(conv=conversations, data=st.data())
    def compact(self, conv, data):
        m = self.model[conv]
        path = m.path(m.tip)
        if not path:
            return
        replaced = data.draw(st.lists(st.sampled_from(path), max_size=6, unique=True))
        live = {v for k, v in m.labels.items() if k not in m.dropped}
        labelled = sorted({v for v in live if v in path} - set(replaced))
        if labelled and data.draw(st.booleans()):  # often hit a checkpoint's target
            replaced.append(data.draw(st.sampled_from(labelled)))
        record = self.store.record_compaction(conv, {"run": 1}, ["text"], replaced)
        hit = {k for k, v in m.labels.items() if v in replaced and k not in m.dropped}
        assert set(record.dropped_checkpoints) == hit
        m.dropped |= hit

    @rule(conv=conversations, data=st.data())
    def compact_a_checkpoint(self, conv, data):
        """Label the tip, then compact a span that includes it (the drop path, SPEC §6.6)."""
        m = self.model[conv]
        if m.tip is None:
            return
        label = f"cp{next(self.tags)}"
        self.store.checkpoint(conv, label)
        m.labels[label] = m.tip
        path = m.path(m.tip)
        replaced = data.draw(st.lists(st.sampled_from(path), max_size=4, unique=True))
        if m.tip not in replaced:
            replaced.append(m.tip)
        record = self.store.record_compaction(conv, [], [], replaced)
        hit = {k for k, v in m.labels.items() if v in replaced and k not in m.dropped}
        assert set(record.dropped_checkpoints) == hit
        m.dropped |= hit
        try:
            self.store.rewind(conv, label)
        except NotFoundError:
            return
        raise AssertionError(f"rewind to dropped {label!r} should have failed")

    @invariant()
    def agrees_with_model(self):
        for conv, m in self.model.items():
            assert self.store.tip(conv) == m.tip
            assert self.store.path(conv) == [m.payload[i] for i in m.path(m.tip)]
            assert {b.tip_id for b in self.store.branches(conv)} == m.leaves()
            dropped = {c.label for c in self.store.checkpoints(conv) if c.dropped}
            assert dropped == m.dropped
            resumed = self.store.resume(conv, budget=0)
            if resumed:
                validate_history(resumed, format="openai")  # openai_turn() builds them
        assert self.store.check() == []


TestStoreModel = StoreMachine.TestCase
TestStoreModel.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
