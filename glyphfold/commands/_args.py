"""Typed option values: a flag the user typed is checked, and a bad value is an error (exit 2).

The library's configuration rules (an out-of-range ratio counts as unset) are for
configuration files; on the command line a value out of range is rejected.
"""

from __future__ import annotations

import argparse
import math


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
