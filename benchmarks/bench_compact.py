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
  thousands of pages at 10^5: last round's comparison, which flatters the compact);
  ``--floor`` times what reading the input costs before any planning (a ledger row per
  message and a regex search of each tool result; and a lean pass: a count per message,
  a literal search, a hash and a join of the results), to set beside 10x that render.

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

FLOOR = (
    SYNTH
    + r"""
import json, re, sys, time
# what a compactor that reads its input spends before any parsing, pricing, planning or
# rendering (issue 22's 10x bound at scale). The first pass builds a ledger row per
# message and searches each tool result with a case-blind regex for a notable event
# (SPEC §5.8); the lean pass is the least we could write that still looks at every
# message and every result: a count per message, one literal search of each result,
# one hash of each (exact duplicates, §5.8) and one join of every result (the retained
# source, §5.9, timed apart: it could be kept by reference). The runner prints what 10x
# the render of the pages sent leaves once the lean pass (without its join) and that
# render are paid: at 10^5 nothing (benchmarks/README.md, "Round 5").
msgs = synth(int(sys.argv[1]))["messages"]
t0 = time.process_time()
rows = []
for i, m in enumerate(msgs):
    c = m["content"]
    if isinstance(c, str):
        rows.append((i, m["role"], len(c)))
        continue
    k = 0
    for b in c:
        ty = b["type"]
        if ty == "text":
            k += len(b["text"])
        elif ty == "tool_result":
            k += len(b["content"])
        elif ty == "tool_use":
            k += len(b["input"]["cmd"])
    rows.append((i, m["role"], k))
t1 = time.process_time()
notable = re.compile(r"error|traceback|fail", re.I)
hits = sum(1 for m in msgs if isinstance(m["content"], list) for b in m["content"]
           if b["type"] == "tool_result" and notable.search(b["content"]))
t2 = time.process_time()
k = 0
results = []  # one pass over the messages: a count each, the tool results gathered
for m in msgs:
    c = m["content"]
    if isinstance(c, str):
        k += len(c)
        continue
    k += len(c)
    for b in c:
        if b["type"] == "tool_result":
            results.append(b["content"])
found = sum(1 for s in results if "error" in s or "Traceback" in s)
seen = len({hash(s) for s in results})
t3 = time.process_time()
whole = len("\n".join(results))
t4 = time.process_time()
print(json.dumps({"rows_s": t1 - t0, "search_s": t2 - t1, "lean_s": t4 - t2, "join_s": t4 - t3}))
"""
)

