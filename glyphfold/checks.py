"""Argument checks every layer shares: an int in a range, a number, one of a set of choices.

One wording for every option of the library: the name, what it must be, the value
given. ``error`` is the exception class to raise (``InputError`` for function
arguments; a config dataclass's ``__post_init__`` passes ``ValueError``), so a caller's
``except ValueError`` always works.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

from glyphfold.errors import InputError

__all__ = ["check_choice", "check_int", "check_number"]

T = TypeVar("T")


def _range(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"in {minimum}..{maximum}"
    if minimum is not None:
        return f">= {minimum}"
    return f"<= {maximum}"


def check_int(
    name: str,
    value: object,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    unit: str = "",
    error: type[Exception] = InputError,
) -> int:
    """``value`` if it is an int (not a bool) within [minimum, maximum]; else ``error``.

    ``unit`` names what the number counts (``"tokens"``, ``"px"``) in the message.
    """
    of = f" ({unit})" if unit else ""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int{of}, got {value!r}"
        raise error(msg)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        msg = f"{name} must be {_range(minimum, maximum)}{of}, got {value}"
        raise error(msg)
    return value


def check_number(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    error: type[Exception] = InputError,
) -> float:
    """``value`` as a float if it is a finite real number (not a bool) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        msg = f"{name} must be a finite number, got {value!r}"
        raise error(msg)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        msg = f"{name} must be {_range(minimum, maximum)}, got {value}"
        raise error(msg)
    return float(value)


def check_choice(
    name: str, value: T, choices: Iterable[T], *, error: type[Exception] = InputError
) -> T:
    """``value`` if it is one of ``choices``; else ``error`` listing them."""
    options = tuple(choices)
    if value not in options:
        msg = f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}"
        raise error(msg)
    return value
