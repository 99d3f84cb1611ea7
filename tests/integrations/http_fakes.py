"""Provider APIs over ``httpx.MockTransport``: the official SDKs run, nothing leaves the process.

Each fake records the JSON bodies it receives and answers from a script of replies: a
tool call ``("call", name, args)`` or a final text ``("text", "...")``.
"""

from __future__ import annotations

import json

import httpx


class ScriptedAPI:
    """Replies in order; ``bodies`` holds every request body (decoded JSON)."""

    def __init__(self, replies: list[tuple]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict] = []
        self.n = 0

    def next(self, body: dict) -> tuple:
        self.bodies.append(body)
        self.n += 1
        return self.replies.pop(0)

    def transport(self, build, http=httpx):
        """A MockTransport of ``http`` (httpx, or httpx2 for the SDKs built on it)."""

        def handler(request):
            body = json.loads(request.content or b"{}")
            return http.Response(200, json=build(self.n + 1, self.next(body), body))

        return http.MockTransport(handler)


def sdk_http(sdk):
    """The HTTP package an SDK module is built on (httpx, or httpx2 in newer releases)."""
    import importlib
    import sys

    base = sys.modules[sdk.__name__ + "._base_client"]
    return importlib.import_module("httpx2") if hasattr(base, "httpx2") else httpx


def anthropic_reply(k: int, reply: tuple, body: dict) -> dict:
    if reply[0] == "call":
        content = [{"type": "tool_use", "id": f"toolu_{k}", "name": reply[1], "input": reply[2]}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": reply[1]}], "end_turn"
    return {
        "id": f"msg_{k}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sonnet-4-5"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def chat_reply(k: int, reply: tuple, body: dict) -> dict:
    if reply[0] == "call":
        call = {"name": reply[1], "arguments": json.dumps(reply[2])}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"call_{k}", "type": "function", "function": call}],
        }
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": reply[1]}, "stop"
    return {
        "id": f"chatcmpl-{k}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "gpt-5"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def responses_reply(k: int, reply: tuple, body: dict) -> dict:
    if reply[0] == "call":
        item = {
            "type": "function_call",
            "id": f"fc_{k}",
            "call_id": f"call_{k}",
            "name": reply[1],
            "arguments": json.dumps(reply[2]),
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{k}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply[1], "annotations": []}],
        }
    return {
        "id": f"resp_{k}",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "gpt-5"),
        "status": "completed",
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
