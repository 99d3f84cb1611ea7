"""Shared input/output of the commands: bounded reads of a file or stdin, history JSON, pages."""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path
from typing import Any

from glyphfold.errors import HistoryFormatError, InputError

FORMATS = ("auto", "openai", "anthropic")
MAX_INPUT_BYTES = 512 * 1024 * 1024


def add_input(parser: argparse.ArgumentParser) -> None:
    """Add the IN.json positional and the --format / --profile options."""
    parser.add_argument(
        "input",
        metavar="IN.json",
        help="history: a JSON list of messages, "
        "or an object with 'messages' and optional 'system' ('-' = stdin)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="wire format of the input (default: detect)",
    )
    parser.add_argument(
        "--profile", default="anthropic", help="provider profile (default: anthropic)"
    )


def read_input_bytes(spec: str, *, max_bytes: int = MAX_INPUT_BYTES) -> tuple[bytes, str]:
    """Return (bytes, label) of a file path or ``-`` (stdin), refusing more than ``max_bytes``."""
    if spec == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
        label = "stdin"
    else:
        path = Path(spec)
        if not path.exists():
            msg = f"input file not found: {spec}"
            raise InputError(msg)
        if not path.is_file():
            msg = f"input is not a regular file: {spec}"
            raise InputError(msg)
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
        label = spec
    if len(data) > max_bytes:
        msg = f"{label} is larger than {max_bytes} bytes; split it first"
        raise InputError(msg)
    return data, label


def read_history(spec: str) -> Any:
    """Load a history from a JSON file path or ``-`` (stdin); one-line errors on bad input."""
    data, label = read_input_bytes(spec)
    if not data.strip():
        msg = f"{label} is empty; expected a JSON chat history"
        raise InputError(msg)
    try:
        history = json.loads(data)
    except UnicodeDecodeError as exc:
        msg = f"{label} is not UTF-8 JSON: {exc.reason} at byte {exc.start}"
        raise InputError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{label} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise HistoryFormatError(msg) from None
    if not isinstance(history, list | dict):
        msg = f"{label}: a history is a JSON list of messages or an object with 'messages'"
        raise HistoryFormatError(msg)
    return history


def _json_bytes(value: Any) -> str:
    """Bytes (Bedrock and Gemini image data) as base64 text, their JSON form."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    msg = f"{type(value).__name__} is not JSON serialisable"
    raise TypeError(msg)


def write_json(data: Any, path: str | None) -> None:
    """Write JSON to ``path`` (stdout when None or '-')."""
    text = json.dumps(data, ensure_ascii=False, indent=1, default=_json_bytes) + "\n"
    if path in (None, "-"):
        sys.stdout.write(text)
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def write_pages(pages: Any, directory: str | Path) -> list[Path]:
    """Write ``page-0001.png``... and return the paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for k, page in enumerate(pages, 1):
        p = d / f"page-{k:04d}.png"
        try:
            p.write_bytes(page.png)
        except OSError as exc:
            msg = f"cannot write {p}: {exc.strerror or exc}"
            raise InputError(msg) from None
        out.append(p)
    return out
