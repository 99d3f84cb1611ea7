"""glyphfold.checks: the one wording of every option check (issue 9)."""

from __future__ import annotations

import math

import pytest

from glyphfold.checks import check_choice, check_int, check_number
from glyphfold.errors import InputError


@pytest.mark.parametrize(
    ("value", "kw", "match"),
    [
        (True, {}, "n must be an int, got True"),
        ("3", {}, "n must be an int, got '3'"),
        (2.0, {}, "n must be an int, got 2.0"),
        (0, {"minimum": 1}, "n must be >= 1, got 0"),
        (9, {"minimum": 0, "maximum": 8, "unit": "px"}, r"n must be in 0\.\.8 \(px\), got 9"),
        (9, {"maximum": 8}, "n must be <= 8, got 9"),
    ],
)
def test_check_int_names_the_value_and_the_rule(value, kw, match):
    with pytest.raises(InputError, match=match):
        check_int("n", value, **kw)


def test_check_int_passes_ints_through_and_raises_the_given_class():
    assert check_int("n", 5, minimum=5, maximum=5) == 5
    with pytest.raises(ValueError, match="must be >= 1") as info:
        check_int("n", 0, minimum=1, error=ValueError)
    assert type(info.value) is ValueError


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, False, "1", None])
def test_check_number_refuses_what_is_not_a_finite_number(value):
    with pytest.raises(InputError, match="x must be a finite number"):
        check_number("x", value)


def test_check_number_bounds_and_float_result():
    assert check_number("x", 3) == 3.0 and isinstance(check_number("x", 3), float)
    with pytest.raises(InputError, match=r"x must be in 0\.0\.\.1\.0, got 1\.5"):
        check_number("x", 1.5, minimum=0.0, maximum=1.0)


def test_check_choice_lists_the_options():
    assert check_choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(InputError, match="mode must be one of 'a', 'b'; got 'c'"):
        check_choice("mode", "c", ("a", "b"))
