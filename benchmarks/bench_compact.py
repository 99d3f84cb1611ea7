"""``compact`` to 16k tokens on synthetic histories, and on real sessions (issue 22).

Run: ``python benchmarks/bench_compact.py [--sizes 1000,10000] [--rounds 3]
[--baseline DIR] [--real DIR]``. Every measurement is a fresh process (its CPU time
and peak RSS from ``getrusage``) of one tree: this checkout and, with
``--baseline``, another glyphfold source tree (e.g. ``git archive <commit> | tar -x``)
run in the same interleaved rounds, so ratios survive a loaded machine.

Synthetic history: ``n`` messages of about 1,000 chars each (a user request, then
assistant text + one tool call, tool result, ...), Anthropic format; a warm process
(``warm_up`` and one small compact first). Each process warms up (kernels, fonts) on a
small compact, then times ``compact(h, budget=16000)``. It reports:

- the CPU seconds of the compact and the process's peak RSS right after it (a process
  that builds the history, warms up and compacts: issue 22's "compact of 10^5 messages
  <= 1 GiB", before anything else is rendered);
- "never slower than 10x the time of rendering the pages it produces": the pages it
  SENDS (``result.pages``: the texts the snapshot rung rendered for them, noted during
  the compact, rendered again with the same options and timed), the honest reading;
  ``--whole-source`` also renders the snapshot's whole retained source (every word,
  thousands of pages at 10^5: last round's comparison, which flatters the compact).

``--real DIR`` compacts every session there at half
its estimate (one process per tree; per-session milliseconds, median/p90/max).
``--omp DIR``: oh-my-pi's snapcompact ``compact()`` on the same histories in the same
rounds (``omp_compact.ts`` under Bun; set up as :data:`OMP_SETUP` says).
Figures and commands: benchmarks/README.md ("compact to 16k").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

SYNTH = r"""
import random
def synth(n, chars=1000, seed=0):
    rnd = random.Random(seed)
    words = ("the of and to in is for on with as by at from file error def return import "
             "class self value test line path result data call").split()
    def txt(k):
        out, size = [], 0
        while size < k:
            w = rnd.choice(words)
            out.append(w)
            size += len(w) + 1
        s = " ".join(out)
        return "\n".join(s[i:i + 80] for i in range(0, len(s), 80))[:k]
    msgs = [{"role": "user", "content": txt(chars)}]
    i = 0
    while len(msgs) < n:
        cid = f"call_{i}"
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": txt(chars // 2)},
            {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": txt(chars // 2)}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": cid, "content": txt(chars)}]})
        i += 1
    msgs = msgs[:n]
    if msgs[-1]["role"] == "assistant":
        msgs.append({"role": "user", "content": "continue"})
    return {"system": "You are an agent.", "messages": msgs}
"""

CHILD = (
    SYNTH
    + r"""
import json, resource, sys, time
import glyphfold
import glyphfold.render.api as render_api
n, budget = int(sys.argv[1]), int(sys.argv[2])
whole = len(sys.argv) > 3 and sys.argv[3] == "whole"
# the snapshot rung renders through render_api.render_text: each call's text and options
# are noted, to render again exactly the pages the compact sends
drawn = []
_render = render_api.render_text
def noting(text, **opts):
    res = _render(text, **opts)
    drawn.append((text, opts, res))
    return res
render_api.render_text = noting
h = synth(n)
glyphfold.warm_up()  # a harness's start-up: kernels, fonts, atlas
glyphfold.compact(synth(60), budget=3000)
drawn.clear()
t0 = time.process_time()
r = glyphfold.compact(h, budget=budget)
t_compact = time.process_time() - t0
rss_compact = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the compact alone
render_api.render_text = _render
sent = {id(p) for p in r.pages}
texts = [(t, o) for t, o, res in drawn if any(id(p) in sent for p in res.pages)]
t0 = time.process_time()
sent_pages = sum(len(_render(t, **o).pages) for t, o in texts)
t_sent = time.process_time() - t0
out = {"compact_s": t_compact, "sent_s": t_sent, "pages": len(r.pages),
       "sent_pages": sent_pages, "tokens_after": r.tokens_after, "rss_mib": rss_compact}
