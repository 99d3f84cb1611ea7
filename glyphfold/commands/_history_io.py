"""Shared input/output of the history commands: bounded reads, history JSON, pricing, sweep."""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from glyphfold.commands._input_bytes import read_input_bytes
from glyphfold.commands._output import OutputFile, write_text
from glyphfold.commands._term import dumps, note
from glyphfold.compaction.history.model import FORMATS as WIRE_FORMATS
from glyphfold.errors import HistoryFormatError, InputError

# every wire format the history layer parses (and "auto": detect it)
FORMATS = ("auto", *WIRE_FORMATS)
# one pricing for every command: a history file is sent as it is, so every image in
# it is billed (docs/budget.md, "What the commands count")
CLI_IMAGE_POLICY = "all"


def add_pin(parser: argparse.ArgumentParser) -> None:
    """``--pin IDX|ID`` (repeatable): messages no rung may change; see :meth:`Input.pins`."""
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="IDX|ID",
        help="keep this message (index or tool call id); repeatable",
    )


def add_input(
    parser: argparse.ArgumentParser,
    *,
    profile: bool = True,
    profile_default: str | None = "anthropic",
) -> None:
    """Add the IN.json positional and the --format (and --profile) options.

    ``profile_default=None`` leaves ``--profile`` unset when not given (``context``
    then takes the profile of ``--model``).
    """
    parser.add_argument(
        "input",
        metavar="IN.json",
        help="history: a JSON list of messages, "
        "or an object with 'messages' and optional 'system' ('-' = stdin)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help=f"wire format of the input: {', '.join(FORMATS[1:])} (default: auto, detected)",
    )
    if profile:
        default = profile_default or "the --model's profile, else anthropic"
        parser.add_argument(
            "--profile",
            default=profile_default,
            metavar="NAME",
            help=f"provider profile pricing images and pages (default: {default}; "
            "`glyphfold profiles` lists them)",
        )


def parse_json(data: bytes, label: str) -> Any:
    """Decode JSON bytes with one-line errors (bad UTF-8, bad JSON, nesting too deep)."""
    if not data.strip():
        msg = f"{label} is empty; expected a JSON chat history"
        raise InputError(msg)
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        msg = f"{label} is not UTF-8 JSON: {exc.reason} at byte {exc.start:,}"
        raise InputError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{label} is not valid JSON: {exc.msg} (line {exc.lineno:,}, column {exc.colno:,})"
        raise HistoryFormatError(msg) from None
    except RecursionError:
        msg = f"{label} is nested too deeply to be a chat history"
        raise InputError(msg) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        msg = f"{label} is not usable JSON: {exc}"
        raise InputError(msg) from None


def read_json(spec: str) -> tuple[Any, str]:
    """Load any JSON document from a file or ``-``; returns (data, label)."""
    data, label = read_input_bytes(spec)
    return parse_json(data, label), label


def read_history(spec: str) -> Any:
    """Load a history from a JSON file path or ``-`` (stdin); one-line errors on bad input."""
    history, label = read_json(spec)
    if not isinstance(history, list | dict):
        msg = f"{label}: a history is a JSON list of messages or an object with 'messages'"
        raise HistoryFormatError(msg)
    return history


