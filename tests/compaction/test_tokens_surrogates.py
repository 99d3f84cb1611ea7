"""A lone surrogate in a tool result (JS tools cut strings mid-pair) is priced, never
raised as UnicodeEncodeError (issue 21 item 8; SPEC §3.4)."""

from __future__ import annotations

import json
import subprocess
import sys

import glyphfold

CUT = "a\udfffb" * 100  # what JSON.stringify of a string cut between a surrogate pair holds


def _chat() -> list[dict]:
    h: list[dict] = [{"role": "user", "content": "hi"}]
    for i in range(6):
        h.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            }
        )
        h.append({"role": "tool", "tool_call_id": f"c{i}", "content": CUT})
    h.append({"role": "user", "content": "next"})
    return h


def _responses() -> dict:
    items: list[dict] = [{"role": "user", "content": "hi"}]
    for i in range(6):
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": CUT})
    items.append({"role": "user", "content": "next"})
    return {"input": items}


def test_chat_completions_tool_result_with_a_lone_surrogate_is_priced_and_compacted():
    h = _chat()
    tokens = glyphfold.estimate_history_tokens(h)
    assert tokens > 6 * 300 // 4  # the cut text counts (3 bytes each, as U+FFFD)
    result = glyphfold.compact(h, budget=100, profile="openai")
    assert result.tokens_after <= 100


def test_responses_tool_output_with_a_lone_surrogate_is_priced():
    assert glyphfold.estimate_history_tokens(_responses()) > 6 * 300 // 4


def test_cli_context_reads_a_history_with_a_lone_surrogate(tmp_path):
    src = tmp_path / "h.json"
    src.write_text(json.dumps(_chat()), encoding="ascii")  # "\udfff" escaped, as JS writes it
    out = subprocess.run(
        [sys.executable, "-m", "glyphfold", "context", str(src)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
