"""The extras' lower bounds are the floors the adapters check and .ci/floors installs (issue 23).

The slow test runs .ci/floors for one framework: the declared floor installed into a
throwaway virtual environment, that framework's adapter tests run there (CI has PyPI).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from glyphfold.integrations import _requires

ROOT = Path(__file__).resolve().parents[2]


def _extras() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"]["optional-dependencies"]


def test_pyproject_bounds_are_the_floors_the_adapters_check():
    extras = _extras()
    declared = {}
    for extra in ("langchain", "openai-agents", "pydantic-ai", "smolagents", "llamaindex"):
        for dep in extras[extra]:
            name, floor = re.fullmatch(r"([\w.-]+)>=([\d.]+)", dep).groups()
            declared[name] = floor
    floors = {dist: floor for dist, floor in _requires.FLOORS.values()}
    assert declared == floors
    test_extra = " ".join(extras["test"])
    for dist, floor in floors.items():  # the test extra does not promise more than users get
        assert re.search(rf"(^| ){re.escape(dist)}>={re.escape(floor)}( |$)", test_extra), dist


def test_a_too_old_framework_names_installed_and_needed_versions(monkeypatch):
    monkeypatch.setattr(_requires, "installed_version", lambda dist: "0.3.0")
    with pytest.raises(
        ImportError, match=r"needs openai-agents>=0\.21\.0, but openai-agents 0\.3\.0"
    ):
        _requires.require("openai-agents", "agents", "glyphfold.integrations.openai_agents")


def test_an_import_failure_shows_its_real_cause(monkeypatch):
    monkeypatch.setattr(_requires, "installed_version", lambda dist: "9.9.9")
    with pytest.raises(ImportError) as info:
        _requires.require("openai-agents", "agents.no_such_module", "the adapter")
    text = str(info.value)
    assert "openai-agents 9.9.9 is installed" in text and "agents.no_such_module" in text
    assert isinstance(info.value.__cause__, ImportError)


@pytest.mark.slow
def test_the_declared_floor_installs_and_passes():
    """.ci/floors for smolagents (the quickest): the floor installed, its tests run there.

    Opt-in (GLYPHFOLD_FLOORS=1): .ci/run runs .ci/floors for all five extras after the
    suite, in its own script, so the suite itself stays short and offline."""
    if not os.environ.get("GLYPHFOLD_FLOORS"):
        pytest.skip("set GLYPHFOLD_FLOORS=1 (needs PyPI); .ci/run runs .ci/floors itself")
    env = {**os.environ, "PYTHON": sys.executable}
    res = subprocess.run(
        [str(ROOT / ".ci" / "floors"), "smolagents"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )
    assert res.returncode == 0 and "floors pass" in res.stdout, (
        res.stdout[-2000:] + res.stderr[-2000:]
    )
