"""A rung or a provider profile is one module + one registry row (docs/architecture.md).

A throwaway rung and a throwaway profile, registered the way the recipe says (one row
each), must be found everywhere that lists rungs or profiles: the registry, the CLI's
help and checks, ``glyphfold serve``'s configuration and the contract tests (issue 24:
``serve`` kept its own rung list and the CLI help was a hand-written string).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

import glyphfold
from glyphfold import cli
from glyphfold.compaction.ladder.registry import (
    RUNGS,
    LadderConfig,
    RungSpec,
    build_rungs,
    registered_rungs,
)
from glyphfold.compaction.ladder.rungs.base import RungOutcome
from glyphfold.render.profiles import PROFILES, get_profile, profile_names
from glyphfold.serve.config import ServeConfig
from tests.ladder.rung_contract import contract_rungs, rung_problems
from tests.ladder.shapes import long_turn
from tests.render.profile_contract import contract_profiles, profile_problems


class Noop:
    """A rung that changes nothing (the smallest rung the protocol allows)."""

    name = "noop"
    model_free = True

    def apply(self, history, ctx):
        return RungOutcome(history, None)


@pytest.fixture
def throwaway(monkeypatch):
    monkeypatch.setitem(RUNGS, "noop", RungSpec("noop", Noop, True, lambda cfg, opts: Noop()))
    profile = dataclasses.replace(get_profile("anthropic"), name="throwaway-vision")
    monkeypatch.setitem(PROFILES, profile.name, profile)
    return "noop", profile.name


def _help(command: str) -> str:
    parser = cli.build_parser()
    sub = parser._subparsers._group_actions[0]
    return sub.choices[command].format_help()


def test_a_new_rung_is_found_everywhere(throwaway, capsys):
    rung, _ = throwaway
    # the registry
    assert rung in registered_rungs()
    built = build_rungs(rung, config=LadderConfig(), allowed=registered_rungs())
    assert [type(r) for r in built] == [Noop]
    history = long_turn("openai", steps=6)
    res = glyphfold.compact(history, budget=100_000, rungs=[rung, "trim"])
    assert res.messages is history
    # the CLI: its help lists it, its check of --rungs takes it
    assert rung in " ".join(_help("compact").split())
    from glyphfold.commands.compact import _check_rungs

    _check_rungs(
        type(
            "Args",
            (),
            {"rungs": f"elide,{rung}", "summarizer": None, "focus": None, "summary_model": None},
        )()
    )
    # glyphfold serve: accepted, and a model-free rung is in the default and in recovery
    cfg = ServeConfig(rungs=(rung, "trim"))
    assert cfg.reactive_rungs == (rung, "trim")
    assert rung in ServeConfig().rungs
    # the contract tests run over it
    assert rung in contract_rungs()
    assert rung_problems(rung) == []


def test_a_new_profile_is_found_everywhere(throwaway, capsys):
    _, profile = throwaway
    assert profile in profile_names()
    assert profile in contract_profiles() and profile in contract_profiles(vision=True)
    assert profile_problems(get_profile(profile)) == []
    assert ServeConfig(profiles={"my-model": profile}).profiles["my-model"] == profile
    from glyphfold.commands import profiles as command

    parser = __import__("argparse").ArgumentParser()
    command.add_arguments(parser)
    assert command.run(parser.parse_args(["--json"])) == 0
    assert profile in {r["name"] for r in json.loads(capsys.readouterr().out)}
    res = glyphfold.compact(long_turn("anthropic", steps=12), budget=6_000, profile=profile)
    assert res.fits


def test_a_broken_new_profile_is_caught_by_the_contract(monkeypatch):
    """Request limit smaller than one image: it passed every test before (issue 24)."""
    base = get_profile("anthropic")
    broken = dataclasses.replace(base, name="broken", max_request_bytes=base.max_image_bytes // 2)
    monkeypatch.setitem(PROFILES, broken.name, broken)
    problems = {n: profile_problems(get_profile(n)) for n in contract_profiles()}
    assert problems["broken"]
    assert not any(v for k, v in problems.items() if k != "broken")
