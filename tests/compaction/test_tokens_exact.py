"""Exact token counters (SPEC §3.4's TokenCounter): BpeCounter and TiktokenCounter, offline.

tiktoken downloads its BPE tables; bpe-openai compiles the same tables into its
wheel. The fixture below writes tiktoken's cache file from bpe-openai's table and
shows it is byte-identical to OpenAI's published file (tiktoken's own sha256
check), so TiktokenCounter is tested for real, with the network blocked.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import subprocess
import sys
import textwrap
import warnings
from functools import cache

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry
import tiktoken_ext.openai_public as openai_public
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import glyphfold
from glyphfold.compaction.history.tokens import (
    BPE_ENCODINGS,
    BpeCounter,
    HeuristicCounter,
    TiktokenCounter,
    TokenCounter,
    estimate_history_tokens,
    token_costs,
)
from glyphfold.errors import InputError, TokenizerUnavailableError


@cache
def _bpe_encoding(name: str):
    """bpe-openai's tiktoken-style Encoding (its token table and ids, for cross-checks)."""
    with warnings.catch_warnings():
        # importing bpe_openai reads its tables through a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        return bpe_openai.get_encoding(name)


CORPUS = [
    # English prose
    "The quick brown fox jumps over the lazy dog. It wasn't THAT lazy, we'd say.",
    # code
    'def f(x: int) -> int:\n    """Double."""\n    return x * 2  # why not\n\n\n\tpass\r\n',
    "for (let i = 0; i < n; i++) { console.log(`${i}`); }  // 0x1F3A9 ==> ok",
    # CJK
    "日本語のテキストです。中文测试：上下文窗口。한국어 문장도 있습니다.",
    # emoji, incl. ZWJ sequences and flags
    "emoji 👩\u200d👩\u200d👧\u200d👦🎉🇫🇷 ok 👍🏽",
    # JSON tool result with ids
    json.dumps(
        {
            "id": "call_9f8e7d6c5b4a",
            "uuid": "123e4567-e89b-12d3-a456-426614174000",
            "rows": [1, 22, 333, 4444, 55555],
            "ok": True,
            "name": "Zoë",
        },
        ensure_ascii=False,
    ),
    json.dumps({"nested": {"a": [None, 1.5e-3, "ü"]}}, indent=2),
    # whitespace edge cases the pre-tokenizer regexes treat specially
    "   trailing   \n\n  ",
    "\t\t\r\n\r\n  a  \n",
    " " * 300 + "b",
    # special-token text is counted as plain text, not as one special token
    "before <|endoftext|> after <|endofprompt|>",
    # accents, combining marks, titlecase, digits
    "ÀÉÎ õ ḿ ǅ e\u0301\u0300 Ǆungla",
    "1234567890 3.14159 1,000,000",
    "a" * 2000,
    "",
]


