"""Files under hostile conditions (issue 13, "Files"): nothing clobbered, nothing half-written.

Each test names the finding it guards; each failed on the code before the fix.
"""

from __future__ import annotations

import errno
import io
import json
import os
import sys

import pytest
from cli_helpers import run, write
from PIL import Image

# --------------------------------------------------------------------------- symlinks


@pytest.mark.parametrize(
    ("probe", "argv"),
    [(".glyphfold-write-test", ["render"]), (".write-test", ["demo", "--budget", "999999"])],
)
def test_write_probe_never_truncates_a_symlink_target(tmp_path, capsys, probe, argv):
    """The write probe truncated a symlink's target to 0 bytes (render's and demo's names)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / probe).symlink_to(victim)
    code, _, _ = run(capsys, *argv, "--out", out)
    assert code == 0
    assert victim.read_text(encoding="utf-8") == "precious"
    assert (out / probe).is_symlink()  # not ours: left alone


def test_page_symlinks_are_replaced_not_followed(tmp_path, capsys):
    """`page-0001.png` symlinks were followed and their targets overwritten."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "page-0001.png").symlink_to(victim)
    (out / "page-0002.png").symlink_to(tmp_path / "dangling")
    assert run(capsys, "render", "--out", out)[0] == 0
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not (tmp_path / "dangling").exists()
    page = out / "page-0001.png"
    assert not page.is_symlink() and Image.open(page).size[0] > 100
    assert not (out / "page-0002.png").exists()  # the sample is one page


