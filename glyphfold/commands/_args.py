"""Typed option values: a flag the user typed is checked, and a bad value is an error (exit 2).

The library's configuration rules (an out-of-range ratio counts as unset) are for
configuration files; on the command line a value out of range is rejected.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any


def _int(text: str) -> int:
    try:
        return int(text.replace(",", "").replace("_", ""))
    except ValueError:
        msg = f"expected a whole number, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def positive_int(text: str) -> int:
    """An int >= 1 (thousands separators allowed: 60,000 or 60_000)."""
    n = _int(text)
    if n < 1:
        msg = f"must be a positive whole number, got {text}"
        raise argparse.ArgumentTypeError(msg)
    return n


def non_negative_int(text: str) -> int:
    """An int >= 0."""
    n = _int(text)
    if n < 0:
        msg = f"must be 0 or more, got {text}"
        raise argparse.ArgumentTypeError(msg)
    return n


def ratio(text: str) -> float:
    """A float in (0, 1]."""
    try:
        r = float(text)
    except ValueError:
        msg = f"expected a number in (0, 1], got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not math.isfinite(r) or not 0.0 < r <= 1.0:
        msg = f"must be in (0, 1] (a fraction of the window), got {text}"
        raise argparse.ArgumentTypeError(msg)
    return r


def add_json(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--json``: print one JSON object on stdout instead of the human text."""
    parser.add_argument("--json", action="store_true", help=f"print one JSON object: {what}")


def check_profile(name: str):
    """The provider profile ``name`` (UnknownProfileError, exit 2, lists the valid names)."""
    from glyphfold.render.profiles import get_profile

    return get_profile(name)


class LazyHelp(str):
    """An option's help text made when the help is shown, not when the parser is built.

    ``--rungs`` lists the rung registry: importing it (every rung, the renderer) for each
    command line would cost more than the command; argparse formats a help text with
    ``help % params`` only when it prints it.
    """

    _make: Callable[[], str]

    def __new__(cls, make: Callable[[], str]) -> LazyHelp:
        obj = super().__new__(cls, "(listed when shown)")
        obj._make = make
        return obj

    def __mod__(self, params: Any) -> str:
        return self._make() % params


def rungs_help() -> str:
    """The ``--rungs`` help: the registry's rungs in ladder order, and which call a model."""
    from glyphfold.compaction.ladder.registry import model_free_rungs, registered_rungs

    names = registered_rungs()
    free = set(model_free_rungs())
    with_model = [n for n in names if n not in free]
    text = f"comma-separated rungs in order (default: {','.join(names)}"
    if with_model:
        text += f"; {', '.join(with_model)} only with --summarizer"
    return text + ")"
