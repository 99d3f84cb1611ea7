"""Python's cyclic garbage collector paused while one compaction runs (issue 22).

A compaction parses the history into hundreds of thousands of small immutable objects
(messages, blocks, tuples) that live until it returns, and its rungs build as many
again. They form no cycles that outlive the compaction, yet each new generation of them
sets off a full collection that walks the whole heap, the caller's history included: at
10^5 messages five full collections took 2.3 of 12.4 s of one ``compact``. Reference
counting frees everything as usual while the collector is paused; only garbage cycles
wait, and the collector resumes its normal schedule afterwards.

A ladder with a rung that calls a model (the summary rung: a network call of seconds,
in the caller's client library) keeps the collector running: that time is the model's,
and the client's garbage is not bounded by the history.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator

__all__ = ["gc_paused", "model_free"]


def model_free(rungs: Iterable[object]) -> bool:
    """True when no rung of ``rungs`` calls a model (``model_free`` is not False)."""
    return all(getattr(r, "model_free", True) is not False for r in rungs)


@contextlib.contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Disable the cyclic collector for the block (when ``pause``); re-enable it after.

    Only a collector this block disabled is re-enabled: a caller that disabled it keeps
    it disabled. With compactions in several threads, the one that disabled it enables
    it again when it finishes (the others go on with it running, as without a pause),
    so the collector never stays off past a compaction.
    """
    disabled = pause and gc.isenabled()
    if disabled:
        gc.disable()
    try:
        yield
    finally:
        if disabled:
            gc.enable()
