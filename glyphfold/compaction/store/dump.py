"""What crosses the store's edge as files: export, tree dumps, and imports.

``export`` is the working history at the tip as a wire history; ``dump`` the
whole tree (every branch, checkpoints) in glyphfold's own format, which
``load`` imports as a new conversation; ``import_history`` imports a plain wire
history as one commit per turn. Each import is one transaction that records how
many messages it brought (``check`` reports a conversation holding fewer), and
refuses a damaged SQLite file before writing into it.
"""

from __future__ import annotations

import time
from typing import Any

from glyphfold.compaction.history.convert import convert_history
from glyphfold.compaction.history.model import FORMATS
from glyphfold.compaction.history.turns import turn_entry_spans
from glyphfold.compaction.history.wire import join_envelope, split_envelope
from glyphfold.compaction.store import canon
from glyphfold.compaction.store import conversations as convs
from glyphfold.compaction.store.checkpoints import checked_label, list_checkpoints
from glyphfold.compaction.store.conversations import Ctx
from glyphfold.compaction.store.integrity import refuse_damaged
from glyphfold.compaction.store.rows import UNSET, dumps, insert_message, loads_many, wire
from glyphfold.compaction.store.tree import (
    PreparedTurn,
    acyclic,
    all_messages,
    append_turn,
    path_rows,
)
from glyphfold.errors import HistoryFormatError, InputError

DUMP_FORMAT = "glyphfold-transcript"
DUMP_VERSION = 1
WIRE_FORMATS = FORMATS


def export(ctx: Ctx, conversation: str, fmt: str | None) -> list[dict[str, Any]] | dict[str, Any]:
    """The working history at the tip as a wire history (as committed, or converted)."""
    if fmt is not None and fmt not in WIRE_FORMATS:
        msg = f"unknown export format {fmt!r}; use one of {', '.join(WIRE_FORMATS)}"
        raise InputError(msg)
    with ctx.backend.read() as tx:
        conv = convs.get(ctx, tx, conversation)
        rows = path_rows(tx, conversation, conv.tip_id, columns="payload")
        payloads = loads_many([r[0] for r in rows])
        system = convs.system(tx, conversation)
    out = wire(conv.format, system, payloads)
    if fmt is None or fmt == conv.format or conv.format is None:
        return out
    # the core's converter moves the system prompt and regroups tool results;
    # its output passes the target provider's rules (tested)
    return convert_history(out, to=fmt)


def dump(ctx: Ctx, conversation: str) -> dict[str, Any]:
    """The whole conversation tree (every branch, checkpoints) as JSON-ready data."""
    with ctx.backend.read() as tx:
        conv = convs.get(ctx, tx, conversation)
        system = convs.system(tx, conversation)
    stored = all_messages(ctx, conversation)
    acyclic(stored)  # a dump of a loop could never be imported again
    return {
        "format": DUMP_FORMAT,
        "version": DUMP_VERSION,
        "conversation": {
            "id": conv.id,
            "title": conv.title,
            "wire_format": conv.format,
            "tip": conv.tip_id,
            **({} if system is UNSET else {"system": system}),
        },
        "messages": [
            {"id": m.id, "parent": m.parent_id, "ends_turn": m.ends_turn, "payload": m.payload}
            for m in stored
        ],
        "checkpoints": [
            {"label": c.label, "message": c.message_id}
            for c in list_checkpoints(ctx, conversation)
            if not c.dropped
        ],
    }


def load(ctx: Ctx, data: dict[str, Any], title: str | None) -> str:
    """Import a :func:`dump` as a new conversation (new ids); validated before writing."""
    messages, tip, checkpoints, system, old_title = validate_dump(data)
    payloads = [m["payload"] for m in messages]
    declared = (data.get("conversation") or {}).get("wire_format")
    envelope = None
    if system is not UNSET:  # the system prompt sits where the declared format keeps it
        known = declared if declared in WIRE_FORMATS else None
        envelope = join_envelope(known, payloads, system, with_system=True)
    conv_format = canon.signal_format(payloads, envelope=envelope)
    if declared is not None and conv_format is not None and declared != conv_format:
        msg = f"dump declares {declared} messages but they are {conv_format}"
        raise InputError(msg)
    conv_format = conv_format or (declared if declared in WIRE_FORMATS else None)
    canons = canon.canon_messages(payloads, format=conv_format)
    title = convs.checked_title(title if title is not None else old_title)
    system_json = None if system is UNSET else dumps(system)
    refuse_damaged(ctx)
    now = time.time()
    with ctx.write("a new conversation") as tx:
        new_id = convs.insert(tx, title, conv_format, system_json, len(messages), now)
        mapping: dict[Any, int] = {}
        depth: dict[Any, int] = {}
        for m, c in zip(messages, canons, strict=True):
            parent = m.get("parent")
            d = 0 if parent is None else depth[parent] + 1
            ends = bool(m.get("ends_turn", True))
            columns = (c.role, c.turn_start, ends, c.tool_call_ids, c.tool_result_ids, c.tokens)
            new_parent = None if parent is None else mapping[parent]
            mapping[m["id"]] = insert_message(
                tx, new_id, new_parent, d, columns, dumps(m["payload"]), now
            )
            depth[m["id"]] = d
        for cp in checkpoints:
            tx.run(
                "INSERT INTO checkpoints (conversation_id, label, message_id, created_at) "
                "VALUES (?, ?, ?, ?)",
                (new_id, cp["label"], mapping.get(cp.get("message")), now),
            )
        tx.run(
            "UPDATE conversations SET tip_id = ? WHERE id = ?",
            (None if tip is None else mapping[tip], new_id),
        )
    return new_id


