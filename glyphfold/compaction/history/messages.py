"""The history model and the one way in and out of it: detect, parse, serialise, coerce.

Every public function of the history core and of the ladder accepts either a
*wire* history (what users already have: a list of message dicts or input items,
or a request body such as ``{"system": ..., "messages": [...]}``, ``{"instructions":
..., "input": [...]}`` or ``{"contents": [...]}``; SDK message objects too) or a canonical
:class:`History`, and returns the kind it was given. :func:`coerce` is the one
helper that does this. The model lives in :mod:`~glyphfold.compaction.history.model`
(re-exported here), each wire format in :mod:`~glyphfold.compaction.history.wire`.

The conversion is lossless: unknown keys (``cache_control``, ``name``, ``refusal``...)
and unknown block types (``thinking``, ``document``, ``input_audio``...) are carried
through untouched. A message that was not replaced comes back out as the very same
dict object; a history that nothing changed comes back out as the very same
container (SPEC §2.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, TypeVar

from glyphfold.compaction.history.markers import X_KEY
from glyphfold.compaction.history.model import (
    ANTHROPIC,
    BEDROCK,
    EMPTY,
    FORMATS,
    OPENAI,
    Format,
    FrozenMapping,
    History,
    Message,
)
from glyphfold.compaction.history.wire import (
    envelope_format,
    format_of_model,
    message_signal,
    messages_key,
    parse_entries,
    serialise_entries,
    wire_format,
)
from glyphfold.compaction.history.wire.sdk import is_sdk_object, plain_history
from glyphfold.errors import AmbiguousFormatError, HistoryFormatError

__all__ = [
    "FormatArg",
    "HistoryT",
    "WireHistory",
    "coerce",
    "detect_format",
    "format_evidence",
    "parse_message",
    "plain_format",
    "to_canonical",
    "to_wire",
]


# What the public functions take and give back: a canonical History, or a wire history
# (a list of message dicts or SDK objects; a dict envelope such as Anthropic's
# {"system", "messages"} or a request body). The result is of the kind given.
HistoryT = TypeVar("HistoryT", History, list[Any], dict[str, Any])
WireHistory: TypeAlias = list[Any] | dict[str, Any]
FormatArg: TypeAlias = Literal["auto"] | Format


def parse_message(format: str, i: int, m: Any) -> Message:
    """Parse one wire message ``m`` (index ``i``, for errors) of the given format."""
    return wire_format(format).parse_message(i, m)


# --------------------------------------------------------------------------- format detection


def detect_format(history: Any) -> str:
    """Detect the wire format of a history.

    Raises :class:`AmbiguousFormatError` for plain user/assistant text that nothing in
    the history ties to one format (pass ``format=``), HistoryFormatError if mixed or
    malformed.
    """
    if isinstance(history, History):
        return history.format
    history, _ = _plain(history)
    messages, top_signal = _unwrap(history)
    return str(_detect(history, messages, top_signal))


def format_evidence(history: Any) -> str | None:
    """The format ``history`` itself shows (a format-only key or block, glyphfold's stamp on
    its markers, the request's model name, a system message in a list), or None for plain
    text any format could be."""
    if isinstance(history, History):
        return history.format
    history, _ = _plain(history)
    messages, top_signal = _unwrap(history)
    found = _detect(history, messages, top_signal, plain=_EVIDENCE_ONLY)
    return None if found is None else str(found)


def plain_format(profile: Any) -> str | None:
    """The format plain text nothing else identifies is read as under ``profile`` (a
    name or a Profile; None: none given): the format of the provider that reads the
    pages, OpenAI or Anthropic; None (refuse) for other providers.

    A bare list of plain messages was read as OpenAI whatever the profile and got
    ``image_url`` pages an Anthropic model refuses (issue 21 item 12).
    """
    if profile is None:
        return None
    from glyphfold.render.profiles import get_profile  # numpy-free, but not needed before

    provider = get_profile(profile).provider
    return provider if provider in (OPENAI, ANTHROPIC) else None


# ``plain=`` value of _detect: return None for plain text instead of refusing it
_EVIDENCE_ONLY = "<evidence only>"


def _detect(
    history: Any, messages: Sequence[Any], top_signal: str | None, *, plain: str | None = None
) -> Any:
    found: str | None = top_signal
    found_at: int | None = None
    for i, m in enumerate(messages):
        s = message_signal(m)
        if s is None:
            continue
        if found is None:
            found, found_at = s, i
        elif s != found:
            where = "the request envelope" if found_at is None else f"message {found_at}"
            msg = (
                f"message {i}: mixed history: this message is {s} format but "
                f"{where} is {found} format; convert it to one format"
            )
            raise HistoryFormatError(msg, index=i)
    # Plain user/assistant text is valid in several formats. What can still tell: the
    # format glyphfold stamped on its own markers (a compacted history keeps its format
    # on the next pass), the request's model name, a system message in a list; failing
    # those, the caller's ``plain`` (a profile's provider) or a refusal.
    if found is None:
        found = _plain_text_format(history, messages, plain=plain)
    return found


def _plain_text_format(history: Any, messages: Sequence[Any], *, plain: str | None) -> Any:
    """The format of a history without a format-only key or block (see :func:`_detect`)."""
    found = _stamped_format(messages)
    if found is None and isinstance(history, Mapping):
        found = format_of_model(history.get("model"), messages_key(history) or "messages")
    if found is None and not isinstance(history, Mapping) and _has_system_message(messages):
        # Anthropic and Bedrock keep the system prompt apart: a list with a system or
        # developer message is Chat Completions (Responses lists are typed items)
        found = OPENAI
    if found is not None:
        return found
    if plain == _EVIDENCE_ONLY:
        return None
    if plain is not None:
        return plain
    raise AmbiguousFormatError(_ambiguous_message(history))


def _has_system_message(messages: Sequence[Any]) -> bool:
    return any(
        isinstance(m, Mapping) and m.get("role") in ("system", "developer") for m in messages
    )


def _ambiguous_message(history: Any) -> str:
    shape = (
        "a {'messages': [...]} body of plain user/assistant text fits the openai and "
        "anthropic wire formats"
        if isinstance(history, Mapping)
        else "a list of plain user/assistant text fits the openai, anthropic and "
        "responses wire formats"
    )
    return (
        f"{shape}, and nothing in it tells which (no format-only key or block, no "
        "glyphfold marker, no known 'model' name); the format decides the shape of what "
        "compaction adds (image pages, markers) and the provider's rules: pass "
        "format='openai' or format='anthropic' (CLI: --format openai), or an explicit "
        "profile= of that provider"
    )


def _stamped_format(messages: Sequence[Any]) -> str | None:
    """The format stamped on glyphfold's own marker messages by :func:`to_wire`, if any."""
    for m in messages:
        meta = m.get(X_KEY) if type(m) is dict or isinstance(m, Mapping) else None
        if isinstance(meta, Mapping) and meta.get("format") in FORMATS:
            return str(meta["format"])
    return None


def _stamp(entry: Any, fmt: str) -> Any:
    """A marker's wire entry with its format under ``x_glyphfold`` (a copy; others as-is)."""
    meta = entry.get(X_KEY) if type(entry) is dict else None
    if not isinstance(meta, Mapping) or meta.get("format") == fmt:
        return entry
    return {**entry, X_KEY: {**meta, "format": fmt}}


def _unwrap(history: Any) -> tuple[Sequence[Any], str | None]:
    if isinstance(history, Mapping):
        key = messages_key(history)
        if key is None:
            msg = (
                "a dict history needs a 'messages' key (Anthropic or Bedrock "
                "{'system': ..., 'messages': [...]}), 'input' (OpenAI Responses) or "
                f"'contents' (Gemini), got keys {sorted(map(str, history))!r}"
            )
            raise HistoryFormatError(msg)
        messages = history[key]
        if key == "input" and isinstance(messages, str):  # Responses: input="text"
            messages = [{"role": "user", "content": messages}]
        if not isinstance(messages, list | tuple):
            msg = f"{key!r} must be a list, got {type(messages).__name__}"
            raise HistoryFormatError(msg)
        top = envelope_format(history)
        if key == "messages" and top not in (None, ANTHROPIC, BEDROCK):
            top = None
        return messages, top
    if isinstance(history, list | tuple):
        return history, None
    msg = (
        "a history must be a list of message dicts, a request dict ('messages', 'input' or "
        f"'contents') or a glyphfold History, got {type(history).__name__}"
    )
    raise HistoryFormatError(msg)


# --------------------------------------------------------------------------- parsing


def _parse_auto(
    history: Any, messages: Sequence[Any], top_signal: str | None, plain: str | None = None
) -> tuple[str, tuple[Message, ...]]:
    """Detect and parse in one pass (the common case); fall back to two passes on a switch."""
    evidence = top_signal or _plain_text_format(history, messages, plain=_EVIDENCE_ONLY)
    guess = evidence or plain or OPENAI  # plain text parses alike: a provisional pick
    fmt = wire_format(guess)
    if fmt.parse_messages is not None:  # list-level formats: detect first (mixing raises)
        name = _detect(history, messages, top_signal, plain=plain)
        return name, parse_entries(wire_format(name), messages)
    established = top_signal
    parse = fmt.parse_message
    out: list[Message] = []
    signal = message_signal
    for i, m in enumerate(messages):
        s = signal(m)
        if s is not None and s != established:
            if established is not None or s != guess:
                # mixed history (raises naming the index), or the guess was wrong:
                # parse again with the detected format
                name = _detect(history, messages, top_signal, plain=plain)
                return name, parse_entries(wire_format(name), messages)
            established = s
        out.append(parse(i, m))
    if established is None and evidence is None:
        # nothing but plain text: the caller's format for it, or a refusal
        name = _plain_text_format(history, messages, plain=plain)
        if name != guess:
            return name, parse_entries(wire_format(name), messages)
    return guess, tuple(out)


def _plain(history: Any) -> tuple[Any, bool]:
    """The history with SDK objects turned into wire dicts (the input itself when plain)."""
    if isinstance(history, Mapping):
        key = messages_key(history)
        entries = history.get(key) if key is not None else None
        if isinstance(entries, list | tuple):
            out, changed = plain_history(entries)
            if changed:
                d = dict(history)
                d[key] = out
                return d, True
        return history, False
    if isinstance(history, list | tuple):
        out, changed = plain_history(history)
        return (out, True) if changed else (history, False)
    if is_sdk_object(history):
        msg = (
            f"a history is a list of messages, got one {type(history).__name__}; "
            "pass a list of them"
        )
        raise HistoryFormatError(msg)
    return history, False


def to_canonical(history: Any, *, format: str = "auto", plain: str | None = None) -> History:
    """Parse a wire history (or pass a History through) into the canonical model.

    ``format`` is ``"auto"`` or one of :data:`FORMATS`. With ``"auto"``, plain
    user/assistant text that nothing in the history ties to one format (no format-only
    key or block, no glyphfold marker, no known ``model`` name) is read as ``plain``;
    ``plain=None`` refuses it with :class:`AmbiguousFormatError`. SDK message objects (pydantic
    models of the openai, anthropic, google-genai and litellm SDKs) are accepted and
    come back as dicts. Raises :class:`HistoryFormatError` naming the message index
    for malformed or mixed input.
    """
    if isinstance(history, History):
        if format not in ("auto", history.format):
            msg = f"history is {history.format} format, but format={format!r} was requested"
            raise HistoryFormatError(msg)
        return history
    history, _ = _plain(history)
    messages, top_signal = _unwrap(history)
    if format == "auto":
        if plain is not None and plain not in FORMATS:
            msg = f"plain must be one of {', '.join(FORMATS)} or None, got {plain!r}"
            raise HistoryFormatError(msg)
        fmt, parsed = _parse_auto(history, messages, top_signal, plain)
    elif format in FORMATS:
        fmt = format
        parsed = parse_entries(wire_format(fmt), messages)
    else:
        msg = f"format must be 'auto' or one of {', '.join(FORMATS)}, got {format!r}"
        raise HistoryFormatError(msg)
    h = _enveloped(history, fmt, parsed) if isinstance(history, Mapping) else History(fmt, parsed)
    object.__setattr__(h, "_wire", history)
    return h


def _enveloped(history: Mapping[str, Any], fmt: str, parsed: tuple[Message, ...]) -> History:
    wf = wire_format(fmt)
    key = messages_key(history)
    if key != wf.messages_key:
        msg = f"a {wf.label} request keeps its messages under {wf.messages_key!r}, not {key!r}"
        raise HistoryFormatError(msg)
    if not wf.system_keys and "system" in history:
        msg = "an OpenAI history keeps system prompts as messages, not a 'system' key"
        raise HistoryFormatError(msg)
    system_name = next((k for k in wf.system_keys if k in history), None)
    system = history.get(system_name) if system_name is not None else None
    problem = wf.check_system(system)
    if problem is not None:
        raise HistoryFormatError(problem)
    skip = (key, system_name)
    extra = MappingProxyType({k: v for k, v in history.items() if k not in skip})
    meta: Mapping[str, Any] = EMPTY
    if system_name is not None or isinstance(history.get(key), str):
        meta = FrozenMapping(
            {"_system_key": system_name or "", "_input_str": isinstance(history.get(key), str)}
        )
    return History(fmt, parsed, system, "dict", extra, meta)


# --------------------------------------------------------------------------- serialising


def to_wire(history: History) -> list[Any] | dict[str, Any]:
    """Serialise a canonical History back to its wire format (list or dict envelope).

    Unchanged messages come out as the very dicts they were parsed from; an
    unchanged History comes out as the very container it was parsed from.
    """
    if not isinstance(history, History):
        msg = f"to_wire needs a glyphfold History, got {type(history).__name__}"
        raise HistoryFormatError(msg)
    if history._wire is not None:
        wire: list[Any] | dict[str, Any] = history._wire
        return wire
    wf = wire_format(history.format)
    # glyphfold's markers carry the format, so plain text is detected alike next pass
    messages = [_stamp(e, history.format) for e in serialise_entries(wf, history.messages)]
    if history.envelope == "list":
        return messages
    out: dict[str, Any] = {}
    # an explicit "system": None in the input is carried through like any other key
    system_key = history.meta.get("_system_key")
    if not isinstance(system_key, str) or not system_key:
        system_key = wf.system_keys[0] if wf.system_keys else None
    if system_key is not None and (history.system is not None or history.meta.get("_system_key")):
        out[system_key] = history.system
    out.update(history.extra)
    out[wf.messages_key] = messages
    return out


# ------------------------------------------------------------------ accept wire or canonical


def coerce(
    history: Any, *, format: str = "auto", plain: str | None = None
) -> tuple[History, Callable[[History], Any]]:
    """Parse ``history`` and return (canonical, restore).

    ``format`` and ``plain`` as for :func:`to_canonical`: a caller whose result does
    not depend on the format of plain text (pricing, turn splits) passes ``plain``.

    ``restore(result)`` gives back the kind the caller passed in: a History for a
    History; for wire input the very input object when ``result`` is the
    unchanged parsed History, else ``to_wire(result)``.
    """
    if isinstance(history, History):
        h = to_canonical(history, format=format)
        return h, _identity
    h = to_canonical(history, format=format, plain=plain)

    def restore(result: History) -> Any:
        if result is h:
            return h._wire  # the input itself (SDK objects: the dicts they stand for)
        return to_wire(result)

    return h, restore


def _identity(result: History) -> History:
    return result
