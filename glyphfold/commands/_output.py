"""Files the commands write: checked before the work, written atomically, no symlink followed.

Rules (docs/cli.md, "Files"):

- an output path is checked *before* the work: its folder must exist (glyphfold
  never creates missing parent folders) and be writable, and it must not be a folder;
- a file is written to a temporary file in the same folder, then renamed over the
  target, so a failure (an unencodable character, a full disk, an interrupt) leaves
  the previous file as it was;
- writability is probed by creating a new, uniquely named file, never by opening
  an existing name;
- a symlink is followed only when it is the path the user typed (``-o link.json``
  writes the link's target); names glyphfold chooses inside a folder (``page-0001.png``,
  ``index.html``...) replace whatever is there, a symlink included, and never write
  through it;
- ``page-NNNN.png`` files of an earlier run in an output folder are removed before
  the new pages are written, so the folder holds exactly this run's pages; other
  files are left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from glyphfold.errors import InputError

PAGE_NAME = re.compile(r"page-\d{4,}\.png")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _probe(folder: Path, label: str) -> None:
    """Raise InputError unless a new file can be created in ``folder`` (touches nothing)."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".glyphfold-probe-", suffix=".tmp")
    except OSError as exc:
        msg = f"cannot write to {label}: {_why(exc)}"
        raise InputError(msg) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)


def _need_folder(folder: Path, option: str, spec: Any) -> None:
    """The folder an output goes into must exist: glyphfold creates no missing folders."""
    if folder.is_dir():
        return
    if folder.exists():
        msg = f"cannot write {option} {spec}: {folder} is not a folder"
    else:
        msg = (
            f"cannot write {option} {spec}: folder {folder} does not exist "
            "(glyphfold creates no missing folders; create it first)"
        )
    raise InputError(msg)


def output_file(spec: str | None, *, option: str = "-o") -> Path | None:
    """Check an output file path before the work; None means stdout (None or ``-``).

    Returns the path to write: the user's path, or the target of the symlink it names.
    """
    if spec is None or spec == "-":
        return None
    path = Path(spec)
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # the user named this link: write its target
    if path.is_dir():
        msg = f"{option} {spec} is a folder; give a file name"
        raise InputError(msg)
    folder = path.parent
    _need_folder(folder, option, spec)
    _probe(folder, f"{option} {spec}")
    return path


def output_dir(spec: str | os.PathLike[str], *, option: str = "--out") -> Path:
    """Check (and create, one level) an output folder before the work.

    The folder itself is created when missing; its parent must exist. A path the
    user typed may be a symlink to a folder.
    """
    path = Path(spec)
    if path.exists() and not path.is_dir():
        msg = f"{option} {spec} exists and is not a folder"
        raise InputError(msg)
    if not path.exists():
        if path.is_symlink():
            msg = f"{option} {spec} is a dangling symlink"
            raise InputError(msg)
        _need_folder(path.parent, option, spec)
        try:
            path.mkdir()
        except OSError as exc:
            msg = f"cannot create {option} {spec}: {_why(exc)}"
            raise InputError(msg) from None
    _probe(path, f"{option} {spec}")
    return path


def own_subdir(parent: Path, name: str) -> Path:
    """A folder glyphfold names inside an output folder: created, never a symlink."""
    path = parent / name
    if path.is_symlink():
        msg = f"{path} is a symlink; glyphfold writes only into folders it was given or made"
        raise InputError(msg)
    if path.exists() and not path.is_dir():
        msg = f"{path} exists and is not a folder"
        raise InputError(msg)
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        msg = f"cannot create {path}: {_why(exc)}"
        raise InputError(msg) from None
    return path


def _mode_for(target: Path) -> int:
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_bytes_atomic(target: Path, data: bytes, *, sync: bool = True) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder + rename.

    The rename replaces ``target`` itself (a symlink there is replaced, not followed);
    on any failure the temporary file is removed and ``target`` is untouched.
    ``sync=False`` skips the file's fsync (the caller syncs once for many files).
    """
    folder = target.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        msg = f"cannot write {target}: {_why(exc)}"
        raise InputError(msg) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            msg = f"cannot write {target}: {_why(exc)} (the previous file, if any, is unchanged)"
            raise InputError(msg) from None
        raise


def write_text(text: str, target: Path | None) -> None:
    """Write ``text`` atomically to ``target`` (checked by :func:`output_file`) or stdout."""
    if target is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_bytes_atomic(target, text.encode("utf-8"))


def remove_stale_pages(folder: Path) -> int:
    """Remove ``page-NNNN.png`` of an earlier run (files or symlinks, never their targets)."""
    removed = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if not PAGE_NAME.fullmatch(entry.name):
                continue
            if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed += 1
    return removed


def write_pages(pages: Iterable[Any], folder: Path) -> list[Path]:
    """Replace the folder's pages with ``page-0001.png``...; return the paths written.

    ``pages`` may be a stream (``glyphfold.iter_pages``): each page is written as it
    comes (temporary file + rename), and the folder is synced once at the end, not
    once per page (a 100M-char render spent 4x its render time in per-page fsyncs).
    """
    try:
        remove_stale_pages(folder)
    except OSError as exc:
        msg = f"cannot clear earlier pages in {folder}: {_why(exc)}"
        raise InputError(msg) from None
    out = []
    for k, page in enumerate(pages, 1):
        p = folder / f"page-{k:04d}.png"
        write_bytes_atomic(p, page.png, sync=False)
        out.append(p)
    sync_folder(folder)
    return out


def sync_folder(folder: Path) -> None:
    """Flush the folder's new files and entries to disk (one sync for many files)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a platform without directory handles: the files are written
    try:
        # the renames become durable; file systems that replace by rename (ext4's
        # auto_da_alloc, xfs, btrfs) write a renamed file's data before the rename
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
