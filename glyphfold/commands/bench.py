"""``glyphfold bench``: glyphfold vs a Pillow baseline on a ~1M-char mixed transcript."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from glyphfold.errors import GlyphfoldError, InputError


class BenchError(GlyphfoldError, RuntimeError):
    """A benchmark step that could not run (reported in one line by the CLI)."""


HELP = "time glyphfold against Pillow line-by-line rendering (ms/page, chars/s, ratios)"

FIRST_PAGE_CHARS = 20_000  # a tool-result-sized first render (three default pages)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold bench``."""
    parser.add_argument("--chars", type=int, default=1_000_000, help="transcript size")
    parser.add_argument("--profile", default="anthropic", help="provider profile (page geometry)")
    parser.add_argument("--shape", default=None, help="glyph shape (default: the profile's)")
    parser.add_argument(
        "--font",
        default=None,
        help="font for both runs (default: DejaVu Sans Mono, which Pillow can also load)",
    )
    parser.add_argument(
        "--baseline-pages", type=int, default=0, help="time only the first N baseline pages"
    )
    parser.add_argument("--repeat", type=int, default=3, help="glyphfold runs (best is kept)")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh-process runs")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _batched(steps: Iterable[object], batch: int = 20) -> list[float]:
    """Run an iterator of steps; return the seconds spent per batch of ``batch`` steps."""
    times = []
    t = time.perf_counter()
    for i, _ in enumerate(steps, start=1):
        if i % batch == 0:
            now = time.perf_counter()
            times.append(now - t)
            t = now
    times.append(time.perf_counter() - t)
    return times


def _best_batches(run, repeat: int) -> float:
    """Total seconds of ``run`` with each batch at its fastest over ``repeat`` runs."""
    best = run()
    for _ in range(repeat - 1):
        best = [min(a, b) for a, b in zip(best, run(), strict=True)]
    return sum(best)


def _fresh(text: str, profile: str, font: str, repeat: int) -> dict[str, dict]:
    """Fresh-process first renders (auto and forced kernels) and the baselines, as dicts."""
    from glyphfold.commands import _bench_fresh as F

    out: dict[str, dict] = {}
    cases = [("auto", "first page"), ("numba", "first page, kernels forced")]
    try:
        for backend, label in cases:
            for cache, r in F.render_runs(
                text, profile=profile, font=font, backend=backend, repeat=repeat
            ).items():
                out[f"{label}, {cache}"] = {"cpu_s": r.cpu_s, "wall_s": r.wall_s, **r.info}
        for label, r in F.baseline_runs(repeat=repeat).items():
            out[label] = {"cpu_s": r.cpu_s, "wall_s": r.wall_s}
    except F.FreshProcessError as exc:
        raise BenchError(str(exc)) from None
    return out