REAL = r"""
import cProfile, gc, io, json, pstats, sys, time
from pathlib import Path
import glyphfold
from glyphfold.compaction.history.messages import FORMATS
from glyphfold.compaction.history.tokens import estimate_history_tokens
from glyphfold.errors import GlyphfoldError
folder, profile_top, freeze = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
per_page = len(sys.argv) > 4 and sys.argv[4] == "per-page"
glyphfold.warm_up()
# a harness's steady state: the ladder imported and run once (the first compact of a
# process imports it; that is the cold start's cost, bench_coldstart.py)
warm = [{"role": "user", "content": "warm up " * 300}, {"role": "assistant", "content": "ok"}]
glyphfold.compact(warm * 20 + warm[:1], budget=3000, format="openai")
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
if freeze:
    # the loaded sessions (all 174 held at once: a benchmark's heap, not a harness's) leave
    # the collector's generations: a full collection, whose cost grows with everything the
    # process holds, is then not charged to whichever call happens to trigger it
    gc.collect()
    gc.freeze()
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
sent = {}
if per_page:
    # each session again, its render calls noted; then exactly the pages it sends rendered
    # again on their own: compact CPU / render CPU of the pages it produces (issue 22)
    import glyphfold.render.api as render_api
    _render = render_api.render_text
    drawn = []
    def noting(text, **opts):
        res = _render(text, **opts)
        drawn.append((text, opts, res))
        return res
    for name, h, fmt, est in sessions:
        drawn.clear()
        render_api.render_text = noting
        try:
            r = glyphfold.compact(h, budget=max(1, est // 2), format=fmt)
        except glyphfold.ContextOverflowError:
            continue
        finally:
            render_api.render_text = _render
        ids = {id(p) for p in r.pages}
        texts = [(t, o) for t, o, res in drawn if any(id(p) in ids for p in res.pages)]
        if not texts:
            continue
        c0 = time.process_time()
        n_pages = sum(len(_render(t, **o).pages) for t, o in texts)
        sent[name] = (n_pages, (time.process_time() - c0) * 1000)
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
print(json.dumps({"ms": out, "profiles": profiles, "sent": sent}))
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


def real_sessions(
    trees: dict[str, Path],
    folder: Path,
    rounds: int,
    top: int,
    freeze: bool = True,
    per_page: bool = False,
) -> None:
    """Every session of ``folder`` compacted at half its estimate, one process per tree
    and round, the trees interleaved; per session the median of the rounds, then the
    median / p90 / max over sessions, CPU and wall. ``per_page``: also each session's
    compact against the render of the pages it sends (this tree's first round)."""
    got: dict[str, list[dict[str, list[float]]]] = {k: [] for k in trees}
    sent: dict[str, list[float]] = {}
    for r in range(rounds):
        for name, tree in trees.items():
            top_here = top if name == "this" and r == 0 else 0
            extra = ["per-page"] if per_page and name == "this" and r == 0 else []
            res = run(tree, REAL, str(folder), str(top_here), "1" if freeze else "0", *extra)
            got[name].append(res["ms"])
            sent.update(res.get("sent", {}))
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
    gcf = "sessions frozen out of the GC (gc.freeze)" if freeze else "no gc.freeze"
    print(
        f"real sessions ({folder}), compact at half the estimate, median of {rounds} rounds, {gcf}:"
    )
    for what, i in (("CPU", 1), ("wall", 0)):
        for name, ms_by in per.items():
            ms = [v[i] for v in ms_by.values()]
            print(
                f"  {name:>8} {what:>4}: {len(ms)} sessions, median {statistics.median(ms):6.1f} "
                f"ms, p90 {pct(ms, 0.9):6.1f} ms, max {max(ms):7.1f} ms, total {sum(ms):8.0f} ms"
            )
    # the least disturbed round of each session (a shared box's load inflates CPU time too)
    for name, runs in got.items():
        common = set.intersection(*(set(r) for r in runs))
        ms = [min(r[k][1] for r in runs) for k in common]
        print(
            f"  {name:>8} CPU, per session the fastest round: median "
            f"{statistics.median(ms):6.1f} ms, p90 {pct(ms, 0.9):6.1f} ms, max {max(ms):7.1f} ms"
        )
    if sent:
        # compact CPU (median of the rounds) / CPU of rendering again the pages it sends
        ratio = {
            k: per["this"][k][1] / max(ms, 1e-6) for k, (_, ms) in sent.items() if k in per["this"]
        }
        vals = sorted(ratio.values())
        worst = sorted(ratio.items(), key=lambda kv: -kv[1])[:5]
        print(
            f"  compact / render of the pages it sends, {len(vals)} sessions that send pages: "
            f"median {statistics.median(vals):.1f}x, p90 {pct(vals, 0.9):.1f}x, max "
            f"{vals[-1]:.1f}x; over 10x: {sum(v > 10 for v in vals)}; highest: "
            + "; ".join(f"{k} {v:.1f}x ({sent[k][0]} pages)" for k, v in worst)
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
    ap.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="with --real: leave the loaded sessions in the collector's generations",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also time a bare reading pass and a lean one over the same history",
    )
    ap.add_argument(
        "--per-page",
        action="store_true",
        help="with --real: each session's compact against the render of the pages it sends",
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
        if args.floor:
            fl = run(here, FLOOR, str(n))
            f_ms = (fl["rows_s"] + fl["search_s"]) * 1000
            lean, join = fl["lean_s"] * 1000, fl["join_s"] * 1000
            print(
                f"n={n:>7,}    a reading pass: a ledger row per message {fl['rows_s'] * 1000:.0f}"
                f" ms + one regex search of each tool result {fl['search_s'] * 1000:.0f} ms = "
                f"{f_ms:.0f} ms; the lean pass (a count per message, a literal search, a hash "
                f"and a join of the results) {lean:.0f} ms, {join:.0f} ms of it the join"
            )
            sent_ms = statistics.median(r["sent_s"] for r in got["this"]) * 1000
            left = 10 * sent_ms - (lean - join) - sent_ms
            print(
                f"n={n:>7,}    10x the render of the pages it sends {10 * sent_ms:.0f} ms, less "
                f"the lean pass without its join and that render itself: {left:.0f} ms left for "
                f"everything else ({left * 1e6 / n:.0f} ns a message)"
            )
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
        real_sessions(
            trees, args.real.resolve(), args.rounds, args.profile_top, args.gc_freeze, args.per_page
        )
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