if whole:  # the snapshot's whole retained source, every word (last round's comparison)
    msgs = r.messages["messages"] if isinstance(r.messages, dict) else r.messages
    sources = [m["x_glyphfold"]["source"] for m in msgs
               if isinstance(m, dict) and isinstance(m.get("x_glyphfold"), dict)
               and "source" in m["x_glyphfold"]]
    t0 = time.process_time()
    out["whole_pages"] = sum(len(_render(s, reflow=True, collapse=True).pages) for s in sources)
    out["whole_s"] = time.process_time() - t0
print(json.dumps(out))
"""
)

REAL = r"""
import cProfile, io, json, pstats, sys, time
from pathlib import Path
import glyphfold
from glyphfold.compaction.history.messages import FORMATS
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.errors import GlyphfoldError
folder, profile_top = sys.argv[1], int(sys.argv[2])
glyphfold.warm_up()
sessions = []
for f in sorted(Path(folder).glob("*.json")):
    name = f.name.removesuffix(".json")
    fmt = name.rsplit(".", 1)[-1]
    fmt = fmt if fmt in FORMATS else "auto"  # <name>.<format>.json: read as its name says
    try:
        h = json.loads(f.read_text(encoding="utf-8"))
        est = estimate_history_tokens(h, format=fmt)
    except (ValueError, GlyphfoldError):
        continue  # not a history (index.json)
    sessions.append((f.name, h, fmt, est))