@cache
def _published(name: str) -> tuple[str, str]:
    """The (url, sha256) tiktoken loads ``name`` from, read off tiktoken's own constructor."""
    seen: list[tuple[str, str]] = []

    def record(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen.append((url, expected_hash or ""))
        return {}

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = record
    try:
        getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    assert len(seen) == 1
    return seen[0]


@cache
def _table_from_bpe_openai(name: str) -> bytes:
    """tiktoken's ``.tiktoken`` format (base64 token bytes, space, rank) from bpe-openai."""
    enc = _bpe_encoding(name)
    return b"".join(
        base64.b64encode(token) + b" %d\n" % rank
        for rank, token in enumerate(enc.token_byte_values())
        if token and not enc.is_special_token(rank)
    )


@cache
def _bpe_counter(name: str) -> BpeCounter:
    return BpeCounter(name)


def _tiktoken_cache_impl(tmp_path, monkeypatch):
    """Point tiktoken at a cache built from bpe-openai; any download attempt fails."""

    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to download {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    for name in BPE_ENCODINGS:
        url, _ = _published(name)
        (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(
            _table_from_bpe_openai(name)
        )
        # make tiktoken really read our file in this test, not a table loaded earlier
        monkeypatch.delitem(tiktoken.registry.ENCODINGS, name, raising=False)
    yield TiktokenCounter("o200k_base")


@pytest.fixture
def tiktoken_cache(tmp_path, monkeypatch):
    """A TIKTOKEN_CACHE_DIR built from bpe-openai, for one test."""
    yield from _tiktoken_cache_impl(tmp_path, monkeypatch)


@pytest.mark.parametrize("name", BPE_ENCODINGS)
def test_bpe_openai_table_is_byte_identical_to_the_published_file(name):
    """The generated cache file has the sha256 tiktoken expects of OpenAI's download."""
    url, expected_sha256 = _published(name)
    assert url.endswith(f"/{name}.tiktoken")
    assert len(expected_sha256) == 64
    assert hashlib.sha256(_table_from_bpe_openai(name)).hexdigest() == expected_sha256


@pytest.mark.parametrize("name", BPE_ENCODINGS)
def test_tiktoken_counter_works_offline_and_agrees_with_bpe_counter(tiktoken_cache, name):
    """TiktokenCounter loads the generated cache (hash-checked, no network); same counts."""
    tik = TiktokenCounter(name)
    bpe = BpeCounter(name)
    tik_enc = tiktoken.get_encoding(name)
    bpe_enc = _bpe_encoding(name)
    assert tik_enc.n_vocab == bpe_enc.n_vocab
    for text in CORPUS:
        ids = tik_enc.encode(text, disallowed_special=())
        # the same token ids, not only the same number of them
        assert bpe_enc.encode_ordinary(text) == ids, text
        assert tik.count(text) == bpe.count(text) == len(ids), text
        assert tik_enc.decode(ids) == text


def test_tiktoken_counter_refuses_a_corrupt_cache(tmp_path, monkeypatch):
    """A table tiktoken would reject (and re-download) is refused up front, file untouched."""

    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to download {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "o200k_base", raising=False)
    url, expected = _published("o200k_base")
    path = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    truncated = _table_from_bpe_openai("o200k_base")[:-100]
    path.write_bytes(truncated)
    with pytest.raises(TokenizerUnavailableError, match=f"corrupt .*expected {expected}"):
        TiktokenCounter("o200k_base")
    assert path.read_bytes() == truncated


def test_known_counts_cross_checked(tiktoken_cache):
    """Fixed strings whose o200k_base pieces both libraries agree on, piece by piece."""
    tik_enc = tiktoken.get_encoding("o200k_base")
    bpe_enc = _bpe_encoding("o200k_base")
    tik, bpe = TiktokenCounter("o200k_base"), BpeCounter("o200k_base")
    cases = {
        "hello world": [b"hello", b" world"],
        "Hello, world!": [b"Hello", b",", b" world", b"!"],
        # digits are split in runs of at most three
        "1234567": [b"123", b"456", b"7"],
        # special-token text as plain text: ordinary pieces, not id 199999
        # ("<|" is one pre-token, but not a token of o200k_base)
        "<|endoftext|>": [b"<", b"|", b"end", b"of", b"text", b"|", b">"],
    }
    for text, pieces in cases.items():
        tik_ids = tik_enc.encode(text, disallowed_special=())
        assert tik_enc.decode_tokens_bytes(tik_ids) == pieces, text
        assert bpe_enc.decode_tokens_bytes(bpe_enc.encode_ordinary(text)) == pieces, text
        assert tik.count(text) == bpe.count(text) == len(pieces), text
    assert tik_enc.eot_token == bpe_enc.eot_token == 199999
    assert 199999 not in tik_enc.encode("<|endoftext|>", disallowed_special=())


def test_lone_surrogates_and_huge_texts_count_like_tiktoken(tiktoken_cache):
    """Surrogates become U+FFFD as in tiktoken; texts past bpe_openai.encode's limits count."""
    tik, bpe = TiktokenCounter("o200k_base"), BpeCounter("o200k_base")
    for text in ["a\ud800b", "\udfff", "x\ud83d\ude00y"]:
        assert bpe.count(text) == tik.count(text) > 0
    # bpe_openai's Python encode() refuses >= 1M chars or > 200k tokens: a long tool
    # result must still count
    huge = "The quick brown fox, 12345 times. 日本語 👍\n" * 30_000
    assert len(huge) > 1_000_000
    with pytest.raises(ValueError):
        _bpe_encoding("o200k_base").encode_ordinary(huge)
    assert bpe.count(huge) == tik.count(huge) > 200_000


@pytest.fixture(scope="module")
def tiktoken_o200k(tmp_path_factory):
    """One TiktokenCounter for a module (hypothesis examples must not rebuild the table)."""
    with pytest.MonkeyPatch.context() as mp:
        yield from _tiktoken_cache_impl(tmp_path_factory.mktemp("tiktoken-cache"), mp)


# any code point, lone surrogates too (st.characters() leaves them out by default)
_ANY_CHAR = st.one_of(
    st.characters(),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(_ANY_CHAR, max_size=200))
def test_counters_agree_on_any_text(tiktoken_o200k, text):
    """Property: BpeCounter == TiktokenCounter on arbitrary unicode, surrogates included."""
    assert _bpe_counter("o200k_base").count(text) == tiktoken_o200k.count(text)


def test_bpe_counter_errors_and_export(monkeypatch):
    """Unknown encodings are InputError; a missing package is TokenizerUnavailableError."""
    assert glyphfold.BpeCounter is BpeCounter
    counter = BpeCounter()
    assert counter.encoding == "o200k_base"
    assert isinstance(counter, TokenCounter)
    assert repr(counter) == "BpeCounter('o200k_base')"
    with pytest.raises(InputError, match="unknown bpe-openai encoding 'nope_base'"):
        BpeCounter("nope_base")
    # bpe_openai.get_encoding knows r50k_base but fetches it through tiktoken: refused
    with pytest.raises(InputError, match="valid: \\['o200k_base', 'cl100k_base'\\]"):
        BpeCounter("r50k_base")
    monkeypatch.setitem(sys.modules, "bpe_openai", None)
    monkeypatch.setitem(sys.modules, "bpe_openai._bindings", None)
    with pytest.raises(TokenizerUnavailableError, match=r"glyphfold\[tokenizer\]"):
        BpeCounter()


def _openai_history() -> list[dict]:
    args = {"path": "/srv/app/config.json", "id": "3f2a9c7e-1b4d-4e8f-9a6b-0c5d7e1f2a3b"}
    return [
        {"role": "system", "content": "You are a terse coding agent. 你好."},
        {"role": "user", "content": "Read the config, please 🙏"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps(args)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": CORPUS[5]},
        {"role": "assistant", "content": "Done: 0x7f3a9c2e, 0xdeadbeef, 日本語."},
        {"role": "user", "content": "Thanks! Next: 1234567890?"},
    ]


def test_exact_counter_in_estimate_history_tokens(tiktoken_cache):
    """SPEC §3.4 with a plugged counter: 4 framing per message + exact tokens of each text."""
    wire = _openai_history()
    before = copy.deepcopy(wire)
    enc = tiktoken.get_encoding("o200k_base")

    def n(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    call = wire[2]["tool_calls"][0]["function"]
    texts = [
        wire[0]["content"],
        wire[1]["content"],
        call["name"] + call["arguments"],  # a call costs its name + arguments
        wire[3]["content"],  # older tool result: by the counter, not by bytes
        wire[4]["content"],
        wire[5]["content"],
    ]
    expected = sum(4 + n(t) for t in texts)
    for counter in (BpeCounter(), TiktokenCounter()):
        assert estimate_history_tokens(wire, counter=counter) == expected
        costs = token_costs(wire, counter=counter)
        assert costs.messages == tuple(4 + n(t) for t in texts)
    assert wire == before  # never mutated
    heuristic = estimate_history_tokens(wire)
    assert heuristic == estimate_history_tokens(wire, counter=HeuristicCounter())
    # hex ids, UUIDs, CJK and emoji cost more than 4 chars per token would say
    assert expected != heuristic
    cl100k = estimate_history_tokens(wire, counter=BpeCounter("cl100k_base"))
    assert cl100k == sum(4 + TiktokenCounter("cl100k_base").count(t) for t in texts)
    assert cl100k != expected  # the encoding matters: o200k_base is not cl100k_base


def test_exact_counter_prices_anthropic_system_and_blocks():
    """Anthropic format: top-level system costs 4 + its tokens; tool_use costs name + input."""
    counter = BpeCounter()
    history = {
        "system": "Be brief. Всегда.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "List /tmp ✨"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "tu_1", "name": "ls", "input": {"dir": "/tmp"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "a.txt\nb.log\n"}
                ],
            },
        ],
    }
    costs = token_costs(history, counter=counter)
    assert costs.system == 4 + counter.count("Be brief. Всегда.")
    assert costs.messages == (
        4 + counter.count("List /tmp ✨"),
        4 + counter.count('ls{"dir":"/tmp"}'),
        4 + counter.count("a.txt\nb.log\n"),
    )
    assert estimate_history_tokens(history, counter=counter) == costs.total


def test_bpe_counter_loads_only_the_compiled_tokenizer():
    """BpeCounter skips bpe_openai/__init__ (it parses three BPE tables); the package works after.

    In a fresh interpreter, since this module has imported bpe_openai already.
    """
    code = textwrap.dedent(
        """
        import sys
        from glyphfold.compaction.history.tokens import BpeCounter

        counter = BpeCounter("cl100k_base")
        assert "bpe_openai" not in sys.modules, sorted(m for m in sys.modules if "bpe" in m)
        import bpe_openai

        enc = bpe_openai.get_encoding("cl100k_base")
        # one extension module, shared: the package did not load a second copy
        assert type(enc._backend) is type(counter._tokenizer)
        text = "Shared tokenizer, 12345 ✓"
        assert counter.count(text) == len(enc.encode_ordinary(text)) > 0
        print("ok")
        """
    )
    run = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
