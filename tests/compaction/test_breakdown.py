"""token_breakdown: the figures of ``glyphfold context`` as a library call (issue 9)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glyphfold import RoleTokens, estimate_history_tokens, token_breakdown
from glyphfold.compaction.history.breakdown import KINDS
from glyphfold.errors import InputError
from tests.compaction.core_histories import png_b64, snapshot, wire_histories


@settings(max_examples=60, deadline=None)
@given(wire_histories(), st.sampled_from(["spec", "all"]))
def test_roles_and_kinds_each_add_up_to_the_estimate(fh, image_policy):
    """SPEC §3.4: every row is priced as the total prices its message."""
    _, history = fh
    before = snapshot(history)
    bd = token_breakdown(history, image_policy=image_policy)
    assert bd.total == estimate_history_tokens(history, image_policy=image_policy)
    assert list(bd.by_kind) == list(KINDS)
    assert sum(bd.by_kind.values()) == bd.total
    assert all(v >= 0 for v in bd.by_kind.values()), bd.by_kind
    assert sum(r.tokens for r in bd.by_role.values()) == bd.total
    top_level = 1 if "system (top-level)" in bd.by_role else 0
    assert sum(r.messages for r in bd.by_role.values()) == len(bd.costs.messages) + top_level
    assert history == before  # inputs are never mutated


def test_images_inside_tool_results_count_as_images_and_largest_is_ordered():
    shot = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": png_b64(800, 600)},
    }
    history = {
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "Look at the page."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "captured"}, shot],
                    }
                ],
            },
            {"role": "assistant", "content": "A login form."},
        ],
    }
    bd = token_breakdown(history, image_policy="all")
    assert bd.format == "anthropic"
    assert bd.by_kind["images"] > 500  # an 800x600 image on the default profile
    assert bd.by_kind["tool calls"] > 0 and bd.by_kind["tool results"] > 0
    assert bd.by_role["system (top-level)"] == RoleTokens(1, bd.costs.system)
    assert bd.by_role["user"].messages == 2
    assert bd.largest(1) == [2]
    assert bd.largest(10) == sorted(range(4), key=lambda i: (-bd.costs.messages[i], i))
    assert bd.as_dict()["by_kind"] == dict(bd.by_kind)
    with pytest.raises(InputError, match="n must be >= 0"):
        bd.largest(-1)
