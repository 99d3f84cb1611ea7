"""Builders and hypothesis strategies for valid chat histories in both wire formats.

A history is generated as an abstract plan (turns of user text, tool steps,
assistant replies) and rendered into OpenAI or Anthropic wire dicts, so every
generated history is one the provider accepts by construction.
"""

from __future__ import annotations

import base64
import copy
import struct
import zlib
from typing import Any

from hypothesis import strategies as st


def tiny_png(width: int, height: int) -> bytes:
    """A real (valid) 1-bit PNG of the given size, all white."""
    row = b"\x00" + b"\xff" * ((width + 7) // 8)
    raw = zlib.compress(row * height)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + tag
            + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def png_b64(width: int = 64, height: int = 32) -> str:
    return base64.b64encode(tiny_png(width, height)).decode("ascii")


# --------------------------------------------------------------------------- plans
# plan = {"system": [str...], "turns": [turn...]}
# turn = {"user": str, "image": (w, h) | None, "steps": [step...], "reply": str | None}
# step = {"kind": "native", "text": str, "calls": [(name, args, result, is_error, image)]}
#      | {"kind": "bracket", "text": str, "result": str}


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:05d}"


def render_openai(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Render a plan as OpenAI Chat Completions messages."""
    ids = _Ids()
    out: list[dict[str, Any]] = []
    for k, s in enumerate(plan["system"]):
        out.append({"role": "developer" if k % 2 else "system", "content": s})
    for turn in plan["turns"]:
        if turn["image"] is not None:
            w, h = turn["image"]
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": turn["user"]},
                        {
                            "type": "image_url",
                            "image_url": {
                                "url": "data:image/png;base64," + png_b64(w, h),
                                "detail": "high",
                            },
                        },
                    ],
                }
            )
        else:
            out.append({"role": "user", "content": turn["user"]})
        for step in turn["steps"]:
            if step["kind"] == "bracket":
                out.append({"role": "assistant", "content": step["text"]})
                out.append({"role": "user", "content": "[Tool results]\n" + step["result"]})
                continue
            calls = [(ids("call"), c) for c in step["calls"]]
            out.append(
                {
                    "role": "assistant",
                    "content": step["text"] or None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": c[0], "arguments": c[1]},
                        }
                        for cid, c in calls
                    ],
                }
            )
            for cid, c in calls:
                content: Any = c[2]
                if c[4] is not None:
                    content = [
                        {"type": "text", "text": c[2]},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64," + png_b64(*c[4])},
                        },
                    ]
                out.append({"role": "tool", "tool_call_id": cid, "content": content})
        if turn["reply"] is not None:
            out.append({"role": "assistant", "content": turn["reply"]})
    return out


def render_anthropic(plan: dict[str, Any], *, envelope: str = "dict") -> Any:
    """Render a plan as Anthropic Messages (dict envelope with system, or a bare list)."""
    ids = _Ids()
    msgs: list[dict[str, Any]] = []
    for turn in plan["turns"]:
        if turn["image"] is not None:
            w, h = turn["image"]
            content: Any = [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": png_b64(w, h)},
                },
                {
                    "type": "text",
                    "text": turn["user"] or "look",
                    "cache_control": {"type": "ephemeral"},
                },
            ]
        else:
            content = turn["user"] or "go on"
        msgs.append({"role": "user", "content": content})
        for step in turn["steps"]:
            if step["kind"] == "bracket":
                msgs.append({"role": "assistant", "content": step["text"] or "working"})
                msgs.append({"role": "user", "content": "[Tool results]\n" + step["result"]})
                continue
            blocks: list[dict[str, Any]] = []
            if step["text"]:
                blocks.append({"type": "text", "text": step["text"]})
            calls = [(ids("toolu"), c) for c in step["calls"]]
            blocks.extend(
                {"type": "tool_use", "id": cid, "name": c[0], "input": {"arg": c[1]}}
                for cid, c in calls
            )
            msgs.append({"role": "assistant", "content": blocks})
            results: list[dict[str, Any]] = []
            for cid, c in calls:
                r: dict[str, Any] = {"type": "tool_result", "tool_use_id": cid}
                if c[4] is not None:
                    r["content"] = [
                        {"type": "text", "text": c[2] or "shot"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": png_b64(*c[4]),
                            },
                        },
                    ]
                elif c[2]:
                    r["content"] = c[2]
                if c[3]:
                    r["is_error"] = True
                results.append(r)
            msgs.append({"role": "user", "content": results})
        # Anthropic alternation: a turn ends with the assistant, except maybe the newest
        if turn["reply"] is not None or turn is not plan["turns"][-1]:
            msgs.append({"role": "assistant", "content": turn["reply"] or "done"})
    if envelope == "list":
        return msgs
    env: dict[str, Any] = {"model": "claude-x", "max_tokens": 1024, "messages": msgs}
    if plan["system"]:
        env["system"] = "\n".join(plan["system"])
    return env


def render(plan: dict[str, Any], fmt: str) -> Any:
    if fmt == "openai":
        return render_openai(plan)
    if fmt == "anthropic":
        return render_anthropic(plan)
    if fmt == "anthropic-list":
        return render_anthropic(plan, envelope="list")
    raise ValueError(fmt)


FORMATS = ("openai", "anthropic", "anthropic-list")

# --------------------------------------------------------------------------- strategies

_words = st.text(alphabet="abcdefghij klmnop\n{}:\"'", min_size=0, max_size=40)
_huge = st.integers(min_value=20_000, max_value=60_000).map(lambda n: "x" * n)
texts = st.one_of(_words, _words, _words, _huge)
_sizes = st.tuples(st.integers(1, 2000), st.integers(1, 2000))


@st.composite
def _call(draw: Any) -> tuple[Any, ...]:
    return (
        draw(st.sampled_from(["read_file", "bash", "browser_screenshot"])),
        draw(st.sampled_from(['{"path": "a.py"}', "{}", '{"cmd": "ls"}'])),
        draw(texts),
        draw(st.booleans()),
        draw(st.none() | _sizes),
    )


@st.composite
def _step(draw: Any) -> dict[str, Any]:
    if draw(st.integers(0, 3)) == 0:
        return {"kind": "bracket", "text": draw(_words), "result": draw(texts)}
    return {
        "kind": "native",
        "text": draw(_words),
        "calls": draw(st.lists(_call(), min_size=1, max_size=3)),
    }


@st.composite
def _turn(draw: Any) -> dict[str, Any]:
    user = draw(texts)
    if user.startswith("[Tool results]"):
        user = "q" + user
    return {
        "user": user,
        "image": draw(st.none() | _sizes) if draw(st.integers(0, 4)) == 0 else None,
        "steps": draw(st.lists(_step(), max_size=3)),
        "reply": draw(st.none() | _words),
    }


@st.composite
def plans(draw: Any, *, min_turns: int = 0, max_turns: int = 8) -> dict[str, Any]:
    return {
        "system": draw(st.lists(_words.filter(bool), max_size=2)),
        "turns": draw(st.lists(_turn(), min_size=min_turns, max_size=max_turns)),
    }


def format_name(fmt: str) -> str:
    """The wire format name of a generated case's format (``anthropic-list`` is Anthropic)."""
    return "openai" if fmt == "openai" else "anthropic"


@st.composite
def wire_histories(draw: Any, *, min_turns: int = 0, max_turns: int = 8) -> tuple[str, Any]:
    """(format name, wire history) for a valid generated history."""
    fmt = draw(st.sampled_from(FORMATS))
    plan = draw(plans(min_turns=min_turns, max_turns=max_turns))
    return fmt, render(plan, fmt)


def snapshot(obj: Any) -> Any:
    """Deep copy to compare against after a call (inputs are never mutated)."""
    return copy.deepcopy(obj)


def wire_messages(history: Any) -> list[Any]:
    return history["messages"] if isinstance(history, dict) else history


def simple_plan(n_turns: int, *, tools: bool = True, user_chars: int = 40) -> dict[str, Any]:
    """A deterministic plan: n turns, each user text, one tool call, one reply."""
    turns = []
    for t in range(n_turns):
        steps = (
            [
                {
                    "kind": "native",
                    "text": f"checking {t}",
                    "calls": [
                        (
                            "read_file",
                            '{"path": "f' + str(t) + '"}',
                            f"result {t} " * 20,
                            False,
                            None,
                        )
                    ],
                }
            ]
            if tools
            else []
        )
        turns.append(
            {
                "user": f"question {t} " + "u" * user_chars,
                "image": None,
                "steps": steps,
                "reply": f"answer {t}",
            }
        )
    return {"system": ["you are helpful"], "turns": turns}
