"""Nothing reaches a terminal raw (issue 13, "Terminals"): one escaping helper, every command.

Stored titles and message text could set the window title (OSC 0), clear the screen
(CSI 2J) or hide the rest of a line (an unterminated ``ESC ]``).
"""

from __future__ import annotations

import json

import pytest
from cli_helpers import run, write

from glyphfold.commands import store_view
from glyphfold.compaction.store import open_store

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://x\x1b\\link\x9b31m\u202edesrever\u2028tail"


def test_escape_shows_every_control_character():
    from glyphfold.commands._term import escape

    text = "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xA0)))
    text += "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    text += "\u0085\u2028\u2029"
    shown = escape(text)
    assert all(ch.isprintable() and ch != "\x7f" for ch in shown)
    assert escape("a\nb\tc\x1b") == "a\\nb\\tc\\x1b"
    assert escape("a\nb", keep_newlines=True) == "a\nb"
    assert escape("café 日本 ✓") == "café 日本 ✓"  # printable text is untouched


def test_json_output_carries_no_raw_control_character():
    from glyphfold.commands._term import dumps

    text = dumps({"t": HOSTILE + "\ud800"})
    assert all(ch.isprintable() for ch in text)
    assert json.loads(text) == {"t": HOSTILE + "\ud800"}  # the same data


@pytest.fixture
def hostile_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    with open_store(url) as store:
        conv = store.create_conversation(title=HOSTILE)
        store.commit_turn(
            conv,
            [
                {"role": "user", "content": "look: \x1b]0;title-" + "x" * 10},
                {"role": "assistant", "content": "ok " + HOSTILE},
            ],
        )
        store.checkpoint(conv, "cp\x1b[2J")
    return url


# rich is an optional extra ("rich"): without it the rich views are skipped, not failed
try:
    import rich  # noqa: F401

    HAS_RICH = True
except ImportError:
    HAS_RICH = False
WITH_RICH = pytest.param(
    True, marks=pytest.mark.skipif(not HAS_RICH, reason="needs the optional 'rich' extra")
)


@pytest.mark.parametrize("rich", [False, WITH_RICH])
@pytest.mark.parametrize("argv", [("sessions",), ("tree",), ("tree", "--all")])
def test_store_views_escape_stored_text(hostile_store, capsys, monkeypatch, argv, rich):
    """`tree` and `sessions` printed stored titles and text raw."""
    monkeypatch.setattr(store_view, "use_rich", lambda stream: rich)
    code, out, _ = run(capsys, *argv, "--db", hostile_store)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "\u202e" not in out and "\u2028" not in out
    # shown escaped (rich crops the title column to the console width)
    assert ("\\x1b]" if rich else "\\x1b]0;pwned") in out


def test_context_escapes_message_text(tmp_path, capsys):
    """An unterminated `ESC ]` in a message hid the rest of its line in `context`."""
    history = [
        {"role": "user", "content": "open \x1b]0;and the rest of the line " + "y" * 400},
        {"role": "assistant", "content": "done"},
    ]
    code, out, _ = run(capsys, "context", write(tmp_path / "h.json", history))
    assert code == 0 and "\x1b" not in out
    assert "open \\x1b]0;and the rest" in out


def test_validate_and_errors_escape_ids(tmp_path, capsys):
    history = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "\x1b]0;owned\x07", "content": "x"},
    ]
    code, out, _ = run(capsys, "validate", write(tmp_path / "h.json", history))
    assert code == 1 and "\x1b" not in out and "\\x1b]0;owned\\x07" in out
    code, _, err = run(capsys, "export", "--db", tmp_path / "none.db", "\x1b[2J")
    assert code == 2 and "\x1b" not in err


def test_rendered_text_summary_is_escaped(tmp_path, capsys):
    """The file name printed by `render` is shown escaped too."""
    src = tmp_path / "in\x1b]0;x.txt"
    src.write_text("hello\n", encoding="utf-8")
    code, out, _ = run(capsys, "render", src, "--out", tmp_path / "o")
    assert code == 0 and "\x1b" not in out and "in\\x1b]0;x.txt" in out
