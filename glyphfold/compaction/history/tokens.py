"""Token estimates of a history (SPEC §3.4) and the TokenCounter protocol.

The estimate is a heuristic, not a provider tokenizer: about 4 characters per
token plus 4 framing tokens per message. Images are priced through the provider
profile (``glyphfold.render.profiles``) in the messages whose images are sent.
By default (:data:`DEFAULT_IMAGE_POLICY`, ``"all"``) that is every image: a wire
history goes to the provider as it is, and every image in it is billed.
``image_policy="spec"`` is SPEC §3.4's runtime, which re-attaches images only of
user messages and of the current (newest) turn's tool results. Older tool results
are costed by the UTF-8 byte size of their text. Keys of a wire dict the
estimate does not otherwise read (``name``, vendor extensions, a client's own
data, in messages, parts and tool calls) are sent too and cost their JSON size;
only ``x_glyphfold``, stripped before sending, is free.

Thinking blocks of earlier turns cost nothing (Anthropic strips them), and nothing
before a server-side ``compaction`` block is counted (the provider drops it); see
:mod:`~glyphfold.compaction.history.provider_blocks`.

Exact counting: pass ``counter=`` an exact tokenizer to replace the heuristic.
``BpeCounter`` (extra ``glyphfold[tokenizer]``, the bpe-openai package) counts
OpenAI's ``o200k_base`` / ``cl100k_base`` exactly and fully offline: its tables
are compiled into the wheel. ``TiktokenCounter`` gives the same counts but
tiktoken downloads its tables, so it works only once they are in
``TIKTOKEN_CACHE_DIR``. Both count special tokens such as ``<|endoftext|>`` as
plain text (what a chat message's text costs) and add no per-message framing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from glyphfold.checks import check_choice, check_int
from glyphfold.compaction.history.markers import TOOL_RESULTS_PREFIX, X_KEY
from glyphfold.compaction.history.messages import FormatArg, coerce, plain_format
from glyphfold.compaction.history.model import (
    OPENAI,
    History,
    Image,
    Message,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
)
from glyphfold.compaction.history.provider_blocks import (
    compaction_barrier,
    is_thinking_block,
    without_thinking,
)
from glyphfold.compaction.history.turns import Segmentation, segment_turns
from glyphfold.compaction.history.wire import unpriced_keys_of, wire_format
from glyphfold.compaction.history.wire.base import extra_keys
from glyphfold.errors import InputError, TokenizerUnavailableError
from glyphfold.render.profiles import ProfileArg, get_profile

__all__ = [
    "BPE_ENCODINGS",
    "CHARS_PER_TOKEN",
    "DEFAULT_IMAGE_POLICY",
    "FRAMING_TOKENS",
    "IMAGE_POLICIES",
    "BpeCounter",
    "HeuristicCounter",
    "ImagePolicy",
    "TiktokenCounter",
    "TokenCosts",
    "TokenCounter",
    "envelope_tokens",
    "estimate_history_tokens",
    "estimate_message_tokens",
    "image_tokens",
    "token_costs",
]

CHARS_PER_TOKEN = 4
FRAMING_TOKENS = 4
IMAGE_POLICIES = ("spec", "all")
ImagePolicy: TypeAlias = Literal["spec", "all"]
# The one default of every function that prices a history. A wire history is sent as
# it is, so the provider bills every image in it: "all". "spec" prices images only in
# user messages and the newest turn's tool results (SPEC §3.4's runtime re-attaches
# only current tool images); pass it explicitly for such a harness.
DEFAULT_IMAGE_POLICY: ImagePolicy = "all"
DEFAULT_PROFILE = "anthropic"


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a piece of text; plug an exact tokenizer in here."""

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``."""
        ...


@dataclass(frozen=True, slots=True)
class HeuristicCounter:
    """About ``chars_per_token`` characters per token, rounded up (docs/budget.md)."""

    chars_per_token: int = CHARS_PER_TOKEN

    def __post_init__(self) -> None:
        check_int("chars_per_token", self.chars_per_token, minimum=1)

    def count(self, text: str) -> int:
        """ceil(len(text) / chars_per_token)."""
        return -(-len(text) // self.chars_per_token)


def _tiktoken_constants(encoding: str) -> tuple[str, ...]:
    """The string constants of tiktoken's constructor for ``encoding`` (its URL, its sha256)."""
    import tiktoken_ext.openai_public as pub  # ships with tiktoken

    # the constructor names its BPE file URL and hash as constants; read them without calling
    src = getattr(pub, "ENCODING_CONSTRUCTORS", {}).get(encoding)
    code = getattr(src, "__code__", None)
    consts = code.co_consts if code is not None else ()
    return tuple(c for c in consts if isinstance(c, str))


