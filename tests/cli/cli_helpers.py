"""Helpers of the CLI tests (a unique module name: tests/ dirs are not packages)."""

from __future__ import annotations

import json
from pathlib import Path

from glyphfold.cli import main


def write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


ORPHAN = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "list the files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a.py b.py"},
    {"role": "tool", "tool_call_id": "ghost", "content": "a result whose call is gone"},
    {"role": "assistant", "content": "two files"},
    {"role": "user", "content": "thanks"},
]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err
