"""The built-in demo session: deterministic, realistic, both wire formats (issue 5)."""

from __future__ import annotations

import base64
import json

import pytest

from glyphfold.compaction.history.images import image_info
from glyphfold.samples.demo_session import demo_session, screenshot_png


@pytest.fixture(scope="module")
def sessions():
    return demo_session(format="openai"), demo_session(format="anthropic")


def test_deterministic(sessions):
    """Same arguments -> byte-identical history."""
    oa, an = sessions
    assert json.dumps(demo_session(format="openai")) == json.dumps(oa)
    assert json.dumps(demo_session(format="anthropic")) == json.dumps(an)
    assert json.dumps(demo_session(seed=1)) != json.dumps(oa)


def test_size_and_content(sessions):
    """About 300k tokens (4 chars/token) with the events the ladder must handle."""
    oa, an = sessions
    chars = len(json.dumps(oa))
    assert 1_100_000 < chars < 1_600_000
    text = json.dumps(oa, ensure_ascii=False)
    assert "Traceback (most recent call last)" in text
    assert "FAILED tests/" in text
    assert "请检查" in text and "Peux-tu" in text and "¿Puedes" in text
    assert '"name": "read_file"' in text
    assert "def " in text  # real source files were read
    users = [m for m in oa if m["role"] == "user"]
    assert len(users) > 20
    assert any(
        b.get("is_error")
        for m in an["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    )


def test_screenshot_is_a_real_png(sessions):
    """The screenshot is a PNG the placeholder code can size."""
    png = screenshot_png()
    info = image_info(png)
    assert (info.width, info.height, info.format) == (1280, 800, "PNG")
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(png)).size == (1280, 800)
    oa, _ = sessions
    urls = [
        p["image_url"]["url"]
        for m in oa
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]
    assert len(urls) == 1
    assert base64.b64decode(urls[0].partition(",")[2]) == png


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown demo format"):
        demo_session(format="gemini")
    with pytest.raises(ValueError, match="target_tokens"):
        demo_session(target_tokens=10)
