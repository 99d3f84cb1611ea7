"""One marker vocabulary, one trim, one region splitter (issue 10, issue 9).

The kinds of the messages glyphfold inserts are named constants of
``compaction/history/markers.py``; no other library module spells them, and
no module but ``history/steps.py`` computes head / middle / tail.
"""

from __future__ import annotations

import ast
from pathlib import Path

from glyphfold.compaction.history.markers import MARKER_KINDS

ROOT = Path(__file__).resolve().parents[2] / "glyphfold" / "compaction"
ONLY_MARKERS = {"snapshot_ack", "bridge", "breadcrumb"}  # kinds that are no rung name


def _modules():
    for p in sorted(ROOT.rglob("*.py")):
        if p.name == "markers.py" and p.parent.name == "history":
            continue
        yield p, ast.parse(p.read_text(encoding="utf-8"))


def _all_names(tree: ast.Module) -> set[int]:
    """ids of the string constants inside ``__all__`` lists (names, not kinds)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            out.update(id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant))
    return out


def test_marker_kinds_are_spelled_once():
    assert set(MARKER_KINDS) >= ONLY_MARKERS
    offenders = []
    for path, tree in _modules():
        skip = _all_names(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and node.value in ONLY_MARKERS
                and id(node) not in skip
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
            # a kind read off a message and compared with a bare string
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
                f = node.left.func
                args = node.left.args
                if (
                    isinstance(f, ast.Attribute)
                    and f.attr == "get"
                    and args
                    and isinstance(args[0], ast.Constant)
                    and args[0].value == "kind"
                    and any(isinstance(c, ast.Constant) for c in node.comparators)
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} kind compared")
    assert offenders == []


def test_one_breadcrumb_text_and_one_region_splitter():
    """The breadcrumb is written by markers.breadcrumb_text only; regions by steps only."""
    offenders = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and text.startswith("[Earlier conversation omitted"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} breadcrumb text")
            splitter = isinstance(node, ast.FunctionDef) and node.name in (
                "split_regions",
                "segment_steps",
            )
            if splitter and path.name != "steps.py":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert offenders == []
