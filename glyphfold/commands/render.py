"""``glyphfold render``: render a text file (or stdin, or the built-in sample) to PNG pages."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from glyphfold.commands._history_io import read_input_bytes, write_pages
from glyphfold.errors import InputError

HELP = "render text into dense PNG glyph pages (no INPUT: the built-in sample transcript)"

DEFAULT_OUT = "glyphfold-out"
MAX_INPUT_BYTES = 256 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold render``."""
    parser.add_argument("input", nargs="?", metavar="INPUT|-", help="text file, or - for stdin")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help="output directory")
    parser.add_argument("--profile", default="anthropic", help="provider profile")
    parser.add_argument("--shape", default=None, help="glyph shape (dense, regular, large...)")
    parser.add_argument("--font", default=None, metavar="PATH", help="font file or bundled name")
    parser.add_argument("--cell", default=None, metavar="WxH", help="cell size in px")
    parser.add_argument("--page", default=None, metavar="WxH", help="page size in px")
    parser.add_argument("--bits", type=int, default=None, choices=(1, 2, 4, 8))
    parser.add_argument("--reflow", action="store_true", help="fold newlines into a glyph")
    parser.add_argument(
        "--collapse",
        action="store_true",
        help="fold whitespace runs and blank lines, halve indentation (docs/rendering.md)",
    )
    parser.add_argument(
        "--margin", type=int, default=None, metavar="PX", help="paper around the text (default 8)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON summary object")


def _read_input(spec: str | None) -> tuple[str, str]:
    """Return (text, label) for a path, ``-`` (stdin) or None (the sample)."""
    if spec is None:
        from glyphfold.samples.mixed_text import SAMPLE_TRANSCRIPT

        return SAMPLE_TRANSCRIPT, "built-in sample transcript"
    data, label = read_input_bytes(spec, max_bytes=MAX_INPUT_BYTES)
    if not data.strip():
        msg = f"{label} is empty: nothing to render"
        raise InputError(msg)
    if b"\x00" in data[:65536]:
        msg = f"{label} looks binary (NUL bytes); glyphfold renders UTF-8 text"
        raise InputError(msg)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{label} is not valid UTF-8 (byte offset {exc.start}); convert it to UTF-8 first"
        raise InputError(msg) from None
    return text.removeprefix("\ufeff"), label


def _prepare_out(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        msg = f"--out {out} exists and is not a directory"
        raise InputError(msg)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".glyphfold-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        msg = f"cannot write to output directory {out}: {exc.strerror or exc}"
        raise InputError(msg) from None
    return path


def run(args: argparse.Namespace) -> int:
    """Render, write page-0001.png..., print a summary; return the exit code."""
    from glyphfold.render.api import describe, render_text

    text, label = _read_input(args.input)
    out = _prepare_out(args.out)
    result = render_text(
        text,
        profile=args.profile,
        shape=args.shape,
        font=args.font,
        cell=args.cell,
        page=args.page,
        bits=args.bits,
        reflow=args.reflow,
        collapse=args.collapse,
        margin=args.margin,
    )
    files = [str(p) for p in write_pages(result.pages, out)]
    summary = describe(result)
    summary["files"] = files
    summary["input"] = label
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(
            f"{label}: {summary['chars']} chars -> {summary['pages']} page(s) "
            f"{summary['width']}x{summary['height']} in {out}/, "
            f"{summary['image_tokens']} image tokens vs ~{summary['text_tokens_estimate']} "
            f"text tokens ({summary['chars_per_image_token']} chars/image token), "
            f"{summary['elapsed_ms']} ms"
        )
        for hint in result.hints:
            print(f"hint: {hint}", file=sys.stderr)
    return 0
