"""A second lossy pass cuts the OLDEST imaged steps first, never the newest (issue 23).

SPEC §5.9 (words cut only at the last, oldest first) across a loop (§5.10): pass 1
images the old steps of a long tool loop whole; the loop goes on; pass 2, with a
budget that forces words to be cut, must shorten pass 1's steps (the oldest) before
the newer ones, both when the earlier block is merged because it must be
(the default, frozen blocks) and when every pass merges (``freeze_blocks=False``).
The pages' text is what the renderer is given (a recording renderer).
"""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
import shapes
from test_words import big_result, snap_entry, snapshots

from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.compaction.history.validate import find_violations
from glyphfold.compaction.ladder.api import compact
from glyphfold.compaction.ladder.registry import LadderConfig
from glyphfold.compaction.ladder.rungs.snapshot import _default_renderer

LINES = 200
MID = LINES // 2  # a head+tail cap loses this line first
FIRST, MORE = 20, 6


def _steps(b: shapes.Builder, a: int, z: int) -> shapes.Builder:
    for k in range(a, z):
        result = big_result(k, LINES)
        b.step(f"Reading module {k}.", [("read_file", {"path": f"m{k}.py"}, result, False)])
    return b


def _segments(text: str, n: int) -> dict[int, str]:
    """Each step's stretch of ``text`` (from its 'Reading module k.' to the next one's)."""
    out = {}
    for k in range(n):
        a = text.find(f"Reading module {k}.")
        if a >= 0:
            b = text.find(f"Reading module {k + 1}.", a)
            out[k] = text[a : b if b > 0 else len(text)]
    return out


@pytest.mark.parametrize("freeze", [True, False], ids=["frozen-default", "merging"])
def test_a_second_lossy_pass_cuts_the_oldest_steps_first(freeze):
    rendered: list[str] = []

    def recording(text, **kw):
        rendered.append(text)
        return _default_renderer()(text, **kw)

    cfg = LadderConfig(freeze_blocks=freeze)
    b = _steps(shapes.Builder("openai").user("Read the modules, say what they compute."), 0, FIRST)
    wire = b.wire()
    first = compact(
        wire,
        budget=estimate_history_tokens(wire) // 2,
        rungs="snapshot",
        config=cfg,
        renderer=recording,
    )
    e1 = snap_entry(first)
    assert not e1.extra["lossy"]
    old = [k for k, s in _segments(rendered[-1], FIRST).items() if f"value_{k}_{MID} " in s]
    assert len(old) >= FIRST - 4  # pass 1: the old steps whole on the pages

    # the loop goes on: six more steps after pass 1's output, as a harness stores it
    more = _steps(shapes.Builder("openai"), FIRST, FIRST + MORE).wire()
    history = json.loads(json.dumps(first.messages)) + [m for m in more if m["role"] != "system"]
    rendered.clear()
    second = compact(
        history,
        budget=estimate_history_tokens(history) * 4 // 10,  # words must go (SPEC §5.9)
        rungs="snapshot",
        config=cfg,
        renderer=recording,
    )
    e2 = snap_entry(second)
    assert second.fits and e2.extra["lossy"] and e2.extra["dropped_chars"] > 0
    assert find_violations(second.messages) == []
    if freeze:  # the frozen block cannot be cut as sent: merged, and the ledger says so
        assert e2.extra["merged_blocks"] == 1 and "merged" in e2.note
    assert rendered  # drawn from text; the last render is the one sent (a retry re-renders)
    pages = rendered[-1]
    (snap,) = snapshots(second)
    n = FIRST + MORE
    on_pages, source = _segments(pages, n), _segments(snap["x_glyphfold"]["source"], n)
    imaged = sorted(on_pages)
    assert set(old) <= set(imaged) and imaged[-1] >= FIRST  # old and new steps on the pages
    kept = {k: len(on_pages[k]) / len(source[k]) for k in imaged}  # share left on the pages
    whole = [k for k in imaged if f"value_{k}_{MID} " in on_pages[k]]
    cut = [k for k in imaged if k not in whole]
    assert cut and whole  # the budget cuts some steps, not all
    # oldest first: every cut step is older than every step left whole ...
    assert max(cut) < min(whole), (cut, whole)
    # ... and no step keeps a smaller share of its text than an older one (the same
    # cap leaves the same chars; a share differs by the labels' length: 0.46 vs 0.48)
    shares = [round(kept[k], 2) for k in imaged]
    assert all(a <= b + 0.05 for a, b in pairwise(shares)), shares
