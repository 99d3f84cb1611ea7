"""The layers of docs/architecture.md hold: a module imports only what its layer may (issue 9).

Every ``import``/``from ... import`` in a module counts, function-local ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# source folder -> (installed package prefix, prefixes it must never import)
RULES = {
    "glyphfold/compaction/history": (
        "glyphfold.compaction.history",
        (
            "glyphfold.compaction.ladder",
            "glyphfold.compaction.store",
            "glyphfold.commands",
            "glyphfold.serve",
            "glyphfold.integrations",
            "glyphfold.render.api",
            "glyphfold.render._kernels",
        ),
    ),
    "glyphfold/compaction/ladder": (
        "glyphfold.compaction.ladder",
        ("glyphfold.compaction.store", "glyphfold.commands", "glyphfold.serve"),
    ),
    "glyphfold/compaction/store": (
        "glyphfold.compaction.store",
        (
            "glyphfold.compaction.ladder",
            "glyphfold.commands",
            "glyphfold.serve",
            "glyphfold.render",
        ),
    ),
    "glyphfold/render": (
        "glyphfold.render",
        ("glyphfold.compaction", "glyphfold.commands", "glyphfold.serve"),
    ),
    "glyphfold/fonts": ("glyphfold.fonts", ("glyphfold.compaction", "glyphfold.render.api")),
    # the legibility measurements use the public ladder (compact, transcript_of, the
    # transcript's plain_text), never a rung's or the loop's internals
    "glyphfold/legibility": (
        "glyphfold.legibility",
        (
            "glyphfold.compaction.ladder.rungs",
            "glyphfold.compaction.ladder.loop",
            "glyphfold.compaction.store",
            "glyphfold.commands",
            "glyphfold.serve",
            "glyphfold.integrations",
            "glyphfold.render._kernels",
        ),
    ),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
    return out


@pytest.mark.parametrize("folder", sorted(RULES))
def test_layer_imports(folder):
    _, forbidden = RULES[folder]
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for lineno, name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(ROOT)}:{lineno} imports {name}")
    assert not bad, "layer violations:\n" + "\n".join(bad)


def _package_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).parent.parts)


def test_no_private_names_across_modules():
    """No module imports another module's private (underscore) names; a package may use its
    own private modules (``render/_kernels.py`` from the rest of ``render``)."""
    bad = []
    for folder in ("glyphfold",):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            own = _package_of(path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    if node.module == own:
                        continue  # the package's own private modules
                    for a in node.names:
                        if a.name.startswith("_") and not a.name.startswith("__"):
                            bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {a.name}")
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)