def _tiktoken_expected_sha256(encoding: str) -> str | None:
    """The sha256 tiktoken checks the cached table of ``encoding`` against, if it names one."""
    hexdigits = set("0123456789abcdef")
    return next(
        (c for c in _tiktoken_constants(encoding) if len(c) == 64 and set(c) <= hexdigits),
        None,
    )


def _tiktoken_cache_file(encoding: str) -> str | None:
    """Where tiktoken would find ``encoding`` offline, or None if it would download it."""
    consts = _tiktoken_constants(encoding)
    url = next((c for c in consts if c.startswith("http")), None)
    if url is None:
        return None
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    return path if os.path.exists(path) else None


def _check_tiktoken_cache(encoding: str, path: str) -> None:
    """Refuse a cached table tiktoken would reject: it would delete it and download again."""
    expected = _tiktoken_expected_sha256(encoding)
    if expected is None:
        return
    with open(path, "rb") as f:
        actual = hashlib.sha256(f.read()).hexdigest()
    if actual != expected:
        msg = (
            f"tiktoken's cached table for {encoding!r} at {path} is corrupt (sha256 {actual}, "
            f"expected {expected}); tiktoken would download it again and glyphfold never "
            "downloads at run time: replace the file, or use BpeCounter"
        )
        raise TokenizerUnavailableError(msg)