def _json_bytes(value: Any) -> str:
    """Bytes (Bedrock and Gemini image data) as base64 text, their JSON form."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    msg = f"{type(value).__name__} is not JSON serialisable"
    raise TypeError(msg)


def json_text(data: Any) -> str:
    """A history or report as the commands write it (indented, valid UTF-8 JSON)."""
    return dumps(data, indent=1, default=_json_bytes) + "\n"


def write_json(data: Any, target: Path | OutputFile | None) -> None:
    """Write JSON atomically to ``target`` (from ``_output.output_file``) or stdout."""
    write_text(json_text(data), target)


def history_tokens(history: Any, *, profile: Any, format: str = "auto") -> int:
    """The estimate every command prints: every image priced (what the file costs if sent)."""
    from glyphfold.compaction.history.messages import coerce
    from glyphfold.compaction.history.tokens import estimate_history_tokens

    h, _ = coerce(history, format=format, plain="openai")  # plain text prices alike
    return estimate_history_tokens(
        h, profile=pricing_profile(profile), image_policy=CLI_IMAGE_POLICY
    )


def pricing_profile(profile: Any) -> Any:
    from glyphfold.render.profiles import get_profile

    prof = get_profile(profile)
    # a text-only profile prices no image: price them as the default profile does
    return prof if prof.vision else get_profile("anthropic")


def load(
    spec: str, *, format: str = "auto", plain: str | None = None
) -> tuple[Any, Callable[[Any], Any]]:
    """Read a history file into a canonical History; returns (history, restore-to-wire).

    ``plain``: the format plain text nothing in the file identifies is read as (the
    ``--profile``'s provider, :func:`~glyphfold.compaction.history.messages.plain_format`);
    None refuses it, naming ``--format``.
    """
    from glyphfold.compaction.history.messages import coerce

    return coerce(read_history(spec), format=format, plain=plain)


class Input(NamedTuple):
    """A history file as the commands take it: read, converted, swept of orphans."""

    original: Any  # the canonical History as read
    history: Any  # after the orphan sweep (the same object when nothing was repaired)
    restore: Callable[[Any], Any]  # canonical -> the file's own wire format
    repaired: dict[str, Any] | None  # the sweep's report (None: nothing repaired)

    def pins(self, values: list[str]) -> list[int | str]:
        """``--pin`` values (indices of the file, or ids) as indices of :attr:`history`."""
        pins = [int(p) if p.lstrip("-").isdigit() else p for p in values]
        return remap_pins(pins, self.original, self.history)


def read_input(spec: str, *, format: str = "auto", profile: Any = None) -> Input:
    """Read ``spec`` (a file or ``-``) with progress, sweep it, print the sweep's line.

    Plain text nothing in the file identifies is read as the format of ``profile``'s
    provider (the pages are made for it), else refused naming ``--format``.
    """
    from glyphfold.commands._progress import progress
    from glyphfold.compaction.history.messages import plain_format

    with progress(f"reading {spec}"):
        h, restore = load(spec, format=format, plain=plain_format(profile))
        swept, repaired = sweep(h)
    report_sweep(repaired)
    return Input(h, swept, restore, repaired)


def sweep(h: Any) -> tuple[Any, dict[str, Any] | None]:
    """Repair orphan tool calls/results of a canonical History (docs/history.md, "The sweep").

    Orphan results (no call) are removed; orphan calls (no result) are answered by a
    synthetic "result missing" result. Returns (History, report or None when there
    was nothing to repair); the commands print the report and put it in --json.
    """
    from glyphfold.compaction.history.events import publish
    from glyphfold.compaction.history.turns import repair_orphans

    res = repair_orphans(h, mode="synthesize")
    if res.event is None:
        return h, None
    publish(res.event)
    ev = res.event
    report = {
        "removed_results": [{"index": i, "call_id": c} for i, c in ev.removed_results],
        "removed_calls": [
            {"index": i, "call_id": c} for i, c in ev.removed_calls if c not in ev.synthesized
        ],
        "answered_calls": list(ev.synthesized),
    }
    return res.history, report


def remap_pins(pins: list[Any], before: Any, after: Any) -> list[Any]:
    """``--pin`` values after the sweep: indices of ``before`` become indices of ``after``.

    Messages the sweep left alone are the same objects in both; an index naming a
    message the sweep changed or removed is an error. Ids are kept as they are.
    """
    if before is after:
        return pins
    where = {id(m): j for j, m in enumerate(after.messages)}
    n = len(before.messages)
    out = []
    for p in pins:
        k = p + n if isinstance(p, int) and p < 0 else p
        if not isinstance(p, int) or not 0 <= k < n:
            out.append(p)  # an id, or out of range: the library checks it
            continue
        j = where.get(id(before.messages[k]))
        if j is None:
            msg = f"--pin {p}: that message was repaired or removed by the orphan sweep"
            raise InputError(msg)
        out.append(j)
    return out


def _listed(rows: list[Any]) -> str:
    shown = [f"#{r['index']} {r['call_id']!r}" if isinstance(r, dict) else repr(r) for r in rows]
    return ", ".join(shown[:5]) + ("…" if len(shown) > 5 else "")


def sweep_line(report: dict[str, Any]) -> str:
    """One human line for a sweep report."""
    parts = []
    if report["removed_results"]:
        n = len(report["removed_results"])
        parts.append(f"removed {n:,} orphan tool result(s) ({_listed(report['removed_results'])})")
    if report["removed_calls"]:
        n = len(report["removed_calls"])
        parts.append(f"removed {n:,} duplicate tool call(s) ({_listed(report['removed_calls'])})")
    if report["answered_calls"]:
        n = len(report["answered_calls"])
        parts.append(
            f"answered {n:,} tool call(s) that had no result with a 'result missing' note "
            f"({_listed(report['answered_calls'])})"
        )
    return "repaired the input: " + "; ".join(parts) + " (docs/history.md#the-orphan-sweep)"


_LIBRARY_ADVICE = "; raise the budget or allow more rungs"


def overflow_line(exc: Exception, advice: str) -> str:
    """A ContextOverflowError's message with the library's advice ("allow more rungs")
    replaced by the options of the command that ran (``advice``)."""
    text = str(exc)
    if text.endswith(_LIBRARY_ADVICE):
        text = text[: -len(_LIBRARY_ADVICE)]
    return f"{text}; {advice}"


def report_sweep(report: dict[str, Any] | None) -> None:
    """Print the sweep's line on stderr (a repair changes the output: said even with --quiet)."""
    if report is not None:
        note(f"glyphfold: {sweep_line(report)}")
