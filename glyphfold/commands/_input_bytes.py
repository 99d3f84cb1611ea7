"""Bounded reads of an input file or stdin (kept light: ``render`` imports it at start-up).

:mod:`glyphfold.commands._history_io` (history parsing) re-uses these; importing them
from here keeps the history model out of a render's cold start.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from glyphfold.errors import InputError

MAX_INPUT_BYTES = 512 * 1024 * 1024
HISTORY_ADVICE = (
    "no model's window holds that much (1M tokens are ~4 MB of text): keep its newest "
    "messages first, e.g. `jq '.[-500:]'` for a list or `jq '.messages |= .[-500:]'` "
    "for an object, then compact that"
)


def too_large(label: str, size: str, max_bytes: int, advice: str) -> InputError:
    """The one-line refusal of an input over ``max_bytes`` (nothing read), with ``advice``."""
    msg = f"{label} is {size}, over the {max_bytes:,}-byte input limit (nothing read); {advice}"
    return InputError(msg)


def read_input_bytes(
    spec: str, *, max_bytes: int = MAX_INPUT_BYTES, advice: str = HISTORY_ADVICE
) -> tuple[bytes, str]:
    """(bytes, label) of a regular file or ``-`` (stdin), refusing more than ``max_bytes``.

    A file's size is checked before it is read: a too-large file costs no read and no
    memory. Stdin has no size to check: it is read up to ``max_bytes + 1`` bytes.
    """
    if spec == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise too_large("stdin", f"more than {max_bytes:,} bytes", max_bytes, advice)
        return data, "stdin"
    path = Path(spec)
    if not path.exists():
        msg = f"input file not found: {spec}"
        raise InputError(msg)
    if not path.is_file():
        msg = f"input is not a regular file: {spec}"
        raise InputError(msg)
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size  # the file opened, not a name re-resolved
            if size > max_bytes:
                raise too_large(spec, f"{size:,} bytes", max_bytes, advice)
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        msg = f"cannot read {spec}: {exc.strerror or exc}"
        raise InputError(msg) from None
    if len(data) > max_bytes:  # grew while being read
        raise too_large(spec, f"more than {max_bytes:,} bytes", max_bytes, advice)
    return data, spec
