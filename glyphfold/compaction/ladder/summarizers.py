"""The Summarizer protocol, SDK adapters (anthropic, openai), and bounded chunked summarisation.

A summarizer is any callable ``text -> summary`` (sync, or async returning an
awaitable): a lambda, a function calling a local model, or one of the adapters
here. A ``focus`` (the user's instruction of what to keep, like omp's
``/compact [focus]``) reaches every summarizer the same way: as a header on the
text of every request (:func:`focused_text`), so a plain callable sees it too.
The adapters wrap an official SDK client the caller built (so keys, base URLs
and retries stay the caller's business); the SDKs are optional extras and are
only imported by the ``from_env`` constructors.

Summary input is bounded (issue 5): :func:`summarize_bounded` never sends more
than ``max_input_chars`` in one request; a longer text is summarised in chunks
and the chunk summaries are summarised again until they fit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from glyphfold.checks import check_int
from glyphfold.errors import SummarizerError

SUMMARY_PROMPT = """\
You are compacting the middle of a long conversation between a user and a coding agent \
so the agent can continue the work without it. Write a dense summary that keeps:
1. Goals: what the user asked for, in their words where short.
2. Constraints and preferences the user stated (versions, style, what not to do).
3. Decisions taken and why; approaches tried and rejected.
4. Current state: what is done, what failed and the exact error.
5. Open items and next steps.
6. Exact identifiers, copied character for character: file paths, function and class \
names, commands, ids, hashes, URLs, numbers, error codes.
Do not invent anything. Prefer lists over prose. Keep the language of the user's \
quotes. Reply with the summary only."""


FOCUS_HEADER = "[focus: the user asks this summary to keep above all: {focus}]\n\n"


def focused_text(text: str, focus: str | None) -> str:
    """``text`` as one summary request carries it: with the focus header when there is one."""
    return text if not focus else FOCUS_HEADER.format(focus=focus) + text


def check_focus(focus: object) -> str | None:
    """``focus`` as given (None or a non-empty one-paragraph str), or a clear error."""
    if focus is None:
        return None
    if not isinstance(focus, str) or not focus.strip():
        msg = f"focus must be a non-empty str (what the summary should keep), got {focus!r}"
        raise ValueError(msg)
    return " ".join(focus.split())


@runtime_checkable
class Summarizer(Protocol):
    """``summarizer(text) -> summary`` (or an awaitable of it)."""

    def __call__(self, text: str, /) -> str | Awaitable[str]: ...


@dataclass(frozen=True, slots=True)
class AnthropicSummarizer:
    """Adapter for an ``anthropic.Anthropic`` client (Messages API)."""

    client: Any
    model: str = "claude-sonnet-4-5"
    max_tokens: int = 2048
    prompt: str = SUMMARY_PROMPT
    context_window: int = 200_000  # tokens; bounds every request (see summary_input_chars)

    def __call__(self, text: str, /) -> str:
        resp = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=self.prompt,
            messages=[{"role": "user", "content": text}],
        )
        parts = [
            getattr(b, "text", None) or (b.get("text") if isinstance(b, dict) else None)
            for b in resp.content
        ]
        return "".join(p for p in parts if p)

    @classmethod
    def from_env(cls, **kwargs: Any) -> AnthropicSummarizer:
        """Build a client from ``ANTHROPIC_API_KEY`` (needs the ``anthropic`` extra)."""
        try:
            import anthropic
        except ImportError as exc:
            msg = "the anthropic SDK is not installed: pip install 'glyphfold[anthropic]'"
            raise SummarizerError(msg) from exc
        return cls(anthropic.Anthropic(), **kwargs)


@dataclass(frozen=True, slots=True)
class OpenAISummarizer:
    """Adapter for an ``openai.OpenAI`` client (Chat Completions API)."""

    client: Any
    model: str = "gpt-4.1-mini"
    max_tokens: int = 2048
    prompt: str = SUMMARY_PROMPT
    context_window: int = 128_000  # tokens; bounds every request (see summary_input_chars)

    def __call__(self, text: str, /) -> str:
        resp = self.client.chat.completions.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=[
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": text},
            ],
        )
        return resp.choices[0].message.content or ""

    @classmethod
    def from_env(cls, **kwargs: Any) -> OpenAISummarizer:
        """Build a client from ``OPENAI_API_KEY`` (needs the ``openai`` extra)."""
        try:
            import openai
        except ImportError as exc:
            msg = "the openai SDK is not installed: pip install 'glyphfold[openai]'"
            raise SummarizerError(msg) from exc
        return cls(openai.OpenAI(), **kwargs)


