"""What SPEC §5.8 lets the elision rung remove: results the model can get back from what stays.

A tool result *qualifies* for elision when nothing in it is needed again that cannot
be got back from the rest of the history:

- ``reread``: the same file is read (whole) again later;
- ``rerun``: the same call (tool and arguments) is made again later;
- ``rewritten``: a file it showed is written again later (its content is stale);
- ``duplicate``: a later result has exactly the same text;
- ``progress``: progress noise (download bars, package installs, percentages);
- ``confirmation`` / ``empty``: a short acknowledgement, or no output at all.

File contents, search results, test runs and errors do not qualify: they go to the
snapshot, which keeps every word. A test run or an error is never superseded by a
re-run either (the earlier verdict is not in the later one). The rules read tool
names and arguments the way real agents write them (``str_replace_editor view``,
``read_file``, ``Read``, ``bash cat``, ``sed -i``, ``>`` redirections); a call they
cannot read names no file and is superseded only by the same call made again.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REASONS",
    "Action",
    "Call",
    "action_of",
    "actions_of",
    "argument_reasons",
    "is_test_run",
    "qualifying_reasons",
    "text_reason",
]

REASONS: tuple[str, ...] = (
    "reread",
    "rerun",
    "rewritten",
    "duplicate",
    "progress",
    "confirmation",
    "empty",
)

_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file", "notebook_path")
_PARTIAL_KEYS = ("view_range", "offset", "limit", "line_number", "start_line", "end_line", "lines")
_READ_TOOLS = frozenset(
    {"read", "read_file", "readfile", "view", "view_file", "open", "open_file", "cat", "get_file"}
)
_WRITE_TOOLS = frozenset({"write", "write_file", "create", "create_file", "delete_file"})
_EDIT_TOOLS = frozenset(
    {"edit", "edit_file", "multiedit", "str_replace", "insert", "apply_patch", "notebookedit"}
)
_EDITOR_TOOLS = frozenset(
    {"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor"}
)
_EDITOR_WRITES = frozenset({"create", "write"})
_EDITOR_EDITS = frozenset({"str_replace", "insert", "undo_edit"})
_SHELL_TOOLS = frozenset(
    {"bash", "execute_bash", "shell", "run", "run_command", "terminal", "exec", "sh", "cmd"}
)
_SHELL_READS = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat"})
_SHELL_ACTS = _SHELL_READS | {"sed", "tee", "rm"}
_QUOTING = re.compile(r"[\"'\\]")


def _may_act(part: str) -> bool:
    """False when the first word of ``part`` is surely no program that reads or writes:
    without quotes or backslashes in it, shlex's first word is that word itself."""
    first = part.split(None, 1)
    if not first:
        return False
    return _QUOTING.search(first[0]) is not None or first[0] in _SHELL_ACTS


@dataclass(frozen=True, slots=True)
class Action:
    """What one tool call did, as far as its name and arguments say."""

    key: str  # tool and canonical arguments: the same key later is the same call re-run
    reads: tuple[str, ...] = ()  # files it showed
    whole: bool = False  # it showed them whole (a later whole read supersedes any read)
    writes: tuple[str, ...] = ()  # files it wrote whole (what was read of them is stale)
    edits: tuple[str, ...] = ()  # files it changed in part (a patch, an insert)


