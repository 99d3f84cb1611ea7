"""The cyclic collector is paused while a model-free compaction runs (issue 22).

At 10^5 messages the collector's full passes over the heap were a sixth of a
``compact``: it is off while the parse and the rungs run, and on again afterwards,
whatever the outcome; a caller's own setting is kept, and a ladder that calls a model
(the summary rung) leaves it running.
"""

from __future__ import annotations

import gc

import pytest
from test_plan_pricing import _synth

import glyphfold
from glyphfold.compaction.ladder.gc_pause import gc_paused, model_free
from glyphfold.compaction.ladder.rungs.base import RungOutcome
from glyphfold.errors import ContextOverflowError


def _history(n: int = 12) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "fix the bug " * 50}]
    for i in range(n):
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"c{i}", "name": "bash", "input": {}}],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"c{i}", "content": "x" * 900}],
            }
        )
    msgs.append({"role": "user", "content": "go on"})
    return msgs


class _Probe:
    """A rung that records whether the collector runs while rungs run."""

    name = "probe"

    def __init__(self, model_free: bool = True) -> None:
        self.model_free = model_free
        self.seen: list[bool] = []

    def apply(self, history, ctx):
        self.seen.append(gc.isenabled())
        return RungOutcome(history, None)


@pytest.fixture
def gc_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_compact_recover_shake_pause_and_restore_the_collector(gc_on):
    probe = _Probe()
    glyphfold.compact(_history(), budget=400, rungs=[probe, "trim"])
    assert probe.seen == [False]
    assert gc.isenabled()
    glyphfold.recover(_history(), rungs=[probe, "trim"])
    assert probe.seen == [False, False]
    assert gc.isenabled()
    glyphfold.shake(_history())
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_error(gc_on):
    probe = _Probe()
    with pytest.raises(ContextOverflowError):
        glyphfold.compact(_history(), budget=10, rungs=[probe])
    assert probe.seen == [False]
    assert gc.isenabled()


def test_a_caller_that_disabled_the_collector_keeps_it_disabled(gc_on):
    gc.disable()
    glyphfold.compact(_history(), budget=400, rungs=["trim"])
    assert not gc.isenabled()


def test_a_ladder_that_calls_a_model_keeps_the_collector_running(gc_on):
    probe = _Probe(model_free=False)
    glyphfold.compact(_history(), budget=400, rungs=[probe, "trim"])
    assert probe.seen == [True]
    assert gc.isenabled()


def test_gc_paused_and_model_free(gc_on):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the inner block does not turn it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with gc_paused(False):
        assert gc.isenabled()
    assert model_free([_Probe(), object()])
    assert not model_free([_Probe(), _Probe(model_free=False)])


def test_a_compaction_leaves_no_garbage_cycles(gc_on):
    """Everything a compaction makes is freed by reference counting when it returns:
    a cycle (the planner and its prices were one) keeps 10^6 objects of a 10^5-message
    compact alive until the collector finds them, and compact pauses the collector."""
    h = _synth(300)  # ~1,000 chars of varied words a message: the lossy search runs
    glyphfold.compact(h, budget=4000)  # warm: imports and caches are not garbage
    gc.collect()
    gc.disable()
    try:
        r = glyphfold.compact(h, budget=4000)
        assert r.pages  # the snapshot rung ran
        assert gc.collect() == 0
    finally:
        gc.enable()
