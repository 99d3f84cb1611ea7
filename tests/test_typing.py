"""Type checkers see the real public API (issue 9): the README's examples type-check under
``mypy --strict``, deliberately wrong calls are rejected, and the lazy table of
``glyphfold/__init__.py`` matches the names it shows type checkers."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mypy")


def _lazy_and_typed() -> tuple[dict[str, str], dict[str, str]]:
    tree = ast.parse((ROOT / "glyphfold" / "__init__.py").read_text(encoding="utf-8"))
    lazy: dict[str, str] = {}
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_LAZY":
            assert isinstance(node.value, ast.Dict)
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                assert isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                lazy[k.value] = v.value
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                for alias in imp.names:
                    typed[alias.name] = imp.module
    return lazy, typed


def test_every_lazy_name_is_visible_to_type_checkers():
    """The three lists agree: the lazy table, the TYPE_CHECKING imports, ``__all__``."""
    import glyphfold
    import glyphfold.errors

    lazy, typed = _lazy_and_typed()
    assert lazy == typed
    errors = {n for n in vars(glyphfold.errors) if n.endswith("Error")}
    assert set(glyphfold.__all__) == set(lazy) | errors | {"__version__"}
    for name in glyphfold.__all__:
        assert getattr(glyphfold, name) is not None


@pytest.fixture(scope="module")
def staged():
    """The checkout: it has the installed layout (one glyphfold/ tree), so mypy checks this
    checkout whatever kind of install is active."""
    return ROOT


def _mypy(staged: Path, target: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(staged)}
    cmd = [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent"]
    cmd += ["--ignore-missing-imports", *flags, str(target)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=staged, timeout=300)


def _readme_script(tmp_path: Path) -> Path:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README shows the API in ```python blocks"
    # the names the README's examples take as given, with the types a harness has
    prelude = (
        "from typing import Any\n"
        "messages: list[dict[str, Any]] = []\n"
        "turn_messages: list[dict[str, Any]] = []\n"
        "exc: Exception = Exception()\n"
    )
    path = tmp_path / "readme_api.py"
    path.write_text(prelude + "\n".join(blocks), encoding="utf-8")
    return path


@pytest.mark.slow
def test_readme_examples_type_check_strictly(staged, tmp_path):
    res = _mypy(staged, _readme_script(tmp_path), "--strict")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_the_package_type_checks(staged):
    """mypy over the whole package (the settings are pyproject's [tool.mypy])."""
    res = _mypy_package(staged, "-p", "glyphfold")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_the_public_api_modules_type_check_strictly(staged):
    """Every module a public name of ``glyphfold`` comes from passes ``mypy --strict``."""
    lazy, _ = _lazy_and_typed()
    modules = sorted({"glyphfold", "glyphfold.errors", *lazy.values()})
    res = _mypy_package(staged, "--strict", *(a for m in modules for a in ("-m", m)))
    assert res.returncode == 0, res.stdout + res.stderr


def _mypy_package(staged: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "mypy", "--no-incremental", "--config-file"]
    cmd += [str(ROOT / "pyproject.toml"), *args]
    env = {**os.environ, "MYPYPATH": ""}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=staged, timeout=600)


@pytest.mark.slow
def test_wrong_calls_are_rejected(staged):
    target = ROOT / "tests" / "typing" / "wrong_calls.py"
    res = _mypy(staged, target)
    assert res.returncode == 1, res.stdout + res.stderr
    lines = target.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        m = re.search(r"# expect: ([\w-]+)", line)
        if m:
            assert re.search(rf":{lineno}: error: .*\[{m.group(1)}\]", res.stdout), (
                f"line {lineno} ({line.strip()}) was not rejected with [{m.group(1)}]:\n"
                + res.stdout
            )
