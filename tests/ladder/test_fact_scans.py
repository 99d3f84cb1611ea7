"""A text's factsheet scan is read once and shared by every cap (issue 22).

The planner prices a run's factsheet, the build extracts the facts of the same text
with four times wider caps (the identifiers of words cut to fit): at 10^5 messages
that was three reads of a 100M-char text. A shared scan must give exactly what a
fresh read gives, whatever the order the caps are asked in.
"""

from __future__ import annotations

import random

import pytest

from glyphfold.compaction.ladder.rungs.snapshot.factsheet import (
    CHUNK_CHARS,
    FactScans,
    FactsheetConfig,
    extract_facts,
    run_facts,
)


def _text(n_lines: int, seed: int = 3) -> str:
    rnd = random.Random(seed)
    words = ["the", "of", "and", "to", "file", "error", "value", "result", "path", "data", "call"]
    lines = []
    for i in range(n_lines):
        ws = [rnd.choice(words) for _ in range(12)]
        k = rnd.random()
        if k < 0.05:
            ws.append(f"{rnd.getrandbits(40):010x}")  # a hex id
        elif k < 0.08:
            ws.append(f"/srv/app/mod{rnd.randrange(400)}/file{i % 97}.py")
        elif k < 0.09:
            ws.append(f"HTTP {rnd.choice((200, 404, 500))}")
        lines.append(" ".join(ws))
    return "\n".join(lines)


CAPS = [
    FactsheetConfig(),
    FactsheetConfig(max_items=5, max_chars=60),
    FactsheetConfig(max_items=480, max_chars=12000),
    FactsheetConfig(max_items=0),
    FactsheetConfig(max_chars=0),
    FactsheetConfig(max_items=40, max_chars=100_000, min_len=6),
    FactsheetConfig(kinds=("path", "hex")),
]


@pytest.mark.parametrize("order", [1, -1])
def test_shared_scan_equals_fresh_reads(order: int) -> None:
    text = _text(12_000)
    assert len(text) > 5 * CHUNK_CHARS  # several chunks: reading stops part way
    scans = FactScans()
    for cfg in CAPS[::order]:
        assert extract_facts(text, config=cfg, scans=scans) == extract_facts(text, config=cfg)


def test_run_facts_with_a_shared_scan() -> None:
    source = _text(8_000, seed=5)
    text = source[len(source) // 2 :]  # the pages hold the newer half: the rest was cut
    scans = FactScans()
    cfg = FactsheetConfig(max_items=30, max_chars=800)
    priced = extract_facts(source, config=cfg, scans=scans)  # what the planner reads
    assert priced == extract_facts(source, config=cfg)
    assert run_facts(text, source, config=cfg, scans=scans) == run_facts(text, source, config=cfg)
    assert any(f.off_page for f in run_facts(text, source, config=cfg, scans=scans))


def test_empty_and_factless_texts() -> None:
    scans = FactScans()
    assert extract_facts("", scans=scans) == []
    plain = "just some words\n" * 20_000  # no fact: read to the end once
    assert extract_facts(plain, scans=scans) == []
    assert extract_facts(plain, config=CAPS[2], scans=scans) == []
