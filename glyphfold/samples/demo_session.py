"""A deterministic, realistic long coding-agent session for the demo and the tests.

The session reads real source files (this project's own modules through
``importlib.resources``, then standard-library modules found on ``sys.path``;
nothing is downloaded), runs tests that fail then pass, hits errors, takes a
browser screenshot (a PNG generated here), and its user speaks several
languages. Same arguments -> the same history, byte for byte, on a given
installation (the files read are the installed ones).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import importlib.util
import json
import random
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from glyphfold.checks import check_int

SYSTEM_PROMPT = (
    "You are a careful coding agent working in the repository at /work/repo. "
    "Use the tools to read files, run commands and tests. Never push to main. "
    "Constraints from the user: keep the public API stable, Python 3.11, no new "
    "runtime dependencies, every change needs a test."
)

TASK = (
    "We need a context-compaction feature for our agent harness: keep the head and tail "
    "of the chat, render the middle as images, and never break tool-call pairing. Start by "
    "reading the package layout and the existing tests, then propose a plan. Ticket: "
    "GLY-20417, design doc https://example.com/docs/glyphfold/design-7f3a2c.md"
)

# (language, message) pairs; several languages as real users write them
USER_MESSAGES: tuple[tuple[str, str], ...] = (
    ("en", "Looks good. Now read the next module and check how errors are raised."),
    ("fr", "Peux-tu vérifier pourquoi ce test échoue ? Je pense que c'est l'ordre des messages."),
    ("de", "Bitte lies auch die Konfiguration und sag mir, ob die Standardwerte sinnvoll sind."),
    ("es", "¿Puedes ejecutar las pruebas otra vez? Quiero ver si el fallo sigue ahí."),
    ("zh", "请检查一下这个模块的错误处理，特别是输入为空的时候。"),
    ("ja", "この関数のテストを追加してください。境界値も確認してください。"),
    ("ru", "Посмотри, пожалуйста, почему падает сборка на CI."),
    ("pt", "Pode ler o arquivo de configuração e resumir as opções?"),
    ("en", "Take a screenshot of the report page so I can see the layout."),
    ("it", "Controlla anche i casi limite: lista vuota, un solo messaggio, immagini."),
)

READ_CAP_CHARS = 24_000
WRITE_CAP_CHARS = 16_000

STDLIB_MODULES: tuple[str, ...] = (
    "json.decoder",
    "json.encoder",
    "textwrap",
    "dataclasses",
    "argparse",
    "functools",
    "pathlib",
    "shutil",
    "tempfile",
    "string",
    "difflib",
    "heapq",
    "bisect",
    "csv",
    "fnmatch",
    "glob",
    "gettext",
    "locale",
    "calendar",
    "ipaddress",
)


def _project_files() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for pkg, prefix in (
        ("glyphfold", "glyphfold"),
        ("glyphfold.compaction.history", "glyphfold/compaction/history"),
        ("glyphfold.compaction.ladder", "glyphfold/compaction/ladder"),
        ("glyphfold.compaction.ladder.rungs", "glyphfold/compaction/ladder/rungs"),
        ("glyphfold.render", "glyphfold/render"),
        ("glyphfold.fonts", "glyphfold/fonts"),
    ):
        try:
            root = importlib.resources.files(pkg)
        except ModuleNotFoundError:
            continue
        names = sorted(p.name for p in root.iterdir() if p.name.endswith(".py"))
        for name in names:
            text = (root / name).read_text(encoding="utf-8")
            if len(text) > 400:
                out.append((f"{prefix}/{name}", text))
    return out


def _stdlib_files() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for mod in STDLIB_MODULES:
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, encoding="utf-8") as fh:
            out.append((f"vendor/python/{mod.replace('.', '/')}.py", fh.read()))
    return out


def screenshot_png(width: int = 1280, height: int = 800) -> bytes:
    """A deterministic grayscale 'browser screenshot' PNG (header bar, sidebar, text rows)."""
    rows = []
    for y in range(height):
        if y < 56:
            row = bytes([40]) * width
        else:
            side = bytes([230]) * 240
            text_row = (y - 56) % 24 < 12 and y < height - 40
            body = bytearray([255]) * (width - 240)
            if text_row:
                for x in range(40, width - 300, 9):
                    if (x * 7 + y * 3) % 5:
                        body[x : x + 6] = b"\x50" * 6
            row = side + bytes(body)
        rows.append(b"\x00" + row)
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


@dataclass
class _Call:
    id: str
    name: str
    args: dict[str, Any]
    result: str
    is_error: bool = False
    image: bytes | None = None


@dataclass
class _Turn:
    user: str
    user_image: bytes | None = None
    steps: list[tuple[str, list[_Call]]] = field(default_factory=list)  # (assistant text, calls)
    final: str = ""


def _fake_test_run(rng: random.Random, files: list[str], fail: bool) -> tuple[str, bool]:
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.2, pytest-8.3.4, pluggy-1.5.0",
        "rootdir: /work/repo",
        "plugins: xdist-3.6.1, hypothesis-6.112.0, benchmark-4.0.0",
        f"collected {rng.randint(120, 480)} items",
        "",
    ]
    for f in files:
        marks = "".join(rng.choice("......F") if fail else "." for _ in range(rng.randint(8, 40)))
        lines.append(f"tests/{f.rsplit('/', 1)[-1].replace('.py', '')}_test.py {marks}")
    if not fail:
        lines.append(
            f"========== {rng.randint(120, 480)} passed in {rng.uniform(2, 30):.2f}s =========="
        )
        return "\n".join(lines), False
    name = files[0].rsplit("/", 1)[-1].replace(".py", "")
    lines += [
        "",
        "=================================== FAILURES ===================================",
        f"____________ test_{name}_roundtrip[case{rng.randint(0, 99)}] ____________",
        "",
        "    def test_roundtrip(case):",
        "        history = make_history(case)",
        "        out = compact(history, budget=60_000)",
        ">       assert validate_history(out.messages) == []",
        "E       AssertionError: assert ['message 17: tool result without call "
        f"call_{rng.randint(1000, 9999)}'] == []",
        "",
        f"tests/{name}_test.py:{rng.randint(20, 300)}: AssertionError",
        "=========================== short test summary info ============================",
        f"FAILED tests/{name}_test.py::test_{name}_roundtrip - AssertionError",
        f"===== 1 failed, {rng.randint(100, 400)} passed in {rng.uniform(2, 30):.2f}s =====",
    ]
    return "\n".join(lines), True


def _traceback(rng: random.Random, path: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/work/repo/{path}", line {rng.randint(10, 400)}, in <module>\n'
        "    main()\n"
        f'  File "/work/repo/{path}", line {rng.randint(10, 400)}, in main\n'
        "    data = json.loads(raw)\n"
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
        "exit code 1"
    )


SOURCES = ("project", "stdlib")


def _plan(
    target_chars: int, seed: int, sources: tuple[str, ...] = SOURCES
) -> tuple[list[_Turn], list[tuple[str, str]]]:
    rng = random.Random(seed)
    files = (_project_files() if "project" in sources else []) + (
        _stdlib_files() if "stdlib" in sources else []
    )
    if not files:
        msg = "demo session: no source files found to read (is glyphfold installed?)"
        raise RuntimeError(msg)
    turns: list[_Turn] = [_Turn(user=TASK)]
    size = len(SYSTEM_PROMPT) + len(TASK)
    n_call = 0
    fi = 0
    ti = 0
    shot = screenshot_png()

    def new_id() -> str:
        nonlocal n_call
        n_call += 1
        h = hashlib.sha1(f"{seed}:{n_call}".encode()).hexdigest()[:8]
        return f"call_{n_call:04d}_{h}"

    listing = "\n".join(p for p, _ in files)
    turns[0].steps.append(
        (
            "Listing the repository first.",
            [_Call(new_id(), "bash", {"cmd": "git ls-files"}, listing)],
        )
    )
    turns[0].final = (
        "Plan: 1) read the message model, 2) write turn segmentation, 3) add the "
        "ladder with elision first, 4) snapshots, 5) tests for pairing. Starting now."
    )
    ti = 1
    while size < target_chars:
        turn = _Turn(user=USER_MESSAGES[ti % len(USER_MESSAGES)][1])
        turns.append(turn)
        size += len(turn.user)
        for _step in range(rng.randint(1, 2)):
            calls: list[_Call] = []
            for _ in range(rng.randint(1, 2)):
                path, text = files[fi % len(files)]
                fi += 1
                if len(text) > READ_CAP_CHARS:  # like real read tools: a bounded read
                    cut = text.count("\n", READ_CAP_CHARS)
                    text = (
                        text[:READ_CAP_CHARS] + f"\n... ({cut} more lines; use offset to read on)"
                    )
                calls.append(_Call(new_id(), "read_file", {"path": path}, text))
            kind = rng.random()
            if kind < 0.25:
                out, failed = _fake_test_run(
                    rng, [c.args["path"] for c in calls], rng.random() < 0.5
                )
                calls.append(
                    _Call(new_id(), "run_tests", {"cmd": "pytest -q -x tests"}, out, failed)
                )
            elif kind < 0.35:
                calls.append(
                    _Call(
                        new_id(),
                        "bash",
                        {"cmd": "python -m tool.check"},
                        _traceback(rng, calls[0].args["path"]),
                        True,
                    )
                )
            elif kind < 0.45:
                sha = hashlib.sha1(f"commit{fi}".encode()).hexdigest()
                calls.append(
                    _Call(
                        new_id(),
                        "bash",
                        {"cmd": "git log -1 --stat"},
                        f"commit {sha}\nAuthor: Dev <dev@example.com>\n\n    wip\n",
                    )
                )
            text = f"Reading {', '.join(c.args['path'] for c in calls if 'path' in c.args)}."
            if rng.random() < 0.6:
                # agents write as much as they read: an edited copy of a file just read
                src_path, src_text = calls[0].args["path"], calls[0].result
                body = src_text[:WRITE_CAP_CHARS].replace("TODO", "DONE")
                new_path = src_path.replace(".py", "_v2.py")
                calls.append(
                    _Call(
                        new_id(),
                        "write_file",
                        {"path": new_path, "content": body},
                        f"wrote {len(body):,} bytes to {new_path}",
                    )
                )
                text += f" Then writing {new_path} with the fix for GLY-{20417 + ti}."
            turn.steps.append((text, calls))
            size += sum(len(c.result) + len(json.dumps(c.args)) + 120 for c in calls) + len(text)
        if ti % len(USER_MESSAGES) == 8 and ti < len(USER_MESSAGES):
            turn.steps.append(
                (
                    "Taking the screenshot.",
                    [
                        _Call(
                            new_id(),
                            "browser_screenshot",
                            {"url": "http://localhost:8000/index.html"},
                            "Screenshot of http://localhost:8000/index.html (1280x800)",
                            image=shot,
                        )
                    ],
                )
            )
        turn.final = (
            f"Done with step {ti + 1}: I read the files above; "
            f"the next step is to check edge cases (ticket GLY-20417)."
        )
        size += len(turn.final)
        ti += 1
    return turns, files


def demo_session(
    *,
    format: str = "openai",
    target_tokens: int = 300_000,
    seed: int = 0,
    sources: tuple[str, ...] = SOURCES,
) -> Any:
    """Build the demo history in a wire format: ``"openai"`` (a list) or ``"anthropic"`` (a dict).

    ``target_tokens`` is reached at about 4 characters per token (SPEC §3.4).
    ``sources`` picks the files the agent reads: this project's modules
    (``"project"``, changes with the code) and/or standard-library modules
    (``"stdlib"``, fixed for a Python version: what tests use for stable sizes).
    """
    check_int("target_tokens", target_tokens, minimum=1000, error=ValueError)
    bad = [x for x in sources if x not in SOURCES]
    if bad or not sources:
        msg = f"sources must be a non-empty subset of {SOURCES}, got {sources!r}"
        raise ValueError(msg)
    turns, _ = _plan(target_tokens * 4, seed, tuple(sources))
    match format:
        case "openai":
            return _to_openai(turns)
        case "anthropic":
            return _to_anthropic(turns)
    msg = f"unknown demo format {format!r}; use 'openai' or 'anthropic'"
    raise ValueError(msg)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _to_openai(turns: list[_Turn]) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for t in turns:
        msgs.append({"role": "user", "content": t.user})
        for text, calls in t.steps:
            msgs.append(
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.args)},
                        }
                        for c in calls
                    ],
                }
            )
            images: list[tuple[_Call, bytes]] = []
            for c in calls:
                body = (
                    f"Error: {c.result}"
                    if c.is_error and not c.result.startswith("Traceback")
                    else c.result
                )
                msgs.append({"role": "tool", "tool_call_id": c.id, "content": body})
                if c.image is not None:
                    images.append((c, c.image))
            for c, image in images:
                msgs.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": f"[Tool results] {c.name} returned an image"},
                            {
                                "type": "image_url",
                                "image_url": {"url": "data:image/png;base64," + _b64(image)},
                            },
                        ],
                    }
                )
        msgs.append({"role": "assistant", "content": t.final})
    return msgs


def _to_anthropic(turns: list[_Turn]) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    for t in turns:
        msgs.append({"role": "user", "content": [{"type": "text", "text": t.user}]})
        for text, calls in t.steps:
            msgs.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text}]
                    + [
                        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}
                        for c in calls
                    ],
                }
            )
            results = []
            for c in calls:
                content: Any = c.result
                if c.image is not None:
                    content = [
                        {"type": "text", "text": c.result},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": _b64(c.image),
                            },
                        },
                    ]
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": c.id,
                    "content": content,
                }
                if c.is_error:
                    block["is_error"] = True
                results.append(block)
            msgs.append({"role": "user", "content": results})
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": t.final}]})
    return {"system": SYSTEM_PROMPT, "messages": msgs}
