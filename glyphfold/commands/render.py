"""``glyphfold render``: render a text file (or stdin, or the built-in sample) to PNG pages."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from glyphfold.commands._args import add_json
from glyphfold.commands._history_io import read_input_bytes
from glyphfold.errors import InputError

HELP = "render text into dense PNG glyph pages (no INPUT: the built-in sample transcript)"
DESCRIPTION = """\
Render text into dense PNG glyph pages sized for a provider profile and write
page-0001.png... into --out (page-*.png of an earlier run there are removed
first). Warns when the pages would cost more image tokens than the text as
text, and names the cheaper option. Reference: docs/cli.md#render,
docs/rendering.md."""
EPILOG = "exit codes: 0 pages written; 2 bad usage or bad input (nothing written)"

DEFAULT_OUT = "glyphfold-out"
MAX_INPUT_BYTES = 256 * 1024 * 1024
# above this, the cheaper-option search (a layout per candidate) is skipped
MAX_PLAN_CHARS = 2_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold render``."""
    parser.epilog = EPILOG
    parser.add_argument("input", nargs="?", metavar="INPUT", help="text file, or - for stdin")
    parser.add_argument(
        "--out", default=DEFAULT_OUT, metavar="DIR", help="output folder (default: glyphfold-out)"
    )
    parser.add_argument(
        "--profile",
        default="anthropic",
        metavar="NAME",
        help="provider profile (default: anthropic)",
    )
    parser.add_argument(
        "--shape", default=None, metavar="NAME", help="glyph shape (dense, regular, large...)"
    )
    parser.add_argument("--font", default=None, metavar="PATH", help="font file or bundled name")
    parser.add_argument("--cell", default=None, metavar="WxH", help="cell size in px")
    parser.add_argument("--page", default=None, metavar="WxH", help="page size in px")
    parser.add_argument("--bits", type=int, default=None, choices=(1, 2, 4, 8))
    parser.add_argument(
        "--reflow",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fold newlines into a one-cell mark and keep the text flowing, as snapshot pages "
        "do (default; --no-reflow keeps every line on its own row)",
    )
    parser.add_argument(
        "--collapse",
        action="store_true",
        help="fold whitespace runs and blank lines, halve indentation (docs/rendering.md)",
    )
    parser.add_argument(
        "--margin", type=int, default=None, metavar="PX", help="paper around the text (default 8)"
    )
    add_json(parser, "pages, chars, sizes, image tokens vs text tokens, files")


def _read_input(spec: str | None) -> tuple[str, str]:
    """Return (text, label) for a path, ``-`` (stdin) or None (the sample)."""
    if spec is None:
        from glyphfold.samples.mixed_text import SAMPLE_TRANSCRIPT

        return SAMPLE_TRANSCRIPT, "built-in sample transcript"
    data, label = read_input_bytes(
        spec, max_bytes=MAX_INPUT_BYTES, advice="split it (`split -C 200M`) and render each part"
    )
    if not data.strip():
        msg = f"{label} is empty: nothing to render"
        raise InputError(msg)
    if b"\x00" in data[:65536]:
        msg = f"{label} looks binary (NUL bytes); glyphfold renders UTF-8 text"
        raise InputError(msg)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{label} is not valid UTF-8 (byte offset {exc.start:,}); convert it to UTF-8 first"
        raise InputError(msg) from None
    return text.removeprefix("\ufeff"), label


def _check_font(font: str | None) -> None:
    """A --font that names a file must be a font FreeType opens (one line, not a traceback)."""
    if font is None or not Path(font).is_file():
        return  # a bundled name, or missing: the resolver says which
    import freetype

    try:
        freetype.Face(str(font))
    except freetype.ft_errors.FT_Exception as exc:
        msg = f"--font {font} is not a font file FreeType can open ({str(exc).strip()})"
        raise InputError(msg) from None


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "profile": args.profile,
        "shape": args.shape,
        "font": args.font,
        "cell": args.cell,
        "page": args.page,
        "bits": args.bits,
        "reflow": args.reflow,
        "collapse": args.collapse,
        "margin": args.margin,
    }


def cheaper_option(text: str, options: dict[str, Any], image_tokens: int) -> str:
    """Name the cheapest way to send ``text``: another shape/reflow, or text itself."""
    from glyphfold.render.api import plan_text

    text_tokens = (len(text) + 3) // 4
    best: tuple[int, str] | None = None
    if len(text) <= MAX_PLAN_CHARS and options["cell"] is None:
        for shape in ("dense", "regular", "large"):
            for reflow in (False, True):
                if shape == options["shape"] and reflow == options["reflow"]:
                    continue
                trial = {**options, "shape": shape, "reflow": reflow}
                cost = plan_text(text, **trial).image_tokens
                flags = f"--shape {shape}"
                if reflow != options["reflow"]:
                    flags += " --reflow" if reflow else " --no-reflow"
                if cost < image_tokens and (best is None or cost < best[0]):
                    best = (cost, flags)
    if best is not None and best[0] < text_tokens:
        return f"{best[1]} costs ~{best[0]:,} image tokens"
    return f"send it as text (~{text_tokens:,} tokens)"


def run(args: argparse.Namespace) -> int:
    """Render, write page-0001.png..., print a summary; return the exit code."""
    from glyphfold.commands._output import output_dir, write_pages
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import note, print_json, say
    from glyphfold.render.api import describe, render_text

    text, label = _read_input(args.input)
    _check_font(args.font)
    out = output_dir(args.out)
    with progress(f"rendering {len(text):,} chars"):
        result = render_text(text, **_options(args))
        files = [str(p) for p in write_pages(result.pages, out)]
    summary = describe(result)
    summary["files"] = files
    summary["input"] = label
    warning = None
    if result.image_tokens > result.text_tokens_estimate:
        warning = (
            f"these pages cost {result.image_tokens:,} image tokens, more than the text "
            f"itself (~{result.text_tokens_estimate:,} tokens); "
            f"{cheaper_option(text, _options(args), result.image_tokens)}"
        )
    summary["warning"] = warning
    if args.json:
        print_json(summary)
    elif not getattr(args, "quiet", False):
        say(
            f"{label}: {summary['chars']:,} chars -> {summary['pages']:,} page(s) "
            f"{summary['width']}x{summary['height']} in {out}/, "
            f"{summary['image_tokens']:,} image tokens vs ~{summary['text_tokens_estimate']:,} "
            f"text tokens ({summary['chars_per_image_token']} chars/image token), "
            f"{summary['elapsed_ms']:,.0f} ms"
        )
        for hint in result.hints:
            note(f"hint: {hint}")
    if warning:
        note(f"glyphfold: warning: {warning}")
    return 0
