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
- a file the user names (``-o``, ``--report``) that is not a regular file (a character
  device such as a copy of ``/dev/null``, a FIFO, a terminal) or that names a file
  descriptor (``/dev/stdout``, ``/dev/fd/N``) is written to, never replaced; a read-only
  file (no write bit, as for ``chmod 0444``, also for root) is refused before the work;
  a file with several hard links, or whose owner glyphfold cannot give back, is
  rewritten in place (space reserved first), so every link and the owner stay; any other
  regular file is replaced atomically with its mode, owner and group kept;
- ``page-NNNN.png`` files of an earlier run in an output folder are removed before
  the new pages are written, so the folder holds exactly this run's pages; other
  files are left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

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


class OutputFile(NamedTuple):
    """A file the user named (``-o FILE``, ``--report FILE``), checked before the work."""

    path: Path  # what is written: the user's path, or the target of the link it names
    spec: str  # as the user typed it (for messages)
    descriptor: bool  # names a file descriptor (/dev/stdout, /dev/fd/N): written, never replaced


_DESCRIPTOR = re.compile(r"/(?:proc/(?:self|thread-self|\d+)|dev)/fd/\d+|/dev/std(?:out|err)")


def _names_a_descriptor(spec: str) -> bool:
    """Whether ``spec`` or a link it leads through names an open file descriptor."""
    path = os.path.abspath(spec)
    for _ in range(40):  # the kernel's own limit on a chain of links
        if _DESCRIPTOR.fullmatch(path):
            return True
        try:
            link = os.readlink(path)
        except OSError:
            return False
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))
    return False


def _read_only(st: os.stat_result, path: Path) -> bool:
    """No write bit at all (root ignores modes: the bits say what the owner meant)."""
    return not st.st_mode & 0o222 or not os.access(path, os.W_OK)


def output_file(spec: str | None, *, option: str = "-o") -> OutputFile | None:
    """Check an output file the user named before the work; None means stdout (None or ``-``).

    Returns where to write (docs/cli.md, "Files"): the user's path, the target of the
    symlink it names, or a descriptor name such as ``/dev/stdout`` as it is.
    """
    if spec is None or spec == "-":
        return None
    if _names_a_descriptor(spec):
        return OutputFile(Path(spec), spec, True)
    path = Path(spec)
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # the user named this link: write its target
    if path.is_dir():
        msg = f"{option} {spec} is a folder; give a file name"
        raise InputError(msg)
    try:
        st = os.stat(path)
    except OSError:
        st = None  # a new file
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not os.access(path, os.W_OK):
            msg = f"cannot write {option} {spec}: permission denied"
            raise InputError(msg)
        return OutputFile(path, spec, False)  # a device or a FIFO: written to, in place
    if st is not None and _read_only(st, path):
        msg = (
            f"{option} {spec} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); glyphfold "
            f"does not replace read-only files: `chmod u+w {spec}` or give another name"
        )
        raise InputError(msg)
    folder = path.parent
    _need_folder(folder, option, spec)
    _probe(folder, f"{option} {spec}")
    return OutputFile(path, spec, False)


def output_dir(spec: str | os.PathLike[str], *, option: str = "--out", create: bool = True) -> Path:
    """Check (and create, one level) an output folder before the work.

    The folder itself is created when missing; its parent must exist. A path the
    user typed may be a symlink to a folder. ``create=False`` only checks that it
    could be created (its parent is a writable folder): a command that may end
    with nothing to write creates it afterwards, with a second call.
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
        if not create:
            _probe(path.parent, f"{option} {spec}")
            return path
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


def write_bytes_atomic(
    target: Path, data: bytes, *, owner: tuple[int, int] | None = None, sync: bool = True
) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder + rename.

    The rename replaces ``target`` itself (a symlink there is replaced, not followed);
    on any failure the temporary file is removed and ``target`` is untouched. The
    previous file's mode is kept, and ``owner`` (uid, gid) is given to the new one.
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
        if owner is not None:
            os.chown(tmp, *owner)  # before chmod: chown clears set-id bits
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            msg = f"cannot write {target}: {_why(exc)} (the previous file, if any, is unchanged)"
            raise InputError(msg) from None
        raise


def _write_into(path: Path, data: bytes, *, regular: bool) -> None:
    """Write into the file ``path`` names (same inode: links, owner and mode stay).

    A regular file gets its space reserved first, so a full disk fails before a byte
    of it changes; a device or FIFO is simply written (opening a FIFO waits for its
    reader, as ``> fifo`` does).
    """
    flags = os.O_WRONLY | (os.O_CREAT if regular else 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        msg = f"cannot write {path}: {_why(exc)}"
        raise InputError(msg) from None
    try:
        if regular:
            with contextlib.suppress(OSError):  # not every file system reserves space
                os.posix_fallocate(fd, 0, max(1, len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if regular:
            os.ftruncate(fd, len(data))
            os.fsync(fd)
    except OSError as exc:
        msg = f"cannot write {path}: {_why(exc)}"
        raise InputError(msg) from None
    finally:
        os.close(fd)


def _owner_to_give(st: os.stat_result) -> tuple[int, int] | None:
    """(uid, gid) a replacement must get to keep the file's owner and group; None: cannot."""
    if os.geteuid() == 0:
        return st.st_uid, st.st_gid
    if st.st_uid == os.geteuid() and st.st_gid in (os.getegid(), *os.getgroups()):
        return st.st_uid, st.st_gid
    return None


def write_user_file(out: OutputFile, data: bytes) -> None:
    """Write ``data`` to a file the user named, as docs/cli.md "Files" says."""
    if out.descriptor:
        _write_into(out.path, data, regular=False)
        return
    try:
        st = os.stat(out.path)
    except FileNotFoundError:
        write_bytes_atomic(out.path, data)  # a new file: the umask's mode, our owner
        return
    except OSError as exc:
        msg = f"cannot write {out.spec}: {_why(exc)}"
        raise InputError(msg) from None
    if not stat.S_ISREG(st.st_mode):
        _write_into(out.path, data, regular=False)
        return
    if _read_only(st, out.path):  # checked before the work too; made read-only since
        msg = f"{out.spec} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); nothing written"
        raise InputError(msg)
    owner = _owner_to_give(st)
    if st.st_nlink > 1 or owner is None:
        _write_into(out.path, data, regular=True)
        return
    write_bytes_atomic(out.path, data, owner=owner)


def write_text(text: str, target: Path | OutputFile | None) -> None:
    """Write ``text`` to stdout (None), a file the user named (:func:`output_file`), or a
    name glyphfold chose inside an output folder (a Path: replaced atomically)."""
    if target is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    data = text.encode("utf-8")
    if isinstance(target, OutputFile):
        write_user_file(target, data)
    else:
        write_bytes_atomic(target, data)


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