def _canonical(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def _norm_path(p: str) -> str:
    p = p.strip().strip("'\"")
    while p.startswith("./"):
        p = p[2:]
    return re.sub(r"/+", "/", p).rstrip("/") or p


def _path_arg(args: Mapping[str, Any]) -> str | None:
    for k in _PATH_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v.strip():
            return _norm_path(v)
    return None


_REDIRECT = re.compile(r"(?<![0-9&<>])(>{1,2})\s*([^\s;&|<>]+)")
_SEPARATORS = re.compile(r"&&|\|\||;|\|")


def _shell_action(
    command: str,
) -> tuple[tuple[str, ...], bool, tuple[str, ...], tuple[str, ...]]:
    """(files read, read whole, files written whole, files edited) of a shell command line."""
    reads: list[str] = []
    writes: list[str] = []
    edits: list[str] = []
    if ">" in command:  # (the regexes try every position: a literal test first)
        for m in _REDIRECT.finditer(command):
            (writes if m.group(1) == ">" else edits).append(_norm_path(m.group(2)))
    whole = False
    separated = "&" in command or "|" in command or ";" in command
    for part in _SEPARATORS.split(command) if separated else (command,):
        if not _may_act(part):
            continue  # shlex costs ~4 ms on a long line: only parts that may act pay it
        try:
            words = shlex.split(part, posix=True)
        except ValueError:
            continue
        if not words:
            continue
        prog, rest = words[0], [w for w in words[1:] if not w.startswith("-")]
        if prog in _SHELL_READS and rest and ">" not in part:
            files = [_norm_path(w) for w in rest if not re.fullmatch(r"[\d+,]+p?", w)]
            reads.extend(files)
            whole = whole or prog == "cat"
        elif prog == "sed" and any(w.startswith("-i") for w in words[1:]) and len(rest) >= 2:
            edits.append(_norm_path(rest[-1]))
        elif prog in ("tee", "rm") and rest:
            writes.extend(_norm_path(w) for w in rest)
    writes = [w for w in writes if w != "/dev/null"]
    return tuple(reads), whole, tuple(writes), tuple(edits)


def _one_spaced(command: str) -> str:
    """``" ".join(command.split())``, without the split when it would change nothing.

    Every whitespace character but the ASCII space is unprintable (a control or a
    separator), so a printable command with no double, leading or trailing space is
    already one-spaced: one C scan instead of a list of its words; one whose only other
    whitespace is newlines is one-spaced by replacing them.
    """
    if (
        command.isprintable()
        and "  " not in command
        and not command.startswith(" ")
        and not command.endswith(" ")
    ):
        return command
    # spaces and newlines only (a multi-line script): their runs become one space by
    # replaces in C, not a list of every word
    flat = command.replace("\n", " ")
    if flat.isprintable():
        while "  " in flat:
            flat = flat.replace("  ", " ")
        return flat.strip(" ")
    return " ".join(command.split())


def action_of(name: str | None, arguments: Any) -> Action:
    """What a call of tool ``name`` with ``arguments`` reads and writes."""
    args = _canonical(arguments)
    tool = (name or "").lower()
    if isinstance(args, dict) and tool in _SHELL_TOOLS:
        command = args.get("command") or args.get("cmd")
        if isinstance(command, str):  # the shell tools are none of the file tools below
            # whitespace does not change a command (and the key needs no JSON of the args)
            line = _one_spaced(command)
            reads, whole, writes, edits = _shell_action(line)
            return Action(f"{name}\x00{line}", reads=reads, whole=whole, writes=writes, edits=edits)
    try:
        key = f"{name}\x00{json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)}"
    except (TypeError, ValueError):
        key = f"{name}\x00{args!r}"
    if not isinstance(args, dict):
        return Action(key)
    path = _path_arg(args)
    partial = any(args.get(k) not in (None, "", [], False) for k in _PARTIAL_KEYS)
    if tool in _EDITOR_TOOLS:
        cmd = str(args.get("command", "")).lower()
        if path and cmd == "view":
            return Action(key, reads=(path,), whole=not partial)
        if path and cmd in _EDITOR_WRITES:
            return Action(key, writes=(path,))
        if path and cmd in _EDITOR_EDITS:
            return Action(key, edits=(path,))
        return Action(key)
    if tool in _READ_TOOLS and path:
        return Action(key, reads=(path,), whole=not partial)
    if tool in _WRITE_TOOLS and path:
        return Action(key, writes=(path,))
    if tool in _EDIT_TOOLS and path:
        return Action(key, edits=(path,))
    return Action(key)


_TEST_RUN = re.compile(
    r"^=+ (?:test session starts|FAILURES|ERRORS|short test summary)|"
    r"\b\d+ (?:passed|failed|errors?)\b|^Ran \d+ tests? in |^(?:OK|FAILED)(?: \(|$)|"
    r"^Tests?:\s+\d+|\btest result: (?:ok|FAILED)\b|^(?:PASS|FAIL) ",
    re.MULTILINE,
)


# every match of _TEST_RUN holds one of these literals or _TEST_DIGIT's match: a window
# without any is not searched (the alternation tries each branch at every position)
_TEST_LITERALS = ("= ", "Ran ", "OK", "FAIL", "Test", "test result: ", "PASS")
_TEST_DIGIT = re.compile(r"\d (?:passed|failed|error)")


def _may_be_test_run(window: str) -> bool:
    return any(lit in window for lit in _TEST_LITERALS) or _TEST_DIGIT.search(window) is not None


def is_test_run(text: str) -> bool:
    """True when ``text`` is the output of a test runner (pytest, unittest, cargo, jest)."""
    # a text of at most 4,000 chars is both windows: searched once
    windows = (text,) if len(text) <= 4000 else (text[:4000], text[-4000:])
    return any(_may_be_test_run(w) and _TEST_RUN.search(w) is not None for w in windows)


# a progress line: a package manager's or a fetcher's line, a percentage before a bar, a bar
_PROGRESS_STARTS = (
    r"Collecting |Downloading |Using cached |Requirement already satisfied|Installing |"
    r"Building wheels? |Created wheel |Stored in directory|Successfully (?:built|installed) |"
    r"Obtaining |Preparing metadata|Getting requirements|Attempting uninstall|Found existing|"
    r"Uninstalling |Successfully uninstalled |Get:\d+ |Hit:\d+ |Ign:\d+ |Fetched |"
    r"Reading (?:package lists|state information)|Building dependency tree|Unpacking |"
    r"Setting up |Selecting previously unselected|Preparing to unpack|Processing triggers|"
    r"(?:npm )?(?:added|removed|changed|audited) \d+ packages?|"
    r"Resolving |Receiving objects|Resolving deltas|remote: |Cloning into"
)
_PERCENT = r"\d{1,3}(?:\.\d+)?%\s*(?:\||\[|$)"
_BAR = r"[█▉▊▋▌▍▎▏#=]{8,}"
# the rule as one regex (the reference the split test below is checked against)
_PROGRESS_LINE = re.compile(rf"^\s*(?:{_PROGRESS_STARTS}|.*{_PERCENT}|.*{_BAR})")
# the same test in three parts: a start anchored after the indent, and a percentage or a
# bar anywhere (neither begins with a space). ``.*X`` at every start position backtracked
# over the whole line: 4 us a line, the most of a 10^5-message elision (issue 22)
_PROGRESS_START = re.compile(rf"\s*(?:{_PROGRESS_STARTS})")
_PROGRESS_PERCENT = re.compile(_PERCENT)
_PROGRESS_BAR = re.compile(_BAR)


def _is_progress_line(line: str) -> bool:
    """``_PROGRESS_LINE.match(line)``, without its backtracking (the line holds no newline)."""
    return (
        _PROGRESS_START.match(line) is not None
        or ("%" in line and _PROGRESS_PERCENT.search(line) is not None)
        or _PROGRESS_BAR.search(line) is not None
    )


_CONFIRMATION = re.compile(
    r"(?i)^\W*(?:ok|done|success(?:fully)?\b.*|(?:file )?(?:created|written|saved|updated|"
    r"deleted|removed)\b.*|.*\b(?:has been|was) (?:created|written|saved|updated|deleted)\b.*|"
    r"no (?:output|changes)\b.*|nothing to commit\b.*|command (?:ran|completed|executed) "
    r"successfully\b.*)\W*$"
)
_CONFIRMATION_CHARS = 300


def text_reason(text: str) -> str | None:
    """The reason ``text`` alone qualifies for elision (progress, confirmation, empty)."""
    body = text.strip()
    if not body:
        return "empty"
    if len(body) <= _CONFIRMATION_CHARS and "\n" not in body and _CONFIRMATION.match(body):
        return "confirmation"
    # the non-blank lines between runs of CR/LF (str.split in C, not a regex split)
    flat = body.replace("\r", "\n") if "\r" in body else body
    # four lines in five are progress: more misses than a fifth of the lines, blank ones
    # counted too, settle it on the first lines (a long output is not split and stripped
    # whole: a 10^4-line file read is settled in its first few thousand lines)
    most = flat.count("\n") + 1  # at least the non-blank lines
    if most < 3:
        return None
    settled = most // 5 + 1
    first = flat.split("\n", 2 * settled)
    misses = 0
    for ln in first[: 2 * settled]:
        if ln.strip() and not _is_progress_line(ln):
            misses += 1
            if misses >= settled:
                return None
    lines = [ln for ln in flat.split("\n") if ln.strip()]
    n = len(lines)
    if n < 3:
        return None
    misses = 0  # four lines in five are progress: at most one in five is not
    for ln in lines:
        if not _is_progress_line(ln):
            misses += 1
            if misses * 5 > n:
                return None  # settled: the rest cannot make it progress
    return "progress"


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call with its result, in history order, as the rules see it."""

    call_id: str
    name: str | None
    arguments: Any
    result: str | None  # None: the call has no result in the history
    # the result is an error or a test run (never superseded); a function answering that
    # is asked only when the answer matters (a reason other than ``duplicate`` was found)
    verdict: bool | Callable[[], bool] = False

    def is_verdict(self) -> bool:
        """True when the result is an error or a test run."""
        v = self.verdict
        return v() if callable(v) else bool(v)


def actions_of(calls: Sequence[Call]) -> list[Action]:
    """What each call reads and writes (:func:`action_of`), in order: both rules read them."""
    return [action_of(c.name, c.arguments) for c in calls]


def qualifying_reasons(
    calls: Iterable[Call], actions: Sequence[Action] | None = None
) -> dict[str, str]:
    """call id -> why its result qualifies for elision (SPEC §5.8), for the calls that do.

    A reason names what supersedes the result when there is one: ``reread by #c9``,
    ``rerun as #c12``, ``rewritten by #c7``, ``duplicate of #c20``; otherwise the kind
    (``progress``, ``confirmation``, ``empty``). Later calls anywhere in the history
    (the tail too) supersede earlier ones. ``actions``: :func:`actions_of` the calls,
    when the caller has them.
    """
    seq = list(calls)
    acts = actions_of(seq) if actions is None else actions
    out: dict[str, str] = {}
    last_key: dict[str, str] = {}  # call key -> the newest call id with it (seen so far)
    last_whole_read: dict[str, str] = {}  # path -> newest call that read it whole
    last_write: dict[str, str] = {}  # path -> newest call that wrote it
    last_text: dict[str, str] = {}  # result text -> newest call id with it
    for c, act in zip(reversed(seq), reversed(acts), strict=True):  # newest first
        why: str | None = None
        if c.result is not None:
            # a result that is no verdict qualifies for the first of these reasons; a
            # verdict (an error, a test run) only as a duplicate: a verdict repeated word
            # for word says nothing new. Whether it is one is asked only when it matters.
            dup = last_text.get(c.result)
            for p in act.reads:
                if p in last_whole_read:
                    why = f"reread by #{last_whole_read[p]}"
                    break
                if p in last_write:
                    why = f"rewritten by #{last_write[p]}"
                    break
            if why is None and act.key in last_key:
                why = f"rerun as #{last_key[act.key]}"
            if why is None and dup is None:
                why = text_reason(c.result)
            if why is not None and c.is_verdict():
                why = f"duplicate of #{dup}" if dup is not None else None
            elif why is None and dup is not None:
                why = f"duplicate of #{dup}"
            last_text.setdefault(c.result, c.call_id)
        if why is not None:
            out[c.call_id] = why
        last_key.setdefault(act.key, c.call_id)
        if act.whole:
            for p in act.reads:
                last_whole_read.setdefault(p, c.call_id)
        for p in act.writes:
            last_write.setdefault(p, c.call_id)
    return out


def argument_reasons(
    calls: Iterable[Call], actions: Sequence[Action] | None = None
) -> dict[str, str]:
    """call id -> why the call's long argument values qualify for elision.

    A body written to a file (``create``, ``write_file``, a patch) qualifies when the
    same call is made again later, or when the file is written whole again or read
    whole later (what it holds is then in what stays, or stale). ``actions``: as
    :func:`qualifying_reasons` takes them.
    """
    seq = list(calls)
    acts = actions_of(seq) if actions is None else actions
    out: dict[str, str] = {}
    last_key: dict[str, str] = {}
    later: dict[str, str] = {}  # path -> newest later call that wrote it or read it whole
    for c, act in zip(reversed(seq), reversed(acts), strict=True):
        why = None
        for p in (*act.writes, *act.edits):
            if p in later:
                why = f"superseded by #{later[p]}"
                break
        if why is None and act.key in last_key:
            why = f"repeated as #{last_key[act.key]}"
        if why is not None:
            out[c.call_id] = why
        last_key.setdefault(act.key, c.call_id)
        for p in act.writes:
            later.setdefault(p, c.call_id)
        if act.whole:
            for p in act.reads:
                later.setdefault(p, c.call_id)
    return out
