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
    setup = _pyproject()["tool"]["setuptools"]
    listed = set(setup["packages"])
    found = set()
    for name, folder in setup["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]))
    # a mapped package found under another mapping's folder is the same package
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - found == set(), "listed but not in the tree"


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
