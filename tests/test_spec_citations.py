"""Every ``SPEC §N.M`` cited in the repository exists in docs/spec.md.

Code, tests, docs and benchmarks point at rules of the project's specification by number
(``SPEC §3.4``, a range ``SPEC §5.5-5.7``, a section ``SPEC §6``, or a bare ``§3.6`` inside
prose). A number that docs/spec.md does not define leaves the reader with nothing to follow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "docs" / "spec.md"
SCANNED_DIRS = ("glyphfold", "tests", "docs", "benchmarks", ".ci")
SCANNED_FILES = ("README.md", "CHANGELOG.md", "pyproject.toml")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".sh", ""}
SKIPPED_PARTS = {"node_modules", "__pycache__", ".venv", "pixel"}  # pixel: glyph tables

# "§5", "§5.3", "§5.3-5.6", "§1-4" (a hyphen or an en dash between the ends)
CITATION = re.compile(r"§\s?(\d+(?:\.\d+)?)(?:\s?[-\u2013]\s?(\d+(?:\.\d+)?))?")
SECTION_HEADING = re.compile(r"^## (\d+)\. ", re.MULTILINE)
RULE_LINE = re.compile(r"^(\d+\.\d+) \S", re.MULTILINE)


def defined_numbers(text: str) -> set[str]:
    """The section numbers (``"5"``) and rule numbers (``"5.3"``) a spec text defines."""
    return set(SECTION_HEADING.findall(text)) | set(RULE_LINE.findall(text))


def _key(number: str) -> tuple[int, ...]:
    return tuple(int(p) for p in number.split("."))


def citation_problems(text: str, defined: set[str]) -> list[str]:
    """What is wrong with each citation in ``text``: an unknown number or a reversed range."""
    problems = []
    for m in CITATION.finditer(text):
        start, end = m.group(1), m.group(2)
        for number in (start, end):
            if number is not None and number not in defined:
                problems.append(f"{m.group(0)!r}: §{number} is not in docs/spec.md")
        if end is not None and start in defined and end in defined:
            same_depth = start.count(".") == end.count(".")
            same_section = start.split(".")[0] == end.split(".")[0] or "." not in start
            if not (same_depth and same_section and _key(start) < _key(end)):
                problems.append(f"{m.group(0)!r}: not a forward range within one section")
    return problems


def scanned_files() -> list[Path]:
    out = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for d in SCANNED_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if not p.is_file() or p.suffix not in SUFFIXES:
                continue
            if SKIPPED_PARTS.intersection(p.relative_to(ROOT).parts):
                continue
            if p == Path(__file__).resolve():  # its own examples of wrong citations
                continue
            out.append(p)
    return out


def test_spec_defines_every_section_and_its_rules() -> None:
    defined = defined_numbers(SPEC.read_text(encoding="utf-8"))
    assert {"1", "2", "3", "4", "5", "6"} <= defined
    expected_rules = {2: 8, 3: 6, 4: 6, 5: 10, 6: 7}
    for section, count in expected_rules.items():
        for i in range(1, count + 1):
            assert f"{section}.{i}" in defined, f"§{section}.{i} missing from docs/spec.md"


def test_every_cited_rule_exists_in_docs_spec() -> None:
    defined = defined_numbers(SPEC.read_text(encoding="utf-8"))
    problems = []
    files = scanned_files()
    assert len(files) > 100, "the scan found too few files: is ROOT right?"
    cited = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        cited += len(CITATION.findall(text))
        for line_no, line in enumerate(text.splitlines(), start=1):
            for problem in citation_problems(line, defined):
                problems.append(f"{path.relative_to(ROOT)}:{line_no}: {problem}")
    assert cited > 100, "the scan found almost no citations: is the pattern right?"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("see SPEC §5.3", False),
        ("SPEC §5.5-5.7 and §1-4", False),
        ("SPEC §5.11", True),
        ("SPEC §7", True),
        ("SPEC §5.7-5.5", True),
        ("SPEC §2.1-3.2", True),
        ("SPEC §2.9", True),
    ],
)
def test_the_checker_itself(text: str, bad: bool) -> None:
    defined = defined_numbers(SPEC.read_text(encoding="utf-8"))
    assert bool(citation_problems(text, defined)) is bad