def import_history(ctx: Ctx, history: Any, title: str | None) -> str:
    """Import a plain wire history as a new conversation: one turn per commit boundary,
    all of it in one transaction (a crash leaves no half-imported conversation).

    ``history`` is a list of messages or any format's request dict; the system prompt of
    a dict (``system``, ``instructions``, ``system_instruction``) goes with the first turn.
    """
    env = split_envelope(history) if isinstance(history, dict) else None
    messages: Any = env.messages if env is not None else history
    if not isinstance(messages, list) or not messages:
        msg = "import_history needs a non-empty list of messages"
        raise HistoryFormatError(msg)
    title = convs.checked_title(title)
    _fmt, spans, _turns = turn_entry_spans(history)
    # leading system messages (and anything before the first turn) join the first turn
    turns: list[PreparedTurn] = []
    for a, b in spans:
        chunk: Any = messages[a:b]
        if not turns and env is not None and env.system_key is not None:
            chunk = {env.system_key: env.system, env.messages_key: chunk}
        turns.append(PreparedTurn(chunk))  # every turn validated before the transaction
    refuse_damaged(ctx)
    now = time.time()
    with ctx.write("a new conversation") as tx:
        conversation = convs.insert(tx, title, None, None, len(messages), now)
        tip = None
        for turn in turns:
            tip = append_turn(ctx, tx, conversation, turn, tip, now)[-1]
    ctx.seen[conversation] = tip
    return conversation


def validate_dump(data: Any) -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]], Any, Any]:
    """(messages, tip, checkpoints, system, title) of a dump; InputError before any write."""
    if not isinstance(data, dict) or data.get("format") != DUMP_FORMAT:
        msg = f'not a glyphfold transcript dump (expected "format": {DUMP_FORMAT!r})'
        raise InputError(msg)
    if data.get("version") != DUMP_VERSION:
        msg = f"transcript dump version {data.get('version')!r} is not supported ({DUMP_VERSION})"
        raise InputError(msg)
    conv = data.get("conversation") or {}
    messages = data.get("messages")
    if not isinstance(messages, list):
        msg = "transcript dump has no 'messages' list"
        raise InputError(msg)
    seen = _validate_dump_messages(messages)
    tip = conv.get("tip")
    if tip is not None and tip not in seen:
        msg = f"dump tip {tip!r} is not one of its messages"
        raise InputError(msg)
    mid_turn = {m["id"] for m in messages if not m.get("ends_turn", True)}
    if tip in mid_turn:
        msg = f"dump tip {tip!r} is inside a turn (ends_turn false); a tip is a turn boundary"
        raise InputError(msg)
    checkpoints = data.get("checkpoints") or []
    for cp in checkpoints:
        if not isinstance(cp, dict) or not isinstance(cp.get("label"), str):
            msg = f"dump checkpoint {cp!r} needs a 'label'"
            raise InputError(msg)
        checked_label(cp["label"])
        if cp.get("message") is not None and cp["message"] not in seen:
            msg = f"dump checkpoint {cp['label']!r} names unknown message {cp['message']!r}"
            raise InputError(msg)
    return messages, tip, checkpoints, conv.get("system", UNSET), conv.get("title")


def _validate_dump_messages(messages: list[Any]) -> set[Any]:
    """The ids of a dump's messages, each with a payload and an earlier (or no) parent."""
    seen: set[Any] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "id" not in m or not isinstance(m.get("payload"), dict):
            msg = f"dump message {i} needs an 'id' and a 'payload' dict"
            raise InputError(msg)
        if m["id"] in seen:
            msg = f"dump message {i} repeats id {m['id']!r}"
            raise InputError(msg)
        parent = m.get("parent")
        if parent is not None and parent not in seen:
            msg = (
                f"dump message {i} (id {m['id']!r}) names parent {parent!r}, which is not an "
                "earlier message of the file; nothing was imported"
            )
            raise InputError(msg)
        seen.add(m["id"])
    return seen