def run(args: argparse.Namespace) -> int:
    """Run the comparison and print the table; return 0."""
    from glyphfold.fonts.raster import FontFace
    from glyphfold.fonts.resolve import find_system_font
    from glyphfold.render.api import render_text
    from glyphfold.render.config import resolve_setup
    from glyphfold.render.encode import DEFAULT_LEVEL
    from glyphfold.render.page import PageWriter, prepare
    from glyphfold.samples.mixed_text import mixed_transcript

    try:
        import PIL  # noqa: F401  (the baseline: an optional dependency)
    except ImportError:
        msg = "bench's baseline renders with Pillow, which is not installed: "
        msg += "pip install 'glyphfold[bench]'"
        raise InputError(msg) from None
    if args.chars < 1000:
        msg = f"--chars must be at least 1000, got {args.chars}"
        raise InputError(msg)
    font = args.font or str(find_system_font("DejaVu Sans Mono") or "")
    if not font:
        msg = "the baseline needs an outline font: apt-get install fonts-dejavu-core or --font"
        raise InputError(msg)
    text = mixed_transcript(args.chars)
    opts = {"profile": args.profile, "shape": args.shape, "font": font}
    # the comparison times the engine's steady state: the numba kernels, loaded and warm
    # (a fresh process's first render is what the fresh-process rows measure)
    from glyphfold.render import backend

    backend.kernels()
    setup = resolve_setup(**opts)
    cfg = setup.config

    # (b) glyphfold end to end, warm (JIT cache loaded, atlas filled by a first call)
    render_text(text[:20_000], **opts)
    e2e = []
    for _ in range(max(1, args.repeat)):
        t = time.perf_counter()
        res = render_text(text, **opts)
        e2e.append(time.perf_counter() - t)
    n_pages = len(res.pages)
    t_e2e = min(e2e)

    # pixel stage: layout + blit of the 8-bit page into the renderer's reused buffer,
    # through the renderer's own page writer
    atlas, lay = prepare(setup, text)
    writer = PageWriter(setup, atlas, level=DEFAULT_LEVEL, max_bytes=None, keep_pixels=True)

    def pixel_stage() -> list[float]:
        return _batched(writer.draw(pl) for pl in lay.pages(reuse=True))

    def memset() -> list[float]:
        def fill() -> Iterator[None]:
            for _ in range(n_pages):
                writer.buf.fill(255)
                yield None

        return _batched(fill())

    # Both are timed in batches of pages and each batch keeps its best run, so a
    # run preempted on a busy machine does not count against one side only.
    t_pix = _best_batches(pixel_stage, max(5, args.repeat))
    t_floor = _best_batches(memset, max(5, args.repeat)) / n_pages

    # default font of the profile (bundled pixel font when present), same geometry
    dflt = {"profile": args.profile, "shape": args.shape}
    render_text(text[:20_000], **dflt)
    runs = []
    for _ in range(max(1, args.repeat)):
        t = time.perf_counter()
        res_default = render_text(text, **dflt)
        runs.append(time.perf_counter() - t)
    t_default = min(runs)

    # (a) Pillow line by line + PNG at Pillow's default level
    from glyphfold.commands import _bench_pillow as baseline

    face = FontFace(Path(font), cell_w=setup.cell_w, cell_h=setup.cell_h, mono=setup.bits == 1)
    font_px = face._sizing(False)[0]
    limit = args.baseline_pages or None
    geometry = {"cols": cfg.cols, "rows": cfg.rows, "cell_w": setup.cell_w, "cell_h": setup.cell_h}
    t = time.perf_counter()
    base_pages = baseline.render_pillow(
        text, font_path=font, font_px=font_px, bits=setup.bits, max_pages=limit, **geometry
    )
    t_base = time.perf_counter() - t
    base_ms_page = t_base * 1e3 / len(base_pages)
    base_total_pages = baseline.count_pages(text, cols=cfg.cols, rows=cfg.rows)

    fresh = {}
    if not args.no_fresh:
        fresh = _fresh(text[:FIRST_PAGE_CHARS], args.profile, "", max(1, min(args.repeat, 3)))

    gf_ms_page = t_e2e * 1e3 / n_pages
    report: dict[str, Any] = {
        "chars": len(text),
        "page": [cfg.cols * setup.cell_w, cfg.rows * setup.cell_h],
        "cell": [setup.cell_w, setup.cell_h],
        "bits": setup.bits,
        "font": font,
        "glyphfold": {
            "pages": n_pages,
            "ms_total": t_e2e * 1e3,
            "ms_per_page": gf_ms_page,
            "chars_per_s": len(text) / t_e2e,
            "png_bytes_per_page": sum(len(p.png) for p in res.pages) / n_pages,
        },
        "glyphfold_default_font": {
            "font": res_default.fonts[0],
            "pages": len(res_default.pages),
            "ms_per_page": t_default * 1e3 / max(1, len(res_default.pages)),
            "chars_per_s": len(text) / t_default,
        },
        "pillow": {
            "pages_timed": len(base_pages),
            "pages_total": base_total_pages,
            "ms_per_page": base_ms_page,
            "chars_per_s": len(text) / (base_ms_page * base_total_pages / 1e3),
            "png_bytes_per_page": sum(map(len, base_pages)) / len(base_pages),
        },
        "speedup_vs_pillow": base_ms_page / gf_ms_page,
        "pixel_stage_ms_per_page": t_pix * 1e3 / n_pages,
        "memset_ms_per_page": t_floor * 1e3,
        "pixel_stage_vs_memset": (t_pix / n_pages) / t_floor,
        "fresh_process": fresh,
    }
    report["targets"] = _targets(report)
    missed = [t["line"] for t in report["targets"] if not t["met"]]
    if missed:
        report["error"] = "missed: " + "; ".join(missed)
        report["exit_code"] = 1
    if args.json:
        print(json.dumps(report))
    else:
        _print_table(report, setup, text, font, n_pages, len(base_pages), fresh)
    if missed:
        print(f"glyphfold: bench {report['error']}", file=sys.stderr)
        return 1
    return 0


# the targets the table prints (docs/rendering.md): (key, label, bound, at least?)
TARGETS = (
    ("speedup_vs_pillow", "speedup vs Pillow", 50.0, True),
    ("pixel_stage_vs_memset", "pixel stage / memset", 5.0, False),
)


def _targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, label, bound, at_least in TARGETS:
        value = float(report[key])
        met = value >= bound if at_least else value <= bound
        line = f"{label}: {value:.2f}x (target {'>=' if at_least else '<='} {bound:g}x)"
        out.append({"name": key, "value": value, "target": bound, "met": met, "line": line})
    return out


def _print_table(
    report: dict[str, Any],
    setup: Any,
    text: str,
    font: str,
    n_pages: int,
    base_pages: int,
    fresh: dict[str, dict],
) -> None:
    base_ms_page = report["pillow"]["ms_per_page"]
    gf_ms_page = report["glyphfold"]["ms_per_page"]
    g, p = report["glyphfold"], report["pillow"]
    w, h = report["page"]
    print(
        f"{len(text):,} chars, page {w}x{h}, cell {setup.cell_w}x{setup.cell_h}, "
        f"{setup.bits} bpp, font {Path(font).name}"
    )
    print(f"{'':34s}{'ms/page':>10s}{'chars/s':>14s}{'pages':>8s}")
    print(
        f"{'(a) Pillow text + PNG (default)':34s}{base_ms_page:10.3f}"
        f"{p['chars_per_s']:14,.0f}{base_pages:8d}"
    )
    print(
        f"{'(b) glyphfold end to end':34s}{gf_ms_page:10.3f}{g['chars_per_s']:14,.0f}{n_pages:8d}"
    )
    d = report["glyphfold_default_font"]
    print(
        f"{'(b) same, default font':34s}{d['ms_per_page']:10.3f}{d['chars_per_s']:14,.0f}"
        f"{d['pages']:8d}"
    )
    print(f"{'pixel stage (layout + blit)':34s}{report['pixel_stage_ms_per_page']:10.3f}")
    print(f"{'memset floor (one page)':34s}{report['memset_ms_per_page']:10.3f}")
    for t in report["targets"]:
        print(f"{t['line']}{'' if t['met'] else '  MISSED'}")
    if fresh:
        print(f"fresh process, {FIRST_PAGE_CHARS:,} chars (whole-process CPU / wall):")
    for label, r in fresh.items():
        line = f"  {label:44s}{r['cpu_s']:7.3f} s CPU {r['wall_s']:7.3f} s wall"
        if "backend" in r:
            line += f"  ({r['backend']}, kernel cache misses {r['cache_misses']})"
        print(line)
