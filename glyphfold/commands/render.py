"""``glyphfold render``: render a text file (or stdin, or the built-in sample) to PNG pages."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glyphfold.commands._args import add_json
from glyphfold.commands._input_bytes import read_input_bytes
from glyphfold.errors import InputError

if TYPE_CHECKING:
    from glyphfold.render.layout import TextFeed

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
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="N",
        help="threads drawing and encoding pages (default 1; 2 uses both cores of a quiet box)",
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


# Files larger than this are rendered from the file, block by block (never held whole)
STREAM_BYTES = 16 * 1024 * 1024
_BLOCK = 1 << 20


def _large_file(spec: str | None) -> Path | None:
    """The input's path when it is a regular file worth streaming, else None."""
    if spec is None or spec == "-":
        return None
    path = Path(spec)
    try:
        return path if path.is_file() and path.stat().st_size > STREAM_BYTES else None
    except OSError:
        return None  # the ordinary reader says what is wrong


def _stream_input(path: Path) -> tuple[TextFeed, str]:
    """(a feed of the file's text, label) for a large file: checked first (size, NUL
    bytes, UTF-8) in one pass that keeps nothing, then read again block by block."""
    import codecs

    from glyphfold.render.layout import TextFeed

    label = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            msg = (
                f"{label} is {size:,} bytes, over the {MAX_INPUT_BYTES:,}-byte input limit "
                "(nothing read); split it (`split -C 200M`) and render each part"
            )
            raise InputError(msg)
        with path.open("rb") as fh:
            head = fh.read(65536)
            if b"\x00" in head:
                msg = f"{label} looks binary (NUL bytes); glyphfold renders UTF-8 text"
                raise InputError(msg)
            decoder = codecs.getincrementaldecoder("utf-8")("strict")
            offset, block, solid = 0, head, False
            while block:
                try:
                    text = decoder.decode(block)
                except UnicodeDecodeError as exc:
                    msg = (
                        f"{label} is not valid UTF-8 (byte offset {offset + exc.start:,}); "
                        "convert it to UTF-8 first"
                    )
                    raise InputError(msg) from None
                solid = solid or bool(text.strip())
                offset += len(block)
                block = fh.read(_BLOCK)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        msg = f"{label} is not valid UTF-8 (it ends inside a character); convert it first"
        raise InputError(msg) from None
    except OSError as exc:
        msg = f"cannot read {label}: {exc.strerror or exc}"
        raise InputError(msg) from None
    if not solid:
        msg = f"{label} is empty: nothing to render"
        raise InputError(msg)

    def pieces() -> Iterator[str]:
        # newline="": line breaks reach the layout as they are in the file
        with path.open(encoding="utf-8", newline="") as fh:
            first = True
            while piece := fh.read(_BLOCK):
                yield piece.removeprefix("\ufeff") if first else piece
                first = False

    return TextFeed(pieces(), size_hint=size), label


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


def cheaper_option(
    text: str | None, options: dict[str, Any], image_tokens: int, *, chars: int = 0
) -> str:
    """Name the cheapest way to send ``text``: another shape/reflow, or text itself
    (``text`` None: a streamed file of ``chars`` characters, only the latter)."""
    from glyphfold.render.api import plan_text

    n = len(text) if text is not None else chars
    text_tokens = (n + 3) // 4
    best: tuple[int, str] | None = None
    if text is not None and n <= MAX_PLAN_CHARS and options["cell"] is None:
        for shape in ("dense", "regular", "large"):
            for reflow in (False, True):
                if shape == options["shape"] and reflow == options["reflow"]:
                    continue
                trial = {**options, "shape": shape, "reflow": reflow}
                # an option is named only when it beats the pages, the text and the best
                # so far: its plan stops at that price (a few pages, not the text)
                beat = min(image_tokens, text_tokens, best[0] if best else image_tokens)
                if beat < 1:
                    break
                plan = plan_text(text, **trial, max_tokens=beat - 1)
                if plan.complete:
                    flags = f"--shape {shape}"
                    if reflow != options["reflow"]:
                        flags += " --reflow" if reflow else " --no-reflow"
                    best = (plan.image_tokens, flags)
    if best is not None:
        return f"{best[1]} costs ~{best[0]:,} image tokens"
    return f"send it as text (~{text_tokens:,} tokens)"


_DONE = object()


def rendered_ahead(pages: Iterable[Any], *, depth: int) -> Iterator[Any]:
    """The items of ``pages``, produced on a thread of their own up to ``depth`` ahead.

    ``render --threads N``: the page files' system calls (create, write, rename: ~0.5
    ms a page) run in this thread while the render goes on, instead of between its
    pages. An error of the render is raised here; stopping early stops the render.
    """
    import queue
    import threading

    box: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for page in pages:
                if not put(page):
                    return
            put(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)

    worker = threading.Thread(target=produce, name="glyphfold-render", daemon=True)
    worker.start()
    try:
        while True:
            item = box.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


def run(args: argparse.Namespace) -> int:
    """Render, write page-0001.png..., print a summary; return the exit code."""
    from glyphfold.commands._output import output_dir, write_pages
    from glyphfold.commands._progress import fraction_status, progress
    from glyphfold.commands._term import note, print_json, say
    from glyphfold.render.api import describe, iter_pages
    from glyphfold.render.options import RenderOptions

    large = _large_file(args.input)
    source: str | TextFeed
    text: str | None
    if large is not None:  # read block by block: memory holds neither text nor pages
        source, label = _stream_input(large)
        text, what = None, f"rendering {large.stat().st_size:,} bytes"
    else:
        text, label = _read_input(args.input)
        source, what = text, f"rendering {len(text):,} chars"
    _check_font(args.font)
    out = output_dir(args.out)
    # pages are written as they are drawn: memory holds a few pages, not the render
    stream = iter_pages(source, RenderOptions(**_options(args), threads=args.threads))
    status = fraction_status(lambda: (stream.pages_done, stream.fraction), "pages")
    pages = stream if args.threads <= 1 else rendered_ahead(stream, depth=8 * args.threads)
    with progress(what, status):
        files = [str(p) for p in write_pages(pages, out)]
    result = stream.result()
    summary = describe(result)
    summary["files"] = files
    summary["input"] = label
    warning = None
    if result.image_tokens > result.text_tokens_estimate:
        warning = (
            f"these pages cost {result.image_tokens:,} image tokens, more than the text "
            f"itself (~{result.text_tokens_estimate:,} tokens); "
            f"{cheaper_option(text, _options(args), result.image_tokens, chars=result.chars)}"
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
