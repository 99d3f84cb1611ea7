"""What `pip install .` installs: every package of the source tree (issue 14, set-up).

The README's first command failed on a fresh machine with ``No module named
'glyphfold.compaction.history.wire'``: a new subpackage missing from pyproject's
explicit package list works in an editable checkout and breaks every real install.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_directory_is_installed():
    """Every folder with an ``__init__.py`` under glyphfold/ is a package the wheel holds:
    one import package, no package-dir mapping (a checkout imports the same tree)."""
    from setuptools import find_packages

    setup = _pyproject()["tool"]["setuptools"]
    assert "package-dir" not in setup, "a mapping makes the checkout shadow the install"
    found = set(find_packages(str(ROOT), include=setup["packages"]["find"]["include"]))
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "glyphfold").rglob("__init__.py")
    }
    assert on_disk - found == set(), "not discovered by [tool.setuptools.packages.find]"
    assert found == on_disk


def test_metadata_points_at_files_that_exist():
    project = _pyproject()["project"]
    for target in project["urls"].values():
        assert (ROOT / target).is_file(), target
    assert (ROOT / project["readme"]).is_file()
    assert "License :: OSI Approved :: MIT License" in project["classifiers"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_readme_lists_every_extra():
    """The README lists the extras and what each enables (issue 14)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Extras", 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            rows |= set(re.findall(r"`([\w-]+)`", line.split("|")[1]))
    assert rows == set(_pyproject()["project"]["optional-dependencies"])
