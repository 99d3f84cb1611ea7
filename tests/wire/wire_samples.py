"""Native histories of the wire formats, with each format's own features, deterministic.

Each builder returns a long agent run (a task, then ``turns`` turns of tool work with
large results) in one format, using the shapes that format has and the others lack:
Responses reasoning/compaction/mcp_call items, Gemini thought signatures and bytes
inline data, Bedrock cachePoint/reasoningContent blocks and bytes images.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from typing import Any

from PIL import Image as PILImage


def png_bytes(width: int, height: int) -> bytes:
    """A real PNG (a grey gradient, so it does not compress to nothing)."""
    img = PILImage.linear_gradient("L").resize((width, height))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


PNG = png_bytes(320, 200)
PNG_B64 = base64.b64encode(PNG).decode("ascii")


def big_text(seed: int, chars: int = 6000) -> str:
    """Source-code-like text (no error words, so elision treats it as unremarkable)."""
    lines = []
    k = 0
    while sum(len(x) + 1 for x in lines) < chars:
        h = hashlib.sha1(f"{seed}:{k}".encode()).hexdigest()[:8]
        lines.append(f"def helper_{seed}_{k}(value):  # {h}\n    return value * {k} + {seed}")
        k += 1
    return "\n".join(lines)


def responses_history(turns: int = 8, chars: int = 6000) -> dict[str, Any]:
    """An OpenAI Responses request body: instructions + input items."""
    items: list[Any] = [{"role": "user", "content": "Task: refactor the helpers module."}]
    for t in range(turns):
        if t:
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"Now step {t}: read part {t}."}],
                }
            )
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{t}",
                "summary": [{"type": "summary_text", "text": f"I should read part {t}."}],
                "encrypted_content": "gAAAA" + "x" * 40,
            }
        )
        for s in ("a", "b"):  # parallel calls
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{t}{s}",
                    "call_id": f"call_{t}{s}",
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"src/part_{t}{s}.py"}),
                    "status": "completed",
                }
            )
        items.append(
            {"type": "function_call_output", "call_id": f"call_{t}a", "output": big_text(t, chars)}
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": f"call_{t}b",
                "output": [{"type": "input_text", "text": big_text(100 + t, chars // 2)}],
            }
        )
        if t % 2 == 1:
            items.append(
                {
                    "type": "mcp_call",
                    "id": f"mcp_{t}",
                    "server_label": "docs",
                    "name": "search_docs",
                    "arguments": json.dumps({"q": f"helper {t}"}),
                    "output": big_text(200 + t, chars),
                    "status": "completed",
                }
            )
        if t == 0:
            items.append({"type": "compaction", "id": "cmp_0", "encrypted_content": "enc" * 20})
            items.append({"type": "future_item", "id": "fut_0", "payload": {"k": [1, 2]}})
        items.append(
            {
                "type": "message",
                "id": f"msg_{t}",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": f"Part {t} read.", "annotations": []},
                    *([{"type": "refusal", "refusal": "Not that part."}] if t == 1 else []),
                ],
            }
        )
    items.append({"role": "user", "content": "Summarise what you changed."})
    return {"model": "gpt-5", "instructions": "You are a careful coding agent.", "input": items}


def gemini_history(turns: int = 8, chars: int = 6000) -> dict[str, Any]:
    """A google-genai generate_content body: contents + system_instruction + config."""
    contents: list[Any] = [{"role": "user", "parts": [{"text": "Task: refactor the helpers."}]}]
    for t in range(turns):
        if t:
            parts: list[Any] = [{"text": f"Now step {t}: read part {t}."}]
            if t == 2:
                parts.append({"inline_data": {"mime_type": "image/png", "data": PNG}})
            contents.append({"role": "user", "parts": parts})
        call: dict[str, Any] = {"name": "read_file", "args": {"path": f"src/part_{t}.py"}}
        if t % 2:
            call["id"] = f"fc-{t}"
        contents.append(
            {
                "role": "model",
                "parts": [
                    {"text": f"Reading part {t}.", "thought": True},
                    {"function_call": call, "thought_signature": f"sig{t}".encode()},
                ],
            }
        )
        resp: dict[str, Any] = {"name": "read_file", "response": {"output": big_text(t, chars)}}
        if t % 2:
            resp["id"] = f"fc-{t}"
        contents.append({"role": "user", "parts": [{"function_response": resp}]})
        contents.append({"role": "model", "parts": [{"text": f"Part {t} read."}]})
    contents.append({"role": "user", "parts": [{"text": "Summarise what you changed."}]})
    return {
        "model": "gemini-2.5-flash",
        "system_instruction": {"parts": [{"text": "You are a careful coding agent."}]},
        "contents": contents,
        "config": {"temperature": 0.0},
    }


def bedrock_history(turns: int = 8, chars: int = 6000) -> dict[str, Any]:
    """A boto3 bedrock-runtime converse() call's keyword arguments."""
    msgs: list[Any] = [
        {
            "role": "user",
            "content": [
                {"text": "Task: refactor the helpers."},
                {"cachePoint": {"type": "default"}},
            ],
        }
    ]
    for t in range(turns):
        if t:
            content: list[Any] = [{"text": f"Now step {t}: read part {t}."}]
            if t == 2:
                content.append({"image": {"format": "png", "source": {"bytes": PNG}}})
            msgs.append({"role": "user", "content": content})
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": f"Read part {t}.", "signature": f"s{t}"}
                        }
                    },
                    {"text": f"Reading part {t}."},
                    {
                        "toolUse": {
                            "toolUseId": f"tu_{t}",
                            "name": "read_file",
                            "input": {"path": f"src/part_{t}.py"},
                        }
                    },
                ],
            }
        )
        result: list[Any] = [{"text": big_text(t, chars)}]
        if t == 3:
            result.append({"json": {"lines": 120, "path": f"src/part_{t}.py"}})
        msgs.append(
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": f"tu_{t}", "content": result, "status": "success"}}
                ],
            }
        )
        msgs.append({"role": "assistant", "content": [{"text": f"Part {t} read."}]})
    msgs.append({"role": "user", "content": [{"text": "Summarise what you changed."}]})
    return {
        "modelId": "anthropic.claude-sonnet-4",
        "system": [
            {"text": "You are a careful coding agent."},
            {"cachePoint": {"type": "default"}},
        ],
        "messages": msgs,
        "inferenceConfig": {"maxTokens": 1024},
    }


BUILDERS = {"responses": responses_history, "gemini": gemini_history, "bedrock": bedrock_history}
