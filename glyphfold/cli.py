"""The ``glyphfold`` command line.

Subcommands live in ``glyphfold/commands/<name>.py``; each module defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int`` and keeps
heavy imports (numba, numpy, PIL) inside ``run`` so ``glyphfold --help`` is fast.
The registry below is explicit: a command exists because it is listed here, and
``glyphfold --help`` lists the commands in this order. Reference: docs/cli.md.

The docs ship inside the package (``glyphfold/docs``): every ``--help`` that cites
``docs/...`` says where that folder is installed, so the citation resolves on the
user's machine (the project has no public web address to point at).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from glyphfold.errors import GlyphfoldError

# name -> module under glyphfold.commands, in the order --help shows them:
# the main job, then histories, pages, the transcript store
COMMANDS: dict[str, str] = {
    "demo": "glyphfold.commands.demo",
    "compact": "glyphfold.commands.compact",
    "context": "glyphfold.commands.context",
    "shake": "glyphfold.commands.shake",
    "trim": "glyphfold.commands.trim",
    "validate": "glyphfold.commands.validate",
    "render": "glyphfold.commands.render",
    "shapes": "glyphfold.commands.shapes",
    "profiles": "glyphfold.commands.profiles",
    "legibility": "glyphfold.commands.legibility",
    "bench": "glyphfold.commands.bench",
    "serve": "glyphfold.commands.serve",
    "sessions": "glyphfold.commands.sessions",
    "tree": "glyphfold.commands.tree",
    "export": "glyphfold.commands.export",
    "import": "glyphfold.commands.import_history",
    "check": "glyphfold.commands.check",
}

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DESCRIPTION = """\
glyphfold keeps long LLM-agent conversations inside the model's context window:
it elides old tool results, strips old images, and renders the middle of a history
into dense PNG glyph pages that a vision model reads back."""
EPILOG = """\
exit codes:
  0  success
  1  the job ran but could not reach its goal (e.g. a history that cannot fit its
     budget, a history that breaks provider rules); nothing is written
  2  bad usage or bad input (one line on stderr, no traceback)

`glyphfold COMMAND --help` describes a command; the reference is docs/cli.md.
{docs_line}
Progress of long work is shown on stderr when it is a terminal; -q/--quiet hides it
and the summaries (errors, warnings and repairs are always printed)."""


class _UsageError(Exception):
    """A command line argparse rejects (exit 2; printed by :func:`main`)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        raise _UsageError(message)


def _fail(message: str, *, json_out: bool) -> int:
    """An exit-2 error: one line on stderr; with --json also one object on stdout."""
    from glyphfold.commands._term import escape, print_json

    print(f"glyphfold: error: {escape(message)}", file=sys.stderr)
    if json_out:
        print_json({"error": message, "exit_code": EXIT_USAGE})
    return EXIT_USAGE


def docs_dir() -> Path:
    """The installed docs folder (``glyphfold/docs``; in a checkout, the repository's docs/)."""
    return (Path(__file__).parent / "docs").resolve()


def _docs_line() -> str:
    """Where ``docs/...`` in a help text is on this machine (one line)."""
    return f"docs/ is installed with glyphfold at {docs_dir()}/ (Markdown; any viewer reads it)"


def _cites_docs(parser: argparse.ArgumentParser) -> bool:
    texts = [parser.description or "", parser.epilog or ""]
    texts += [a.help or "" for a in parser._actions if isinstance(a.help, str)]
    return any("docs/" in t for t in texts)


def _version() -> str:
    from glyphfold import __version__

    return f"glyphfold {__version__}"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand.

    ``only`` names the command about to run: it is the only one declared (the
    others' modules are not even imported: declaring them imports what they need,
    the history model, tables...; a ``render`` started cold does not pay for them,
    issue 22). Without it (``glyphfold --help``, an unknown command) every command
    is listed with its help.
    """
    parser = _Parser(
        prog="glyphfold",
        description=DESCRIPTION,
        epilog=EPILOG.format(docs_line=_docs_line()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(module_name)
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        if not any("--quiet" in a.option_strings for a in p._actions):
            p.add_argument(
                "-q", "--quiet", action="store_true", help="no progress and no summary on stderr"
            )
        p.set_defaults(_run=module.run)
        if _cites_docs(p):
            p.epilog = f"{p.epilog}\n\n{_docs_line()}" if p.epilog else _docs_line()
    return parser


def _show_library_notices(*, quiet: bool) -> None:
    """The library's warnings (the kernels' compile notice) on stderr, as plain lines."""
    import logging

    class _Stderr(logging.StreamHandler):
        """Writes to the sys.stderr of the moment (a caller may swap it between runs)."""

        @property
        def stream(self) -> Any:
            return sys.stderr

        @stream.setter
        def stream(self, value: Any) -> None:
            pass

    logger = logging.getLogger("glyphfold.render")
    if not quiet and not any(getattr(h, "_glyphfold_cli", False) for h in logger.handlers):
        handler = _Stderr()
        handler.setLevel(logging.WARNING)
        handler._glyphfold_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)


def _quiet_blas() -> None:
    """One OpenBLAS thread for the CLI's process, unless the user chose otherwise.

    glyphfold multiplies no matrices, but numpy starts OpenBLAS's thread pool when it
    loads, and those threads spin: ~0.1 s of CPU of every fresh ``glyphfold`` run
    (issue 22, cold start). Only the command line does this, before numpy loads: a
    library must not change its host's BLAS threads.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code.

    With ``--json`` stdout carries exactly one JSON object whatever the exit code: the
    report (0), the report with ``error`` and ``exit_code`` (1), or ``{"error",
    "exit_code": 2}`` (2); the error line is on stderr too (docs/cli.md, Conventions).
    """
    from glyphfold.commands._progress import configure

    _quiet_blas()
    argv = list(sys.argv[1:] if argv is None else argv)
    json_out = "--json" in argv
    parser = build_parser(only=argv[0] if argv and argv[0] in COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        return _fail(str(exc), json_out=json_out)
    except SystemExit as exc:  # --help or --version (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    json_out = bool(getattr(args, "json", False))
    configure(quiet=bool(getattr(args, "quiet", False)))
    _show_library_notices(quiet=bool(getattr(args, "quiet", False)))
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("glyphfold: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except (GlyphfoldError, OSError, ValueError, UnicodeError) as exc:
        return _fail(str(exc), json_out=json_out)
    except RecursionError:
        return _fail("the input is nested too deeply", json_out=json_out)
    except MemoryError:
        return _fail("out of memory (the input is too large)", json_out=json_out)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