class TiktokenCounter:
    """Exact OpenAI token counts via tiktoken (optional extra ``glyphfold[tiktoken]``).

    tiktoken's wheel does not contain the BPE tables; it downloads them on first
    use. glyphfold never downloads at run time: the encoding must already be in
    tiktoken's cache (``TIKTOKEN_CACHE_DIR``), else TokenizerUnavailableError
    says how to provide it.
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        try:
            import tiktoken
            import tiktoken.registry
        except ImportError as exc:
            msg = "TiktokenCounter needs tiktoken: pip install 'glyphfold[tiktoken]'"
            raise TokenizerUnavailableError(msg) from exc
        if encoding not in tiktoken.list_encoding_names():
            msg = f"unknown tiktoken encoding {encoding!r}; valid: {tiktoken.list_encoding_names()}"
            raise InputError(msg)
        path = _tiktoken_cache_file(encoding)
        if path is None:
            msg = (
                f"tiktoken encoding {encoding!r} is not available offline and glyphfold never "
                "downloads at run time; load it once with network access "
                f"(python -c \"import tiktoken; tiktoken.get_encoding('{encoding}')\") "
                "with TIKTOKEN_CACHE_DIR set to a persistent directory, then set the same "
                "TIKTOKEN_CACHE_DIR here, or use BpeCounter (same counts, no download: "
                "pip install 'glyphfold[tokenizer]') or HeuristicCounter"
            )
            raise TokenizerUnavailableError(msg)
        # once loaded in this process tiktoken does not read the file again
        if encoding not in getattr(tiktoken.registry, "ENCODINGS", {}):
            _check_tiktoken_cache(encoding, path)
        self._enc = tiktoken.get_encoding(encoding)
        self.encoding = encoding

    def count(self, text: str) -> int:
        """Exact token count (special tokens counted as plain text)."""
        return len(self._enc.encode(text, disallowed_special=()))


# OpenAI encodings whose tables are compiled into bpe-openai's extension. Its
# get_encoding also knows r50k/p50k/gpt2, but those go through tiktoken and download.
BPE_ENCODINGS = ("o200k_base", "cl100k_base")


_BINDINGS = "bpe_openai._bindings"
_bindings_lock = threading.Lock()


def _bpe_bindings() -> Any:
    """bpe-openai's compiled tokenizer module, loaded without running bpe_openai/__init__.

    That __init__ eagerly parses all three of the package's BPE tables into Python
    dicts for its tiktoken-style wrapper (~1.4 s, ~60 MB); counting needs only the
    Rust extension (~0.1 s). The module is registered under its own name, so a later
    ``import bpe_openai`` shares it. Unusual layouts fall back to a plain import.
    """
    with _bindings_lock:
        module = sys.modules.get(_BINDINGS)
        if module is not None:
            return module
        try:
            spec = importlib.util.find_spec("bpe_openai")
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            msg = "BpeCounter needs bpe-openai: pip install 'glyphfold[tokenizer]'"
            raise TokenizerUnavailableError(msg)
        for folder in spec.submodule_search_locations or ():
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_bindings" + suffix)
                if not os.path.isfile(path):
                    continue
                loader = importlib.machinery.ExtensionFileLoader(_BINDINGS, path)
                ext_spec = importlib.util.spec_from_file_location(_BINDINGS, path, loader=loader)
                if ext_spec is None:
                    continue
                try:
                    module = importlib.util.module_from_spec(ext_spec)
                    loader.exec_module(module)
                except ImportError as exc:
                    msg = f"BpeCounter could not load {path} ({exc}): reinstall bpe-openai"
                    raise TokenizerUnavailableError(msg) from exc
                sys.modules[_BINDINGS] = module
                parent = sys.modules.get("bpe_openai")
                if parent is not None:
                    parent._bindings = module  # type: ignore[attr-defined]
                return module
    try:
        return importlib.import_module(_BINDINGS)
    except ImportError as exc:
        msg = f"BpeCounter could not load bpe-openai's tokenizer ({exc}): reinstall it"
        raise TokenizerUnavailableError(msg) from exc


def _utf8_len(text: str) -> int:
    """UTF-8 size of ``text``; a lone surrogate (JS tools cut strings mid-pair) counts 3
    bytes, as the U+FFFD a tokenizer makes of it, instead of raising UnicodeEncodeError."""
    if text.isascii():  # one byte a character (a flag of the string: no scan)
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _utf8_safe(text: str) -> str:
    """Lone surrogates become U+FFFD, as tiktoken does before it encodes."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class BpeCounter:
    """Exact OpenAI token counts, offline (optional extra ``glyphfold[tokenizer]``).

    Backed by the bpe-openai package (GitHub's Rust ``bpe-openai`` crate): the
    BPE tables ship inside its wheel, so nothing is downloaded, ever. Counts
    equal ``len(tiktoken.get_encoding(encoding).encode(text, disallowed_special=()))``.
    """

    __slots__ = ("_tokenizer", "encoding")

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in BPE_ENCODINGS:
            msg = f"unknown bpe-openai encoding {encoding!r}; valid: {list(BPE_ENCODINGS)}"
            raise InputError(msg)
        # The compiled tokenizer, not bpe_openai.get_encoding(): that wrapper builds
        # a 200k-entry decode table per call (~0.05 s) and refuses texts of 1M chars
        # or 200k tokens, which a long tool result can exceed; count() has no limit.
        make = getattr(_bpe_bindings(), "tokenizer_for_encoding", None)
        if make is None:
            msg = (
                "this bpe-openai has no bpe_openai._bindings.tokenizer_for_encoding; "
                "install a compatible one: pip install 'glyphfold[tokenizer]'"
            )
            raise TokenizerUnavailableError(msg)
        self._tokenizer = make(encoding)
        self.encoding = encoding

    def __repr__(self) -> str:
        return f"BpeCounter({self.encoding!r})"

    def count(self, text: str) -> int:
        """Exact token count (special tokens counted as plain text)."""
        try:
            n: int = self._tokenizer.count(text)
        except UnicodeEncodeError:
            n = self._tokenizer.count(_utf8_safe(text))
        return n


_HEURISTIC = HeuristicCounter()


# --------------------------------------------------------------------------- images


def image_tokens(image: Image, *, profile: ProfileArg = DEFAULT_PROFILE) -> int:
    """What the provider bills for one image (profile pricing; fixed cost when size unknown)."""
    prof = get_profile(profile)
    if not getattr(prof, "vision", True):
        name = getattr(prof, "name", prof)
        msg = (
            f"the history holds an image but profile {name!r} has no vision: strip the images "
            "first (the ladder's image rung does) or price them with a vision profile"
        )
        raise InputError(msg)
    if image.width and image.height:
        return int(prof.cost(image.width, image.height))
    # Unknown size (a URL): assume the largest page the provider takes without
    # downscaling, i.e. the most a single image can cost there.
    return int(prof.cost(prof.max_page_width, prof.max_page_height))