def test_demo_pages_folder_symlink_is_refused(tmp_path, capsys):
    """demo writes into <out>/pages, a name it chooses: a symlink there is never followed."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "pages").symlink_to(elsewhere)
    code, _, err = run(capsys, "demo", "--out", out, "--budget", "999999")
    assert code == 2 and "is a symlink" in err
    assert list(elsewhere.iterdir()) == []


def test_explicit_output_symlink_writes_its_target(tmp_path, orphan_file, capsys):
    """-o names a link the user made: its target gets the output (the link stays)."""
    target = tmp_path / "real.json"
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert run(capsys, "shake", orphan_file, "-o", link)[0] == 0
    assert link.is_symlink() and json.loads(target.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- stale pages


def test_stale_pages_are_removed_other_files_kept(tmp_path, capsys, session_file):
    """One run reported 1 page in a folder that held 114: earlier page-*.png are removed."""
    out = tmp_path / "out"
    out.mkdir()
    for k in range(1, 115):
        (out / f"page-{k:04d}.png").write_bytes(b"old")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "page-draft.png").write_bytes(b"not one of ours")
    assert run(capsys, "render", "--out", out)[0] == 0
    assert sorted(p.name for p in out.glob("page-*.png")) == ["page-0001.png", "page-draft.png"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "page-0042.png").write_bytes(b"old")
    argv = ["compact", session_file, "--budget", "12000", "-o", tmp_path / "c.json"]
    assert run(capsys, *argv, "--pages-dir", pages)[0] == 0
    names = sorted(p.name for p in pages.iterdir())
    assert names == [f"page-{k:04d}.png" for k in range(1, len(names) + 1)]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pages.iterdir())


# --------------------------------------------------------------------------- atomic -o


def test_lone_surrogate_is_written_as_an_escape_not_a_truncated_file(tmp_path, capsys):
    """A lone surrogate (validate accepts it) left the existing output at 0 bytes."""
    src = tmp_path / "s.json"
    src.write_text('[{"role": "user", "content": "half a pair: \\ud800 here"}]', encoding="utf-8")
    out = tmp_path / "out.json"
    out.write_text("previous", encoding="utf-8")
    for argv in (
        ("trim", src, "--max-turns", "5"),
        ("shake", src),
        ("compact", src, "--budget", "99"),
    ):
        assert run(capsys, *argv, "-o", out)[0] == 0, argv
        assert (
            json.loads(out.read_text(encoding="utf-8"))[0]["content"] == "half a pair: \ud800 here"
        )


def test_a_failed_write_leaves_the_previous_file(tmp_path, orphan_file, capsys, monkeypatch):
    """A full disk left truncated JSON: the rename happens only after a complete write."""
    out = tmp_path / "out.json"
    out.write_text("previous", encoding="utf-8")

    def full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    code, _, err = run(capsys, "shake", orphan_file, "-o", out)
    assert code == 2 and "No space left on device" in err and "unchanged" in err
    assert out.read_text(encoding="utf-8") == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orphan.json", "out.json"]


def test_output_mode_is_kept_or_the_umask_default(tmp_path, orphan_file, capsys):
    out = tmp_path / "out.json"
    assert run(capsys, "shake", orphan_file, "-o", out)[0] == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    out.chmod(0o640)
    assert run(capsys, "shake", orphan_file, "-o", out)[0] == 0
    assert out.stat().st_mode & 0o777 == 0o640


def test_output_path_is_checked_before_the_work(tmp_path, session_file, capsys):
    """`compact -o` into a bad folder printed success lines, then a raw errno."""
    missing = tmp_path / "no" / "such" / "out.json"
    code, _, err = run(capsys, "compact", session_file, "--budget", "12000", "-o", missing)
    assert code == 2 and err.count("\n") == 1
    assert "does not exist" in err and "compacted" not in err
    assert not (tmp_path / "no").exists()  # no missing parent folder created
    code, _, err = run(capsys, "compact", session_file, "--budget", "12000", "-o", tmp_path)
    assert code == 2 and "is a folder" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("render", "--out", "{m}/a/b"),
        ("trim", "{f}", "--max-turns", "1", "-o", "{m}/t.json"),
        ("export", "x", "-o", "{m}/e.json"),
        ("compact", "{f}", "--budget", "999", "--pages-dir", "{m}/p", "-o", "{m}/c.json"),
        ("compact", "{f}", "--budget", "999", "--report", "{m}/r.json", "-o", "-"),
        ("demo", "--out", "{m}/demo"),
    ],
)
def test_missing_parent_folders_are_never_created(tmp_path, orphan_file, capsys, argv):
    missing = tmp_path / "missing"
    code, _, err = run(capsys, *(a.format(m=missing, f=orphan_file) for a in argv))
    assert code == 2 and "does not exist" in err, err
    assert not missing.exists()


# --------------------------------------------------------------------------- hostile input


def test_import_of_dev_zero_is_refused(capsys, tmp_path):
    """`import /dev/zero` read without limit until MemoryError."""
    code, _, err = run(capsys, "import", "--db", tmp_path / "s.db", "/dev/zero")
    assert code == 2 and "not a regular file" in err
    assert not (tmp_path / "s.db").exists()


def test_stdin_reads_are_bounded(capsys, monkeypatch, tmp_path):
    from glyphfold.commands import _history_io, _input_bytes

    defaults = {"max_bytes": 1000, "advice": _input_bytes.HISTORY_ADVICE}
    monkeypatch.setattr(_history_io.read_input_bytes, "__kwdefaults__", defaults)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[" + b" " * 5000 + b"]")))
    code, _, err = run(capsys, "import", "--db", tmp_path / "s.db", "-")
    assert code == 2 and "more than 1,000 bytes" in err


def test_a_huge_history_is_refused_before_it_is_read(tmp_path, capsys):
    """Issue 24: a 600 MB file was refused only after reading 512 MB of it (5 s, 545 MB RSS).
    The size is checked first: the message names it exactly, and nothing is read."""
    import tracemalloc

    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: no disk used
        fh.truncate(600 * 1024 * 1024)
    tracemalloc.start()
    try:
        code, _, err = run(capsys, "validate", big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2
    assert f"{600 * 1024 * 1024:,} bytes" in err and "nothing read" in err
    assert "jq" in err and "split it first" not in err  # advice for a JSON history
    assert peak < 64 * 1024 * 1024


@pytest.mark.parametrize("command", ["validate", "compact", "import", "trim"])
def test_deeply_nested_json_is_one_line(tmp_path, capsys, command):
    """JSON nested deeper than ~1000 levels exited 1 with a traceback."""
    f = tmp_path / "deep.json"
    f.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    argv = {
        "validate": ["validate", f],
        "compact": ["compact", f, "--budget", "99", "-o", tmp_path / "o.json"],
        "import": ["import", "--db", tmp_path / "s.db", f],
        "trim": ["trim", f, "--max-turns", "1", "-o", tmp_path / "o.json"],
    }[command]
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and "nested too deeply" in err
    assert "Traceback" not in err


def test_a_file_that_is_not_a_font_is_one_line(tmp_path, capsys):
    """A non-font --font gave an FT_Exception traceback."""
    fake = write(tmp_path / "fake.ttf", {"not": "a font"})
    code, _, err = run(capsys, "render", "--out", tmp_path / "o", "--font", fake)
    assert code == 2 and err.count("\n") == 1
    assert "is not a font file FreeType can open" in err
    assert not (tmp_path / "o").exists()


# ------------------------------------------- what -o names (issue 21, item 10)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod and chown need root")


def _shake_json(orphan_file) -> bytes:
    """What `shake ORPHAN -o FILE` writes (the reference bytes)."""
    from glyphfold.cli import main

    ref = orphan_file.with_name("reference.json")
    assert main(["shake", str(orphan_file), "-o", str(ref), "-q"]) == 0
    data = ref.read_bytes()
    ref.unlink()
    return data


@needs_root
def test_output_to_a_character_device_writes_to_it(tmp_path, orphan_file, capsys):
    """`-o` on a copy of /dev/null replaced the device with a regular file (as root,
    `compact ... -o /dev/null` would have replaced the machine's /dev/null)."""
    import stat

    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
    code, _, err = run(capsys, "shake", orphan_file, "-o", null)
    assert code == 0, err
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "orphan.json"]


