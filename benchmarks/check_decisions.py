"""Digest of the ladder's decisions, to check that a speed change changes none (issue 22).

Run from a tree: ``PYTHONPATH=TREE python benchmarks/check_decisions.py OUT.json
[--sizes 300,1000,3000] [--real DIR]``; then compare two trees' files:
``python benchmarks/check_decisions.py --diff A.json B.json`` (exit 1 on a difference).

For every real session (``compact`` at 50% and 20% of its estimate and ``recover``) and
every synthetic size (``compact`` to 16k tokens, the history of ``bench_compact.py``) it
records a digest of the output messages, of every page's PNG, of the ledger and the
tokens: the same digests before and after a change mean the same decisions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any


def _digest(obj: Any) -> str:
    data = json.dumps(obj, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def outcome(result: Any) -> dict[str, Any]:
    """The digests of one result: messages, pages, ledger, tokens."""
    ledger = [
        (
            e.rung,
            e.tokens_before,
            e.tokens_after,
            e.note,
            repr(e.removed),
            repr(e.pages),
            repr(e.extra),
        )
        for e in result.ledger
    ]
    pages = hashlib.sha256(b"".join(p.png for p in result.pages)).hexdigest()[:16]
    return {
        "messages": _digest(result.messages),
        "pages": f"{len(result.pages)}:{pages}",
        "ledger": _digest(ledger),
        "tokens": [result.tokens_before, result.tokens_after],
    }


def collect(sizes: list[int], real: Path | None) -> dict[str, Any]:
    import glyphfold
    from glyphfold.compaction.history.tokens import estimate_history_tokens

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_compact import SYNTH  # the benchmark's own synthetic history
    from bench_real_sessions import load_sessions

    ns: dict[str, Any] = {}
    exec(SYNTH, ns)  # the benchmark's own generator, a constant of this repo
    out: dict[str, Any] = {}
    for n in sizes:
        out[f"synth-{n}"] = outcome(glyphfold.compact(ns["synth"](n), budget=16000))
    for name, h in load_sessions([real]) if real is not None and real.is_dir() else []:
        est = estimate_history_tokens(h)
        for label, call in (
            ("c50", lambda h=h, est=est: glyphfold.compact(h, budget=max(1, est // 2))),
            ("c20", lambda h=h, est=est: glyphfold.compact(h, budget=max(1, est // 5))),
            ("rec", lambda h=h: glyphfold.recover(h)),
        ):
            try:
                out[f"{name}/{label}"] = outcome(call())
            except glyphfold.GlyphfoldError as exc:
                out[f"{name}/{label}"] = {"raised": f"{type(exc).__name__}: {exc}"}
    return out


def diff(a: Path, b: Path) -> int:
    x, y = json.loads(a.read_text()), json.loads(b.read_text())
    bad = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    for k in bad[:20]:
        print(f"DIFFERENT {k}: {x.get(k)} != {y.get(k)}")
    print(f"{len(x)} / {len(y)} outcomes, {len(bad)} different")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--sizes", default="300,1000,3000")
    ap.add_argument("--real", type=Path, default=Path("/work/shared/realdata"))
    ap.add_argument("--diff", type=Path, nargs=2, default=None)
    args = ap.parse_args(argv)
    if args.diff is not None:
        return diff(*args.diff)
    if args.out is None:
        ap.error("give OUT.json (or --diff A.json B.json)")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    got = collect(sizes, args.real)
    args.out.write_text(json.dumps(got, indent=0, sort_keys=True))
    print(f"{len(got)} outcomes -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
