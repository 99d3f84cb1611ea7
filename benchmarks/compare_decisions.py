"""Are two glyphfold trees' decisions identical? (issue 22: speed without changing a plan)

Run: ``python benchmarks/compare_decisions.py [--baseline DIR] [--real DIR] [--out F]``.
Each tree (this checkout and, with ``--baseline``, another source tree such as
``git archive main | tar -x -C DIR``) runs in its own process over the same inputs:
every real session of ``--real`` (read in the format its name says,
``<name>.<format>.json``) compacted at 50% and 20% of its estimate and under
``recover``, plus synthetic 300- and 1,000-message histories at 16k tokens. Each
outcome is reduced to digests of the output messages, every page's PNG bytes, the
ledger (``to_dict`` of each entry) and the token figures, or the error's class and
text when it raised. The runner prints how many outcomes differ and which (exit 1
when any does); ``--out`` keeps this tree's digests as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import hashlib, json, sys
from pathlib import Path
import glyphfold
from glyphfold.compaction.history.messages import FORMATS, coerce
from glyphfold.compaction.history.tokens import token_costs
from glyphfold.compaction.ladder.api import compact, recover
from glyphfold.errors import GlyphfoldError

def digest(obj):
    blob = json.dumps(obj, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.blake2b(blob.encode(), digest_size=12).hexdigest()

def outcome(fn):
    try:
        r = fn()
    except GlyphfoldError as exc:
        return {"raised": type(exc).__name__, "text": digest(str(exc))}
    return {
        "messages": digest(r.messages),
        "pages": [hashlib.blake2b(p.png, digest_size=12).hexdigest() for p in r.pages],
        "ledger": digest([e.to_dict() for e in r.ledger]),
        "tokens": [r.tokens_before, r.tokens_after, r.budget, r.target],
    }

glyphfold.warm_up()
out = {}
real = sys.argv[1]
if real:
    for p in sorted(Path(real).glob("*.json")):
        name = p.name.removesuffix(".json")
        fmt = name.rsplit(".", 1)[-1]
        try:
            h = coerce(json.loads(p.read_text(encoding="utf-8")),
                       format=fmt if fmt in FORMATS else "auto")[0]
        except (ValueError, GlyphfoldError):
            continue
        est = token_costs(h, image_policy="all").total
        out[name + ":c50"] = outcome(lambda: compact(h, budget=max(1, est // 2)))
        out[name + ":c20"] = outcome(lambda: compact(h, budget=max(1, est // 5)))
        out[name + ":rec"] = outcome(lambda: recover(h))
sys.path.insert(0, sys.argv[2])
from bench_compact_synth import synth
for n in (300, 1000):
    out[f"synth{n}:16k"] = outcome(lambda: compact(synth(n), budget=16000))
print(json.dumps(out))
"""


def run_tree(tree: Path, real: str, scratch: Path) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, real, str(scratch)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tree),
        timeout=3600,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: the child failed:\n{proc.stderr[-4000:]}")
    out: dict[str, dict] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, default=None, help="another glyphfold tree")
    ap.add_argument("--real", type=Path, default=None, help="folder of real sessions")
    ap.add_argument("--out", type=Path, default=None, help="write this tree's digests here")
    args = ap.parse_args(argv)
    here = Path(__file__).resolve().parents[1]
    real = args.real
    if real is None:
        real = next(
            (
                p
                for p in (here.parent / "shared" / "realdata", Path("/work/shared/realdata"))
                if p.is_dir()
            ),
            None,
        )
    # the synthetic history generator is bench_compact's, written where both trees import it
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"glyphfold-compare-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_compact import SYNTH

    (scratch / "bench_compact_synth.py").write_text(SYNTH, encoding="utf-8")
    try:
        mine = run_tree(here, str(real or ""), scratch)
        if args.out is not None:
            args.out.write_text(json.dumps(mine, indent=0, sort_keys=True), encoding="utf-8")
        print(f"{len(mine)} outcomes ({real or 'no real sessions'})")
        if args.baseline is None:
            return 0
        base = run_tree(args.baseline.resolve(), str(real or ""), scratch)
    finally:
        for f in scratch.iterdir():
            f.unlink()
        scratch.rmdir()
    differ = sorted(k for k in mine.keys() | base.keys() if mine.get(k) != base.get(k))
    for k in differ:
        a, b = mine.get(k), base.get(k)
        what = (
            "missing"
            if a is None or b is None
            else ", ".join(f for f in sorted(a.keys() | b.keys()) if a.get(f) != b.get(f))
        )
        print(f"DIFFERS {k}: {what}")
    print(f"{len(differ)} of {len(mine.keys() | base.keys())} outcomes differ from the baseline")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