def test_output_to_a_fifo_writes_into_it(tmp_path, orphan_file, capsys):
    import stat
    import threading

    expected = _shake_json(orphan_file)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = run(capsys, "shake", orphan_file, "-o", fifo)
    reader.join(timeout=30)
    assert code == 0, err
    assert got == [expected]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize("redirect", ["pipe", "file"])
def test_output_to_dev_stdout(tmp_path, orphan_file, redirect):
    """`-o /dev/stdout` was refused; into a redirected file it must not replace the link."""
    import subprocess
    from pathlib import Path

    expected = _shake_json(orphan_file)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    cmd = [sys.executable, "-m", "glyphfold", "shake", str(orphan_file), "-o", "/dev/stdout", "-q"]
    if redirect == "pipe":
        proc = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == expected
    else:
        out = tmp_path / "redirected.json"
        with out.open("wb") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert out.read_bytes() == expected
        assert os.path.islink("/dev/stdout")  # the link itself untouched


def test_read_only_output_is_refused_before_the_work(tmp_path, orphan_file, capsys):
    """A 0444 file was replaced (silently, and as root even without a write bit)."""
    out = tmp_path / "locked.json"
    out.write_text("keep me", encoding="utf-8")
    out.chmod(0o444)
    code, _, err = run(capsys, "shake", orphan_file, "-o", out)
    assert code == 2 and err.count("\n") == 1
    assert "read-only" in err and "0444" in err and "chmod u+w" in err
    assert out.read_text(encoding="utf-8") == "keep me"
    assert out.stat().st_mode & 0o777 == 0o444


def test_hard_links_are_kept(tmp_path, orphan_file, capsys):
    """The rename broke a hard link: the other name kept the old content."""
    out = tmp_path / "out.json"
    out.write_text("old", encoding="utf-8")
    other = tmp_path / "other-name.json"
    os.link(out, other)
    assert run(capsys, "shake", orphan_file, "-o", out)[0] == 0
    assert out.stat().st_nlink == 2 and out.stat().st_ino == other.stat().st_ino
    assert json.loads(other.read_text(encoding="utf-8"))  # the new content, through both names
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "orphan.json",
        "other-name.json",
        "out.json",
    ]


@needs_root
def test_owner_group_and_mode_are_kept(tmp_path, orphan_file, capsys):
    """Run as root, `-o` gave someone's file to root."""
    out = tmp_path / "theirs.json"
    out.write_text("old", encoding="utf-8")
    os.chown(out, 4321, 4322)
    out.chmod(0o640)
    assert run(capsys, "shake", orphan_file, "-o", out)[0] == 0
    st = out.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (4321, 4322, 0o640)
    assert json.loads(out.read_text(encoding="utf-8"))
