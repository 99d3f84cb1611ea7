"""The ``glyphfold`` command line.

Subcommands live in ``glyphfold/commands/<name>.py``; each module defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int`` and keeps
heavy imports (numba, numpy, PIL) inside ``run`` so ``glyphfold --help`` is fast.
The registry below is explicit: a command exists because it is listed here.

Exit codes: 0 success; 1 the job ran but could not reach its goal (e.g. a history
that cannot fit); 2 bad usage or bad input (one-line message, no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from glyphfold.errors import GlyphfoldError

# name -> module under glyphfold.commands
COMMANDS: dict[str, str] = {
    "render": "glyphfold.commands.render",
    "profiles": "glyphfold.commands.profiles",
    "legibility": "glyphfold.commands.legibility",
    "tree": "glyphfold.commands.tree",
    "sessions": "glyphfold.commands.sessions",
    "export": "glyphfold.commands.export",
    "import": "glyphfold.commands.import_history",
    "check": "glyphfold.commands.check",
    "bench": "glyphfold.commands.bench",
    "shapes": "glyphfold.commands.shapes",
    "validate": "glyphfold.commands.validate",
    "trim": "glyphfold.commands.trim",
    "compact": "glyphfold.commands.compact",
    "context": "glyphfold.commands.context",
    "shake": "glyphfold.commands.shake",
    "demo": "glyphfold.commands.demo",
    "serve": "glyphfold.commands.serve",
}

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(EXIT_USAGE, f"glyphfold: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand."""
    parser = _Parser(prog="glyphfold", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("glyphfold: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except (GlyphfoldError, OSError, ValueError, UnicodeError) as exc:
        print(f"glyphfold: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
