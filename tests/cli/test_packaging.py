"""What `pip install .` installs: every package of the source tree (issue 14, set-up).

The README's first command failed on a fresh machine with ``No module named
'glyphfold.compaction.history.wire'``: a new subpackage missing from pyproject's
explicit package list works in an editable checkout and breaks every real install.
Issue 24: after `pip install .`, `import glyphfold` from the checkout root failed (the
checkout's folder shadowed the install). Issue 23: Project-URLs were relative paths, the
license a deprecated table, Pillow a core dependency only optional features use, and an
editable install invisible to mypy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what a copy of the checkout leaves out (the build writes build/ and *.egg-info into it)
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis",
    ".ruff_cache", ".benchmarks", ".pytest_cache", "glyphfold-out", "node_modules",
)  # fmt: skip


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_directory_is_installed():
    """Every folder with an ``__init__.py`` under glyphfold/ is a package the wheel holds:
    one import package; the only mapping is the identity (a checkout imports the same tree)."""
    from setuptools import find_packages

    setup = _pyproject()["tool"]["setuptools"]
    assert setup.get("package-dir", {"": "."}) == {"": "."}, "only the identity mapping"
    found = set(find_packages(str(ROOT), include=setup["packages"]["find"]["include"]))
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "glyphfold").rglob("__init__.py")
    }
    assert on_disk - found == set(), "not discovered by [tool.setuptools.packages.find]"
    assert found == on_disk


def test_metadata_urls_license_and_dependencies():
    """Issue 23: Project-URLs must be URLs (they were docs/index.md...), the license an SPDX
    string (the table form is deprecated), Pillow only in the extras that use it."""
    project = _pyproject()["project"]
    for name, url in project.get("urls", {}).items():
        assert re.match(r"https?://[^/\s]+\.[^/\s]+", url), (name, url)
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert (ROOT / project["readme"]).is_file()
    core = " ".join(project["dependencies"]).lower()
    assert "pillow" not in core
    extras = project["optional-dependencies"]
    for extra in ("ocr", "bench", "test"):  # legibility reads pages with it; bench's baseline
        assert any(d.lower().startswith("pillow") for d in extras[extra]), extra


def test_the_core_never_imports_pillow(tmp_path):
    """demo, render, compact and the help run with Pillow made unimportable; bench, whose
    baseline is Pillow, says which extra in one line."""
    block = tmp_path / "block" / "PIL"
    block.mkdir(parents=True)
    (block / "__init__.py").write_text("raise ImportError('PIL blocked by the test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(block.parent), str(ROOT)]))

    def glyphfold(*argv: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "glyphfold", *argv]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)

    demo = glyphfold("demo", "--out", str(tmp_path / "demo"), "-q")
    assert demo.returncode == 0, demo.stderr
    compact = [str(tmp_path / "demo" / "input.json"), "--budget", "9000", "-q"]
    done = glyphfold(
        "compact", *compact, "-o", str(tmp_path / "c.json"), "--rungs", "snapshot,trim"
    )
    assert done.returncode == 0, done.stderr
    assert glyphfold("render", "--out", str(tmp_path / "r"), "-q").returncode == 0
    bench = glyphfold("bench", "--chars", "2000", "--no-fresh")
    assert bench.returncode == 2 and bench.stderr.count("\n") == 1
    assert "glyphfold[bench]" in bench.stderr


def _copy_checkout(tmp_path: Path) -> Path:
    src = tmp_path / "checkout"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_NOT_SOURCE)
    return src


def _pip(*argv: str) -> None:
    cmd = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_wheel_install_imports_from_the_checkout_root_and_anywhere(tmp_path):
    """Issue 24: after `pip install .`, `python -c "import glyphfold; glyphfold.compact"` run
    from the checkout root failed (ModuleNotFoundError: glyphfold.compaction); the wheel
    holds the docs the help points at."""
    src = _copy_checkout(tmp_path)
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src))
    (wheel,) = (tmp_path / "dist").glob("glyphfold-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "glyphfold/docs/cli.md" in names and "glyphfold/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]
    site = tmp_path / "site"
    _pip("install", "--no-deps", "--target", str(site), str(wheel))
    # the environment's other packages (numpy, numba...) stay importable; glyphfold comes
    # from the wheel, or from the checkout when run inside it (its folder is complete)
    env = dict(os.environ, PYTHONPATH=str(site))
    code = (
        "import glyphfold, pathlib; glyphfold.compact; from glyphfold import cli; "
        "print(pathlib.Path(glyphfold.__file__).parent); print(cli.docs_dir())"
    )
    for cwd, home in ((src, src / "glyphfold"), (tmp_path, site / "glyphfold")):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        package, docs = proc.stdout.split()
        assert Path(package) == home
        assert (Path(docs) / "cli.md").is_file()  # what --help cites exists where it says


@pytest.mark.slow
def test_editable_install_type_checks_with_mypy(tmp_path):
    """Issue 23: with `pip install -e .`, mypy could not find glyphfold (setuptools' import
    hook); the identity mapping makes the editable install a plain path entry."""
    src = _copy_checkout(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # --ignore-installed: with --prefix alone pip first uninstalls the glyphfold of the
    # environment running the suite (its own editable install)
    _pip(
        "install", "--no-deps", "--no-build-isolation", "--ignore-installed",
        "--prefix", str(venv), "-e", str(src),
    )  # fmt: skip
    use = tmp_path / "use.py"
    use.write_text("import glyphfold\nreveal_type(glyphfold.compact)\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "mypy", "--python-executable", str(venv / "bin" / "python")]
    cmd += ["--no-incremental", "--config-file", "/dev/null", str(use)]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CompactionResult" in proc.stdout  # the real signature, not Any


def test_readme_lists_every_extra():
    """The README lists the extras and what each enables (issue 14)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Extras", 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            rows |= set(re.findall(r"`([\w-]+)`", line.split("|")[1]))
    assert rows == set(_pyproject()["project"]["optional-dependencies"])
