"""What differs between the providers' APIs: where the history is, how errors look.

One :class:`Endpoint` per compacting route. Each knows which part of a request
body is the history glyphfold compacts (and how to put a compacted copy back),
which parts are fixed overhead that only counts against the budget (tool schemas),
how many tokens the reply reserves, and the provider's own error shape, so
that every error the proxy itself produces looks like one of the provider's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from glyphfold.compaction.history.model import Format

__all__ = [
    "ANTHROPIC",
    "ENDPOINTS",
    "OPENAI",
    "Endpoint",
    "error_body",
    "history_items",
    "sse_error",
    "with_items",
]

OPENAI = "openai"
ANTHROPIC = "anthropic"

# Anthropic names an error by its type; the status decides which one
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
}


def error_body(provider: str, status: int, message: str, *, code: str | None = None) -> bytes:
    """A JSON error body the provider's SDK parses as its own (status-typed)."""
    if provider == ANTHROPIC:
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    elif provider == OPENAI:
        fallback = "server_error" if status >= 500 else "invalid_request_error"
        kind = _OPENAI_TYPES.get(status, fallback)
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    else:
        msg = f"unknown provider {provider!r}; expected {OPENAI!r} or {ANTHROPIC!r}"
        raise ValueError(msg)
    return json.dumps(body).encode()


def sse_error(provider: str, message: str) -> bytes:
    """A server-sent error event, for failures after a stream has started."""
    if provider == ANTHROPIC:
        data = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    data = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _tools_text(body: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    parts = [body[k] for k in keys if body.get(k)]
    if not parts:
        return ""
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=str)


def _int_field(body: Mapping[str, Any], *keys: str) -> int:
    for k in keys:
        v = body.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 0


# -- OpenAI Chat Completions --------------------------------------------------------


def _chat_history(body: Mapping[str, Any]) -> Any:
    messages = body.get("messages")
    return messages if isinstance(messages, list) else None


def _chat_with(body: Mapping[str, Any], history: Any) -> dict[str, Any]:
    return {**body, "messages": history}


# -- Anthropic Messages -------------------------------------------------------------


def _envelope(body: Mapping[str, Any], items_key: str, system_key: str) -> Any:
    """``{system_key?, items_key}`` of a body whose history is an envelope; None without one."""
    items = body.get(items_key)
    if not isinstance(items, list):
        return None
    if system_key in body:
        return {system_key: body[system_key], items_key: items}
    return {items_key: items}


def _with_envelope(
    body: Mapping[str, Any], history: Any, items_key: str, system_key: str
) -> dict[str, Any]:
    out = dict(body)
    if system_key in history:
        out[system_key] = history[system_key]
    out[items_key] = history[items_key]
    return out


def _messages_history(body: Mapping[str, Any]) -> Any:
    return _envelope(body, "messages", "system")


def _messages_with(body: Mapping[str, Any], history: Any) -> dict[str, Any]:
    return _with_envelope(body, history, "messages", "system")


# -- OpenAI Responses --------------------------------------------------------------


def _responses_history(body: Mapping[str, Any]) -> Any:
    if body.get("previous_response_id") or body.get("conversation"):
        return None  # a continuation of server-side state: nothing to fit
    return _envelope(body, "input", "instructions")  # None for a string prompt


def _responses_with(body: Mapping[str, Any], history: Any) -> dict[str, Any]:
    return _with_envelope(body, history, "input", "instructions")


def history_items(history: Any) -> tuple[dict[str, Any], list[Any]]:
    """(the envelope's other keys, its list of messages/items) of a wire history."""
    if isinstance(history, Mapping):
        key = "messages" if "messages" in history else "input"
        return {k: v for k, v in history.items() if k != key}, list(history[key])
    return {}, list(history)


def with_items(history: Any, items: list[Any]) -> Any:
    """``history`` (same kind) with its messages/items replaced by ``items``."""
    if isinstance(history, Mapping):
        key = "messages" if "messages" in history else "input"
        return {**history, key: items}
    return items


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A compacting route: its provider, upstream path and how its body is read."""

    name: str  # metrics label
    provider: str
    path: str
    format: Format  # the wire format of its history (the route says it: serve never guesses)
    history: Callable[[Mapping[str, Any]], Any]  # the wire history, or None if absent
    with_history: Callable[[Mapping[str, Any], Any], dict[str, Any]]  # a new body
    overhead_keys: tuple[str, ...]  # fixed parts priced as text (tool schemas)
    reserve_keys: tuple[str, ...]  # the reply's max tokens
    can_stream: bool = True
    records: bool = True  # committed to the transcript store with --db

    def overhead_text(self, body: Mapping[str, Any]) -> str:
        """The fixed overhead of a request (tool schemas) as one JSON text."""
        return _tools_text(body, self.overhead_keys)

    def reserve(self, body: Mapping[str, Any]) -> int:
        """Tokens the reply may take (``max_tokens`` or its equivalent; 0 if unset)."""
        return _int_field(body, *self.reserve_keys)


ENDPOINTS: dict[str, Endpoint] = {
    e.path: e
    for e in (
        Endpoint(
            "chat_completions",
            OPENAI,
            "/v1/chat/completions",
            "openai",
            _chat_history,
            _chat_with,
            ("tools", "functions"),
            ("max_completion_tokens", "max_tokens"),
        ),
        Endpoint(
            "messages",
            ANTHROPIC,
            "/v1/messages",
            "anthropic",
            _messages_history,
            _messages_with,
            ("tools",),
            ("max_tokens",),
        ),
        Endpoint(
            "count_tokens",
            ANTHROPIC,
            "/v1/messages/count_tokens",
            "anthropic",
            _messages_history,
            _messages_with,
            ("tools",),
            (),
            can_stream=False,
        ),
        Endpoint(
            "responses",
            OPENAI,
            "/v1/responses",
            "responses",
            _responses_history,
            _responses_with,
            ("tools",),
            ("max_output_tokens",),
            records=False,  # the store keeps chat messages; Responses items are not stored
        ),
    )
}
