"""Every rung of the registry keeps the rung contract (the Rung protocol's docstring):
input untouched, output valid for the provider, the head kept, never a longer history."""

from __future__ import annotations

from typing import get_args

import pytest

from glyphfold.compaction.ladder.registry import DEFAULT_RUNGS, RungName
from tests.ladder.rung_contract import contract_rungs, rung_problems


@pytest.mark.parametrize("name", contract_rungs())
def test_every_registered_rung_keeps_the_contract(name):
    assert rung_problems(name) == []


def test_the_rung_name_type_lists_the_registry():
    """``RungName`` is the Literal type checkers see; it must name exactly the registry."""
    assert get_args(RungName) == DEFAULT_RUNGS