# --------------------------------------------------------------------------- messages


# one encoder: json.dumps(..., separators=...) would build a new one per call
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
# a str as _encode writes it (quoted, escaped; ensure_ascii=False)
_json_string = encode_basestring


def _unknown_text(b: Unknown) -> str:
    try:
        return _encode(b.raw)
    except (TypeError, ValueError):
        return str(b.raw)


# Keys of a wire dict the estimate prices already (text, calls, images, results) or
# that the per-message framing covers (role, ids). Every other key is sent as it is
# and priced by its JSON size, except glyphfold's own key, stripped before sending
# (``provider_messages``).
_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", X_KEY})
_TEXT_KEYS = frozenset({"type", "text"})
_IMAGE_KEYS = frozenset({"type", "image_url", "source"})
_OPENAI_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})
_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error"})


def unpriced_keys(message: Message) -> list[str]:
    """The keys the estimate would otherwise miss, as ``"key":value`` JSON fragments.

    A wire dict can carry any key (``name``, provider extensions, a client's own
    data); all of them are sent, so all of them cost. Unknown blocks are priced
    whole elsewhere; these are the extra keys of the message and of its known
    blocks. Empty (and cheap to find out) for the usual message.
    """
    own = unpriced_keys_of(message)  # Responses, Gemini, Bedrock: their own key sets
    if own is not None:
        return own(message)
    out: list[str] = []
    extra_keys(out, message.raw, _MESSAGE_KEYS)
    for b in message.blocks:
        tb = type(b)
        raw = b.raw
        if tb is Text:
            extra_keys(out, raw, _TEXT_KEYS)
        elif tb is ToolCall and isinstance(raw, Mapping):
            if "function" in raw:  # OpenAI: {"id", "type", "function": {"name", "arguments"}}
                extra_keys(out, raw, _OPENAI_CALL_KEYS)
                extra_keys(out, raw["function"], _FUNCTION_KEYS)
            else:
                extra_keys(out, raw, _TOOL_USE_KEYS)
        elif type(b) is ToolResult:
            extra_keys(out, raw, _RESULT_KEYS)
            for x in b.content:
                if type(x) is Text or type(x) is Image:
                    extra_keys(out, x.raw, _TEXT_KEYS if type(x) is Text else _IMAGE_KEYS)
        elif tb is Image:
            extra_keys(out, raw, _IMAGE_KEYS)
    return out


def _call_text(b: ToolCall) -> str:
    args = b.arguments
    if type(args) is not str:
        try:
            args = _encode(args)
        except (TypeError, ValueError):
            args = str(args)
    return b.name + args


def _call_chars(b: ToolCall) -> int:
    """``len(_call_text(b))`` without building it: a JSON string as it is, an object of
    string values by the lengths of its escaped keys and values (the usual tool input)."""
    args = b.arguments
    if type(args) is str:
        return len(b.name) + len(args)
    if type(args) is dict:
        n = len(b.name) + 1 + len(args) if args else len(b.name) + 2  # braces, commas
        for k, v in args.items():
            if type(k) is not str or type(v) is not str:
                return len(_call_text(b))
            n += len(_json_string(k)) + 1 + len(_json_string(v))  # "k":"v"
        return n
    return len(_call_text(b))


