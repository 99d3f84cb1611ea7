"""Small synthetic agent histories of the shapes real agent loops produce, in both formats.

One long turn (one request, many tool steps), error loops, parallel calls, thinking,
images inside a turn, write_file loops, plain multi-turn chats. Every history is
built as canonical messages and serialised with the library's own wire serialiser,
so it is one the provider accepts by construction (the tests check that too).
Deterministic: no randomness, content derived from the step number.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from glyphfold.compaction.history.messages import to_wire
from glyphfold.compaction.history.model import (
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
)

FORMATS = ("openai", "anthropic")
SYSTEM = "You are a coding agent. Work step by step; run the tests after every change."


def traceback(step: int, lines: int = 300) -> str:
    """A pytest run that fails with a long traceback (notable: elision keeps it)."""
    body = [f"============================= test session starts (run {step}) =="]
    for k in range(lines - 6):
        body.append(f'  File "/work/repo/src/module_{k % 17}.py", line {100 + k}, in func_{k}')
    body += [
        "Traceback (most recent call last):",
        f"AssertionError: expected 3 got {step}",
        f"FAILED tests/test_core.py::test_case_{step} - AssertionError",
        f"==== 1 failed, {step + 40} passed in 2.{step:02d}s ====",
    ]
    return "\n".join(body)


def listing(step: int, lines: int = 120) -> str:
    """A long, unremarkable tool result (elision may stub it)."""
    return "\n".join(f"src/pkg_{step}/file_{k:03d}.py  {1000 + 37 * k} bytes" for k in range(lines))


class Builder:
    """Accumulates canonical messages for one wire format."""

    def __init__(self, fmt: str, system: str = SYSTEM) -> None:
        self.fmt = fmt
        self.system = system
        self.messages: list[Message] = []
        self.n = 0
        if fmt == "openai":
            self.messages.append(Message("system", (Text(system),)))

    def user(self, text: str, images: tuple[Image, ...] = ()) -> Builder:
        last = self.messages[-1] if self.messages else None
        if self.fmt == "anthropic" and last is not None and last.role == "user":
            # Anthropic: a request right after tool results shares their user message
            # (results first); by SPEC §1 that message is not a real user message
            self.messages[-1] = Message("user", (*last.blocks, Text(text), *images))
        else:
            self.messages.append(Message("user", (Text(text), *images)))
        return self

    def assistant(self, text: str, *, thinking: str | None = None) -> Builder:
        blocks: list[Any] = []
        if thinking is not None and self.fmt == "anthropic":
            blocks.append(_thinking(thinking))
        blocks.append(Text(text))
        self.messages.append(Message("assistant", tuple(blocks)))
        return self

    def step(
        self,
        text: str,
        calls: list[tuple[str, dict[str, Any], str | tuple[Any, ...], bool]],
        *,
        thinking: str | None = None,
    ) -> Builder:
        """One assistant message with ``calls`` (name, args, result, is_error), then results."""
        blocks: list[Any] = []
        if thinking is not None and self.fmt == "anthropic":
            blocks.append(_thinking(thinking))
        if text:
            blocks.append(Text(text))
        results = []
        for name, args, result, is_error in calls:
            self.n += 1
            cid = f"call_{self.n:04d}"
            wire_args: Any = json.dumps(args) if self.fmt == "openai" else dict(args)
            blocks.append(ToolCall(cid, name, wire_args))
            content = (Text(result),) if isinstance(result, str) else tuple(result)
            results.append(ToolResult(cid, content, is_error))
        self.messages.append(Message("assistant", tuple(blocks)))
        if self.fmt == "openai":
            self.messages.extend(Message("tool", (r,)) for r in results)
        else:
            self.messages.append(Message("user", tuple(results)))
        return self

    def wire(self) -> Any:
        if self.fmt == "openai":
            return to_wire(History("openai", tuple(self.messages)))
        return to_wire(History("anthropic", tuple(self.messages), self.system, "dict"))


def _thinking(text: str) -> Unknown:
    return Unknown({"type": "thinking", "thinking": text, "signature": "sig" + "A" * 40})


@lru_cache(maxsize=8)
def _png_b64(w: int, h: int) -> str:
    from glyphfold.render.encode import encode_png

    pixels = np.full((h, w), 255, dtype=np.uint8)
    pixels[h // 4 : h // 2, w // 4 : w // 2] = 0  # a dark box: something to look at
    return base64.b64encode(encode_png(pixels, bits=1)).decode("ascii")


def screenshot(w: int = 1280, h: int = 800) -> Image:
    """A real 1-bit PNG of ``w`` x ``h`` px (the size is read from its header)."""
    return Image(media_type="image/png", data=_png_b64(w, h))


# ------------------------------------------------------------------ the shapes


def long_turn(fmt: str, steps: int = 12, lines: int = 100) -> Any:
    """SPEC §1's usual agent run: one request, ``steps`` failing test runs, then a reply."""
    b = Builder(fmt).user("Make the test suite pass.")
    for k in range(steps):
        b.step(
            f"Fixing attempt {k}: editing module_{k}.py and rerunning.",
            [("run_tests", {"cmd": "pytest -x"}, traceback(k, lines), False)],
        )
    return b.assistant("The suite is still failing; the last traceback is above.").wire()


