"""Reading and writing chat-history JSON for the history commands (validate, trim)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from glyphfold.errors import InputError

MAX_INPUT_BYTES = 512 * 1024 * 1024


def read_history_json(spec: str) -> Any:
    """Load a history from a JSON file path or ``-`` (stdin); InputError on bad input."""
    if spec == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        label = "stdin"
    else:
        path = Path(spec)
        if not path.is_file():
            msg = f"history file not found: {spec}"
            raise InputError(msg)
        with path.open("rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
        label = spec
    if len(data) > MAX_INPUT_BYTES:
        msg = f"{label} is larger than {MAX_INPUT_BYTES} bytes"
        raise InputError(msg)
    if not data.strip():
        msg = f"{label} is empty; expected a JSON chat history"
        raise InputError(msg)
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        msg = f"{label} is not UTF-8 JSON: {exc.reason} at byte {exc.start}"
        raise InputError(msg) from exc
    except json.JSONDecodeError as exc:
        msg = f"{label} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise InputError(msg) from exc


def write_history_json(history: Any, out: str | None) -> None:
    """Write a history as JSON to ``out`` (a path) or stdout when None or ``-``."""
    text = json.dumps(history, ensure_ascii=False, indent=1) + "\n"
    if out is None or out == "-":
        sys.stdout.write(text)
        return
    Path(out).write_text(text, encoding="utf-8")