def call(h, fmt, est):
    try:
        glyphfold.compact(h, budget=max(1, est // 2), format=fmt)
    except glyphfold.ContextOverflowError:
        pass
out = {}
for name, h, fmt, est in sessions:
    t0, c0 = time.perf_counter(), time.process_time()
    call(h, fmt, est)
    out[name] = ((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000)
profiles = {}
for name in sorted(out, key=lambda k: -out[k][1])[:profile_top]:
    _, h, fmt, est = next(s for s in sessions if s[0] == name)
    pr = cProfile.Profile()
    pr.enable()
    call(h, fmt, est)
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(25)
    profiles[name] = buf.getvalue()
print(json.dumps({"ms": out, "profiles": profiles}))
"""


def run(tree: Path, code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tree),
        timeout=3600,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


OMP_SETUP = (
    "omp: mkdir DIR && cd DIR && npm install @oh-my-pi/snapcompact@18.2.3 @oven/bun-linux-x64"
    " (18.2.11 pins a pi-natives version npm does not have)"
)


def run_omp(omp: Path, n: int) -> dict:
    """omp's snapcompact ``compact()`` (Bun, its native renderer) on the same synthetic
    history: CPU seconds of the call (warm), peak RSS of the process."""
    hist = omp / f"glyphfold-synth-{n}.json"
    if not hist.exists():
        code = SYNTH + f"import json; json.dump(synth({n}), open({str(hist)!r}, 'w'))"
        subprocess.run([sys.executable, "-c", code], check=True)
    bun = omp / "node_modules/@oven/bun-linux-x64/bin/bun"
    driver = omp / "omp_compact.ts"  # next to its node_modules, where imports resolve
    shutil.copyfile(Path(__file__).with_name("omp_compact.ts"), driver)
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss=%M", str(bun), str(driver), str(hist)],
        capture_output=True,
        text=True,
        cwd=str(omp),
        timeout=3600,
        check=True,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    rss = [ln for ln in proc.stderr.splitlines() if ln.startswith("maxrss=")]
    out["rss_mib"] = int(rss[-1].split("=")[1]) / 1024 if rss else out.get("rss_mib", 0)
    return {"compact_s": out["cpu_s"], "rss_mib": out["rss_mib"], "frames": out["frames"]}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def real_sessions(trees: dict[str, Path], folder: Path, rounds: int, top: int) -> None:
    """Every session of ``folder`` compacted at half its estimate, one process per tree
    and round, the trees interleaved; per session the median of the rounds, then the
    median / p90 / max over sessions, CPU and wall."""
    got: dict[str, list[dict[str, list[float]]]] = {k: [] for k in trees}
    for r in range(rounds):
        for name, tree in trees.items():
            res = run(tree, REAL, str(folder), str(top if name == "this" and r == 0 else 0))
            got[name].append(res["ms"])
            for session, text in res["profiles"].items():
                print(f"--- profile of {session} ({name}) ---\n{text}")
    per: dict[str, dict[str, tuple[float, float]]] = {}
    for name, runs in got.items():
        common = set.intersection(*(set(r) for r in runs))
        per[name] = {
            k: (
                statistics.median(r[k][0] for r in runs),
                statistics.median(r[k][1] for r in runs),
            )
            for k in common
        }
    print(f"real sessions ({folder}), compact at half the estimate, median of {rounds} rounds:")
    for what, i in (("CPU", 1), ("wall", 0)):
        for name, ms_by in per.items():
            ms = [v[i] for v in ms_by.values()]
            print(
                f"  {name:>8} {what:>4}: {len(ms)} sessions, median {statistics.median(ms):6.1f} "
                f"ms, p90 {pct(ms, 0.9):6.1f} ms, max {max(ms):7.1f} ms, total {sum(ms):8.0f} ms"
            )
    slow = sorted(per["this"].items(), key=lambda kv: -kv[1][1])[:8]
    others = [n for n in per if n != "this"]
    print(
        "  slowest here (CPU ms): "
        + "; ".join(
            f"{k} {v[1]:.0f}" + "".join(f" ({o} {per[o][k][1]:.0f})" for o in others if k in per[o])
            for k, v in slow
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=16000)
    ap.add_argument(
        "--baseline", type=Path, action="append", default=[], help="another glyphfold tree"
    )
    ap.add_argument("--real", type=Path, default=None, help="folder of real sessions")
    ap.add_argument(
        "--profile-top",
        type=int,
        default=0,
        help="with --real: cProfile (by tottime) of this tree's N slowest sessions",
    )
    ap.add_argument("--omp", type=Path, default=None, help=f"a folder set up for {OMP_SETUP}")
    ap.add_argument(
        "--whole-source",
        action="store_true",
        help="also render the snapshot's whole retained source (every word) after the compact",
    )
    args = ap.parse_args(argv)
    here = Path(__file__).resolve().parents[1]
    trees = {"this": here}
    for k, tree in enumerate(args.baseline):
        trees[f"base{k + 1}" if len(args.baseline) > 1 else "baseline"] = tree.resolve()
    print(f"load average at start: {os.getloadavg()}")
    for n in (int(s) for s in args.sizes.split(",") if s):
        got: dict[str, list[dict]] = {k: [] for k in trees}
        omp: list[dict] = []
        for _ in range(args.rounds):
            for name, tree in trees.items():  # interleaved rounds
                whole = ["whole"] if args.whole_source else []
                got[name].append(run(tree, CHILD, str(n), str(args.budget), *whole))
            if args.omp is not None:
                omp.append(run_omp(args.omp.resolve(), n))
        for name, rows in got.items():
            c = statistics.median(r["compact_s"] for r in rows)
            sent = statistics.median(r["sent_s"] for r in rows)
            rss = max(r["rss_mib"] for r in rows)
            print(
                f"n={n:>7,} {name:>8}: compact {c:7.2f} s CPU (median of {len(rows)}), "
                f"tokens_after {rows[0]['tokens_after']:,}, peak RSS of the compact "
                f"{rss:,.0f} MiB; render of the {rows[0]['sent_pages']} pages it sends "
                f"{sent * 1000:7.1f} ms (compact/render {c / max(sent, 1e-9):6.0f}x)"
            )
            if args.whole_source:
                w = statistics.median(r["whole_s"] for r in rows)
                print(
                    f"n={n:>7,} {name:>8}: render of its whole retained source {w:6.2f} s "
                    f"({rows[0]['whole_pages']:,} pages; compact/render {c / max(w, 1e-9):5.1f}x)"
                )
        b = statistics.median(r["compact_s"] for r in got["this"])
        if omp:
            got["omp"] = omp
            o = statistics.median(r["compact_s"] for r in omp)
            print(
                f"n={n:>7,}      omp: compact() {o:7.2f} s CPU (median of {len(omp)}), "
                f"{omp[0]['frames']} frames, peak RSS {max(r['rss_mib'] for r in omp):,.0f} MiB"
            )
        for name in got:
            if name != "this":
                a = statistics.median(r["compact_s"] for r in got[name])
                print(f"n={n:>7,} speed-up this vs {name}: {a / b:.2f}x")
    if args.real is not None:
        real_sessions(trees, args.real.resolve(), args.rounds, args.profile_top)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