def summary_input_chars(summarizer: Any, *, default: int) -> int:
    """Largest text one request may carry: ``default``, lowered to fit the model's window.

    A summarizer that declares ``context_window`` (tokens) gets requests of at most
    80% of (window - reply - prompt) at 4 chars per token: the estimate is a
    heuristic (SPEC §3.4), so leave a margin rather than hit the very wall the
    ladder exists to avoid.
    """
    window = getattr(summarizer, "context_window", None)
    if not isinstance(window, int) or window <= 0:
        return default
    reply = getattr(summarizer, "max_tokens", 0) or 0
    prompt = len(getattr(summarizer, "prompt", SUMMARY_PROMPT)) // 4 + 50
    room_tokens = window - reply - prompt
    if room_tokens <= 0:
        msg = f"summarizer window {window} leaves no room for input after reply and prompt"
        raise SummarizerError(msg)
    return max(1000, min(default, int(room_tokens * 4 * 0.8)))


def chunk_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into pieces of at most ``max_chars``, at line breaks where possible."""
    check_int("max_chars", max_chars, minimum=1, error=ValueError)
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        j = min(i + max_chars, n)
        if j < n:
            nl = text.rfind("\n", i + max_chars // 2, j)
            if nl != -1:
                j = nl + 1
        out.append(text[i:j])
        i = j
    return out


def call_with_timeout(
    summarizer: Callable[[str], Any], text: str, *, timeout_s: float | None
) -> str:
    """Call a sync or async summarizer with a timeout; raise :class:`SummarizerError` on failure."""

    def run() -> Any:
        result = summarizer(text)
        if inspect.isawaitable(result):

            async def wait() -> Any:
                return await result

            # a fresh loop in this worker thread: works whether or not the caller has one
            return asyncio.run(wait())
        return result

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="glyphfold-sum")
    try:
        fut = pool.submit(run)
        try:
            out = fut.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError as exc:
            msg = f"summarizer timed out after {timeout_s} s"
            raise SummarizerError(msg) from exc
        except Exception as exc:
            msg = f"summarizer raised {type(exc).__name__}: {exc}"
            raise SummarizerError(msg) from exc
    finally:
        # do not wait for a hung call: the thread is abandoned, the caller moves on
        pool.shutdown(wait=False, cancel_futures=True)
    if not isinstance(out, str):
        msg = f"summarizer must return str, got {type(out).__name__}"
        raise SummarizerError(msg)
    return out


def summarize_bounded(
    text: str,
    summarizer: Callable[[str], Any],
    *,
    max_input_chars: int,
    timeout_s: float | None = 120.0,
    max_rounds: int = 4,
    focus: str | None = None,
) -> tuple[str, int]:
    """Summarise ``text`` with requests of at most ``max_input_chars``; return (summary, calls).

    With a ``focus`` every request starts with the focus header (:func:`focused_text`);
    the header counts against ``max_input_chars``.
    """
    calls = 0
    header = len(focused_text("", focus))
    if header >= max_input_chars // 2:
        msg = f"focus of {header} chars leaves too little of a {max_input_chars}-char request"
        raise SummarizerError(msg)
    max_input_chars -= header
    for _ in range(max_rounds):
        if len(text) <= max_input_chars:
            out = call_with_timeout(summarizer, focused_text(text, focus), timeout_s=timeout_s)
            return out, calls + 1
        pieces = chunk_text(text, max_input_chars)
        summaries = []
        for k, piece in enumerate(pieces, 1):
            summaries.append(
                f"[part {k}/{len(pieces)}]\n"
                + call_with_timeout(summarizer, focused_text(piece, focus), timeout_s=timeout_s)
            )
            calls += 1
        merged = "\n\n".join(summaries)
        if len(merged) >= len(text):
            msg = "summarizer output is not shorter than its input; refusing to loop"
            raise SummarizerError(msg)
        text = merged
    msg = f"summary still longer than {max_input_chars} chars after {max_rounds} rounds"
    raise SummarizerError(msg)