def estimate_message_tokens(
    message: Message,
    *,
    images_sent: bool,
    tool_results_by_bytes: bool,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
) -> int:
    """Tokens of one message: 4 framing + its text, images priced only if sent.

    ``tool_results_by_bytes`` costs tool-result text by its UTF-8 byte size
    (older tool results, SPEC §3.4) when the heuristic counter is used.
    """
    c = counter or _HEURISTIC
    cpt = c.chars_per_token if isinstance(c, HeuristicCounter) else 0
    heuristic = cpt > 0
    total = FRAMING_TOKENS
    chars = 0  # heuristic: sum first, round once per message
    # a "[Tool results]" user message is a tool result written as text
    text_bytes = tool_results_by_bytes and _is_bracket_results(message)
    for b in message.blocks:
        if isinstance(b, Text):
            if heuristic and text_bytes:
                chars += _utf8_len(b.text)
            elif heuristic:
                chars += len(b.text)
            else:
                total += c.count(b.text)
        elif isinstance(b, ToolResult):
            for x in b.content:
                if isinstance(x, Text):
                    if heuristic:
                        chars += _utf8_len(x.text) if tool_results_by_bytes else len(x.text)
                    else:
                        total += c.count(x.text)
                elif isinstance(x, Image):
                    if images_sent:
                        total += image_tokens(x, profile=profile)
                elif isinstance(x, Unknown):
                    s = _unknown_text(x)
                    total += -(-len(s) // cpt) if heuristic else c.count(s)
        elif isinstance(b, Image):
            if images_sent:
                total += image_tokens(b, profile=profile)
        elif isinstance(b, ToolCall | Unknown):
            if heuristic:
                chars += _call_chars(b) if isinstance(b, ToolCall) else len(_unknown_text(b))
            else:
                total += c.count(_call_text(b) if isinstance(b, ToolCall) else _unknown_text(b))
    extra = unpriced_keys(message)
    if extra:
        if heuristic:
            chars += sum(map(len, extra))
        else:
            total += c.count(",".join(extra))
    if chars:
        total += -(-chars // cpt)
    return total


@dataclass(frozen=True, slots=True)
class TokenCosts:
    """Per-message token estimates: ``system`` (a top-level system prompt), one per message,
    and ``envelope``: the request's other keys that reach the model (tool schemas)."""

    system: int
    messages: tuple[int, ...]
    envelope: int = 0

    @property
    def total(self) -> int:
        """The whole history's estimate."""
        return self.system + sum(self.messages) + self.envelope


def _is_bracket_results(m: Message) -> bool:
    blocks = m.blocks
    return (
        m.role == "user"
        and bool(blocks)
        and type(blocks[0]) is Text
        and blocks[0].text.startswith(TOOL_RESULTS_PREFIX)
    )


def _text_units(m: Message, by_bytes: bool) -> int:
    """Heuristic fast path: character units of a message without images or unknown blocks.

    Returns -1 when the message holds anything else, keys the estimate does not
    otherwise price included (then estimate_message_tokens prices it); for the rest
    the result equals estimate_message_tokens exactly. The key checks are C-level
    subset tests: the usual message pays a few of them.
    """
    raw = m.raw
    if raw is not None and not _MESSAGE_KEYS.issuperset(raw):
        return -1
    n = 0
    for b in m.blocks:
        r = b.raw
        if type(b) is Text:
            if r is not None and not _TEXT_KEYS.issuperset(r):
                return -1
            n += len(b.text)
        elif type(b) is ToolCall:
            if r is not None:
                fn = r.get("function")  # OpenAI {"id", "type", "function"}, else tool_use
                if fn is None:
                    if not _TOOL_USE_KEYS.issuperset(r):
                        return -1
                elif not (
                    type(fn) is dict
                    and _OPENAI_CALL_KEYS.issuperset(r)
                    and _FUNCTION_KEYS.issuperset(fn)
                ):
                    return -1
            n += _call_chars(b)
        elif type(b) is ToolResult:
            if r is not None and not _RESULT_KEYS.issuperset(r):
                return -1
            for x in b.content:
                if type(x) is not Text or (x.raw is not None and not _TEXT_KEYS.issuperset(x.raw)):
                    return -1
                n += _utf8_len(x.text) if by_bytes else len(x.text)
        else:
            return -1
    return n


def token_costs(
    history: Any,
    *,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    segmentation: Segmentation | None = None,
    format: FormatArg = "auto",
) -> TokenCosts:
    """Per-message estimates of a history (wire or canonical), as SPEC §3.4 prices them.

    ``segmentation`` is the history's turn segmentation when the caller has it already.
    ``format`` names the wire format (docs/wire-formats.md; default: detected).
    """
    get_profile(profile)  # an unknown profile fails here, as in compact(), not only on images
    # plain text prices alike in every format: read it as the profile's, else OpenAI
    h, _ = coerce(history, format=format, plain=plain_format(profile) or OPENAI)
    check_choice("image_policy", image_policy, IMAGE_POLICIES)
    if counter is not None and not isinstance(counter, TokenCounter):
        msg = f"counter must have a count(text) -> int method, got {type(counter).__name__}"
        raise InputError(msg)
    c = counter or _HEURISTIC
    # exactly the heuristic (a subclass may count differently): the fast path applies
    cpt = 0
    if type(c) is HeuristicCounter and isinstance(c, HeuristicCounter):
        cpt = c.chars_per_token
    heuristic = cpt > 0
    seg = segmentation if segmentation is not None else segment_turns(h)
    # the current user turn: the newest one (everything, if there is no turn yet)
    current_from = seg.turns[-1].start if seg.turns else 0
    spec = image_policy == "spec"
    # the provider drops everything before a server-side compaction block
    barrier = compaction_barrier(h.messages)
    skip_to, skip_blocks = barrier if barrier is not None else (0, 0)
    out: list[int] = []
    append = out.append
    for i, m in enumerate(h.messages):
        if i < skip_to:
            append(0)
            continue
        old_turn = i < current_from
        if (i == skip_to and skip_blocks) or (old_turn and any(map(is_thinking_block, m.blocks))):
            # earlier turns' thinking is stripped by the provider: it costs nothing
            blocks = m.blocks[skip_blocks:] if i == skip_to else m.blocks
            m = dataclasses.replace(m, blocks=without_thinking(blocks) if old_turn else blocks)
        if heuristic and not (old_turn and m.role == "user" and _is_bracket_results(m)):
            # most messages hold text, calls and text results only: 4 + ceil(units / 4)
            n = _text_units(m, old_turn)
            if n >= 0:
                append(FRAMING_TOKENS + -(-n // cpt))
                continue
        is_result = m.role == "tool" or _is_bracket_results(m)
        if not is_result:
            for b in m.blocks:
                if type(b) is ToolResult:
                    is_result = True
                    break
        old_result = is_result and i < current_from
        if not spec:
            sent = True
        elif is_result:
            sent = not old_result
        else:
            sent = m.role == "user"
        append(
            estimate_message_tokens(
                m,
                images_sent=sent,
                tool_results_by_bytes=old_result,
                profile=profile,
                counter=c,
            )
        )
    system = 0
    if h.system is not None:
        system = FRAMING_TOKENS + c.count(h.system_text)
    return TokenCosts(system, tuple(out), envelope_tokens(h, counter=c))


def envelope_tokens(history: History, *, counter: TokenCounter | None = None) -> int:
    """What the request keys beside the messages cost: tool schemas and tool configuration
    (the format's ``context_keys``), priced as their JSON text. Sent, so billed (SPEC §3.3)."""
    if not history.extra:
        return 0
    c = counter or _HEURISTIC
    total = 0
    for key in wire_format(history.format).context_keys:
        value = history.extra.get(key)
        if value is None:
            continue
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        total += FRAMING_TOKENS + c.count(text)
    return total


def estimate_history_tokens(
    history: Any,
    *,
    profile: ProfileArg = DEFAULT_PROFILE,
    counter: TokenCounter | None = None,
    image_policy: str = DEFAULT_IMAGE_POLICY,
    format: FormatArg = "auto",
) -> int:
    """Estimate the tokens of a history (docs/budget.md): ~4 chars/token + 4 per message.

    ``profile`` (a name or a Profile from ``glyphfold.render.profiles``) prices
    images and is checked even when the history holds none (``UnknownProfileError``);
    ``counter`` replaces the 4-chars heuristic with an exact tokenizer;
    ``image_policy`` is ``"spec"`` (docs/budget.md) or ``"all"`` (every image billed);
    ``format`` names the wire format (docs/wire-formats.md; default: detected).
    """
    costs = token_costs(
        history, profile=profile, counter=counter, image_policy=image_policy, format=format
    )
    return costs.total


def count_texts(texts: Sequence[str], *, counter: TokenCounter | None = None) -> int:
    """Sum the tokens of several texts (prompt overhead: system + context + tool prompt)."""
    c = counter or _HEURISTIC
    return sum(c.count(t) for t in texts if t)
