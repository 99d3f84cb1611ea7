"""A cold ``glyphfold render`` imports what rendering needs, not the other commands' (issue 22).

Building the parser used to declare every command's options, importing the history
model and the history commands' helpers before the first page: the CLI's first page
cost 1.3x the API's.
"""

from __future__ import annotations

import subprocess
import sys

_CHILD = """
import sys
from glyphfold.cli import main
code = main(["render", sys.argv[1], "--out", sys.argv[2], "--quiet"])
heavy = [m for m in ("glyphfold.compaction.history.model", "glyphfold.commands._history_io")
         if m in sys.modules]
print(code, ",".join(heavy))
"""


def test_render_does_not_import_the_history_commands(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("a first page, rendered cold\n" * 50, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(src), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.split()
    assert out == ["0"], f"imported before the first page: {out[1:]}"
