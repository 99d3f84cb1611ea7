"""The agent-loop benchmark's fake upstream prices requests as the providers cache them.

``benchmarks/loop_upstream.py`` is what the cost column of ``bench_loop.py`` (issue 19)
rests on: Anthropic caches only at ``cache_control`` breakpoints, reads the longest
prefix an earlier request wrote ending within ~20 blocks before a breakpoint, writes
(1.25x) only the part up to the last breakpoint that it did not read, bills what follows
at 1x, and prices images at width x height / 750 tokens.
"""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

pytest.importorskip("starlette")

from loop_upstream import MAX_BREAKPOINTS, Pricer, breakpoints, image_tokens  # noqa: E402

CC = {"type": "ephemeral"}
BIG = "x" * 8_000  # 2,000 tokens


def _conv(n: int, *, mark_last: bool = True) -> dict:
    """A tool loop of ``n`` steps, with Claude Code's breakpoints (system, newest block)."""
    msgs: list[dict] = [{"role": "user", "content": "fix the parser"}]
    for k in range(n):
        msgs.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "bash"}]}
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": BIG}],
            }
        )
    if mark_last:
        last = msgs[-1]
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        msgs[-1] = {**last, "content": [*content[:-1], {**content[-1], "cache_control": CC}]}
    return {"system": [{"type": "text", "text": "agent", "cache_control": CC}], "messages": msgs}


def test_a_moved_marker_reads_the_previous_request_and_writes_only_the_new_step() -> None:
    p = Pricer("anthropic")
    first = p.price(_conv(3), output=30)
    assert first.cached == 0 and first.written == first.tokens and first.uncached == 0
    second = p.price(_conv(4), output=30)
    # the previous request's prefix is read; the new step (~2,000 tokens) is written
    assert second.cached == first.tokens
    assert second.written == second.tokens - first.tokens
    assert 2_000 <= second.written <= 2_020
    assert second.cost == pytest.approx(
        second.cached * 0.1 + second.written * 1.25 + second.output * 5
    )


def test_no_breakpoint_no_cache_and_the_rest_is_plain_input() -> None:
    p = Pricer("anthropic")
    body = _conv(3, mark_last=False)
    body["system"] = "agent"
    p.price(body, output=30)
    again = p.price(body, output=30)
    assert again.cached == 0 and again.written == 0 and again.uncached == again.tokens


def test_after_the_last_breakpoint_is_billed_at_1x_not_as_a_write() -> None:
    p = Pricer("anthropic")
    body = _conv(3, mark_last=False)
    # a breakpoint after the first step only: the two later steps are plain input
    msgs = body["messages"]
    msgs[2] = {**msgs[2], "content": [{**msgs[2]["content"][0], "cache_control": CC}]}
    priced = p.price(body, output=0)
    assert 2_000 <= priced.written <= 2_020
    assert priced.uncached == priced.tokens - priced.written


def test_the_lookback_reaches_20_blocks_not_more() -> None:
    short, long_ = Pricer("anthropic"), Pricer("anthropic")
    short.price(_conv(3), output=0)
    assert short.price(_conv(12), output=0).cached > 0  # 18 blocks later: found
    long_.price(_conv(3), output=0)
    assert long_.price(_conv(14), output=0).cached == 0  # 22 blocks later: written again


def test_a_string_content_is_the_same_block_as_one_text_block() -> None:
    p = Pricer("anthropic")
    as_block = {
        "system": [{"type": "text", "text": "agent", "cache_control": CC}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": BIG, "cache_control": CC}]}
        ],
    }
    p.price(as_block, output=0)
    follow = {
        "system": [{"type": "text", "text": "agent", "cache_control": CC}],
        "messages": [
            {"role": "user", "content": BIG},
            {"role": "assistant", "content": [{"type": "text", "text": "ok", "cache_control": CC}]},
        ],
    }
    assert p.price(follow, output=0).cached > 2_000


def test_anthropic_images_cost_pixels_over_750() -> None:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("1", (1568, 728)).save(buf, "PNG")
    data = base64.b64encode(buf.getvalue()).decode()
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    body = {"messages": [{"role": "user", "content": [block]}]}
    priced = Pricer("anthropic").price(body, output=0)
    assert (
        priced.image_tokens == image_tokens(1568, 728, "anthropic") == 1523
    )  # ceil(1568 x 728 / 750)


def test_openai_caches_every_earlier_prefix_without_markers() -> None:
    p = Pricer("openai")
    msgs = [{"role": "system", "content": "agent"}, {"role": "user", "content": BIG}]
    first = p.price({"messages": msgs}, output=0)
    second = p.price({"messages": [*msgs, {"role": "user", "content": BIG}]}, output=0)
    assert first.cached == 0
    assert second.cached == pytest.approx(first.tokens, abs=1)  # 4 chars a token, rounded
    assert second.written == second.tokens - second.cached
    assert second.share == pytest.approx(first.tokens / second.tokens, abs=1e-3)


def test_more_than_four_breakpoints_are_counted_for_the_refusal() -> None:
    body = _conv(3)  # system + newest block: 2
    assert breakpoints(body) == 2
    for m in body["messages"][1:4]:
        m["content"] = [{**m["content"][0], "cache_control": CC}]
    assert breakpoints(body) == 5 > MAX_BREAKPOINTS
    from loop_upstream import LoopUpstream
    from starlette.testclient import TestClient

    with TestClient(LoopUpstream(64_000).app()) as client:
        r = client.post("/v1/messages", json={"model": "m", "max_tokens": 10, **body})
        assert r.status_code == 400 and "maximum of 4 blocks with cache_control" in r.text
        body["messages"][1]["content"][0].pop("cache_control")
        r = client.post("/v1/messages", json={"model": "m", "max_tokens": 10, **body})
        assert r.status_code == 200


def test_openai_images_are_32px_patches_within_the_budget() -> None:
    assert image_tokens(1600, 1600, "openai") == 2_500  # 50 x 50 patches
    assert image_tokens(1024, 1024, "openai") == 1_024  # the guide's example
    assert 2_400 < image_tokens(1800, 2400, "openai") <= 2_500  # over the budget: shrunk
    assert image_tokens(1600, 400, "openai") == 50 * 13


def test_a_top_level_cache_control_is_a_breakpoint_on_the_last_block() -> None:
    """Automatic caching (a request-level ``cache_control``, what LangChain's
    AnthropicPromptCachingMiddleware sends) marks the last block and takes a slot."""
    p = Pricer("anthropic")
    bare = _conv(3, mark_last=False)
    first = p.price({**bare, "cache_control": CC}, output=30)
    assert first.written == first.tokens and first.uncached == 0
    second = p.price({**_conv(4, mark_last=False), "cache_control": CC}, output=30)
    assert second.cached == first.tokens
    assert 2_000 <= second.written <= 2_020 and second.uncached == 0
    assert breakpoints({**bare, "cache_control": CC}) == breakpoints(bare) + 1
    # without it, what follows the system prompt's breakpoint is plain input every time
    q = Pricer("anthropic")
    q.price(bare, output=30)
    assert q.price(_conv(4, mark_last=False), output=30).uncached > 8_000