def parallel_calls(fmt: str, steps: int = 8) -> Any:
    """Each step reads three files at once (parallel calls, one results message)."""
    b = Builder(fmt).user("Audit the package and list every unused import.")
    for k in range(steps):
        b.step(
            f"Reading three files of batch {k}.",
            [
                ("read_file", {"path": f"src/a_{k}.py"}, listing(k), False),
                ("read_file", {"path": f"src/b_{k}.py"}, listing(k + 100), False),
                ("grep", {"pattern": "import"}, traceback(k, 80), False),
            ],
        )
    return b.assistant("Found 14 unused imports; details above.").wire()


def thinking_turns(fmt: str, turns: int = 4, steps: int = 3) -> Any:
    """Several turns whose assistant messages think first (Anthropic thinking blocks)."""
    b = Builder(fmt).user("Plan the migration.")
    for t in range(turns):
        if t:
            b.user(f"Now do part {t} of the migration.")
        for k in range(steps):
            b.step(
                f"Part {t} step {k}.",
                [
                    (
                        "run",
                        {"cmd": f"migrate --part {t} --step {k}"},
                        listing(t * 10 + k, 60),
                        False,
                    )
                ],
                thinking="I should check the schema first. " * 60,
            )
        b.assistant(f"Part {t} done.", thinking="Summarise the part. " * 40)
    return b.wire()


def screenshots_in_turn(fmt: str, steps: int = 8) -> Any:
    """A browser agent: every step takes a screenshot (images inside one turn)."""
    b = Builder(fmt).user("Book the cheapest flight to Lisbon on the site.")
    for k in range(steps):
        b.step(
            f"Clicking control {k}.",
            [
                (
                    "browser_screenshot",
                    {"click": f"#btn-{k}"},
                    (Text(f"clicked #btn-{k}; page title: Flights ({k})"), screenshot()),
                    False,
                )
            ],
        )
    return b.assistant("Booked: TP1351, 89 EUR.").wire()


def write_file_loop(fmt: str, calls: int = 10, chars: int = 9_000) -> Any:
    """An agent writing files: the bodies are in the call arguments, results are short."""
    b = Builder(fmt).user("Generate the ten report modules.")
    for k in range(calls):
        body = "\n".join(
            f"def report_{k}_{j}(rows):\n    return sum(rows) * {j}" for j in range(chars // 45)
        )
        b.step(
            f"Writing report_{k}.py.",
            [
                (
                    "write_file",
                    {"path": f"reports/report_{k}.py", "content": body},
                    f"wrote {len(body)} bytes to reports/report_{k}.py",
                    False,
                )
            ],
        )
    return b.assistant("All ten modules are written.").wire()


def chat(fmt: str, turns: int = 40, chars: int = 1_100) -> Any:
    """A plain multi-turn chat, no tools: every turn is a question and a long answer."""
    b = Builder(fmt)
    for t in range(turns):
        b.user(f"Question {t}: explain topic {t} in detail, please.")
        words = " ".join(f"point{t}_{k} explains the topic further." for k in range(chars // 36))
        b.assistant(f"Answer {t}: {words}")
    return b.wire()


def two_instructions(fmt: str, steps: int = 40) -> Any:
    """Two user instructions, each followed by a long run of tool steps."""
    b = Builder(fmt).user("First instruction: migrate the config loader to TOML.")
    for k in range(steps):
        b.step(f"Loader step {k}.", [("edit", {"file": f"loader_{k}.py"}, listing(k, 40), False)])
    b.assistant("The loader is migrated.")
    b.user("Second instruction: now add a --dry-run flag to the CLI and document it.")
    for k in range(steps):
        b.step(f"CLI step {k}.", [("edit", {"file": f"cli_{k}.py"}, listing(k + 50, 40), False)])
    return b.wire()


SHAPES: dict[str, Callable[[str], Any]] = {
    "long_turn": long_turn,
    "parallel_calls": parallel_calls,
    "thinking_turns": thinking_turns,
    "screenshots_in_turn": screenshots_in_turn,
    "write_file_loop": write_file_loop,
    "chat": chat,
    "two_instructions": two_instructions,
}
