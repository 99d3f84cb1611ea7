"""litellm: its message objects are accepted and its overflow error is recognised by type.

One test, so that litellm (~15 s to import) is imported by one worker only.
"""

from __future__ import annotations

import json

import pytest
from wire_samples import big_text

import glyphfold
from glyphfold.compaction.history.messages import detect_format
from glyphfold.compaction.history.overflow import is_context_overflow_error
from glyphfold.compaction.history.validate import find_violations


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic's notes on litellm's TypedDicts
def test_litellm_messages_and_context_window_error(litellm_module):
    from litellm.types.utils import ChatCompletionMessageToolCall, Function, Message

    history = []
    for t in range(6):
        call = ChatCompletionMessageToolCall(
            id=f"c{t}", type="function", function=Function(name="read", arguments="{}")
        )
        history += [
            {"role": "user", "content": f"step {t}"},
            Message(role="assistant", content=None, tool_calls=[call]),
            {"role": "tool", "tool_call_id": f"c{t}", "content": big_text(t, 12_000)},
            Message(role="assistant", content=f"done {t}"),
        ]
    assert detect_format(history) == "openai"
    out = glyphfold.shake(history).messages
    json.dumps(out)  # plain dicts
    assert "provider_specific_fields" not in out[1]
    assert find_violations(out) == []

    err = litellm_module.ContextWindowExceededError(
        message="upstream said no", model="m", llm_provider="openai"
    )
    assert is_context_overflow_error(err)
    other = litellm_module.BadRequestError(message="bad image", model="m", llm_provider="openai")
    assert not is_context_overflow_error(other)
