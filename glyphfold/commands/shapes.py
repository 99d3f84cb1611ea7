"""``glyphfold shapes``: the named glyph shapes and what one page of each holds per profile."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

HELP = (
    "list glyph shapes: cell, font, chars per page, image tokens per page, chars per token "
    "on a full grid and achieved on a real transcript"
)
SAMPLE_TOKENS = 20_000  # the shipped sample session, about 80k chars of transcript


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``glyphfold shapes``."""
    parser.add_argument(
        "--profile",
        action="append",
        metavar="NAME",
        help="only this provider profile (repeatable; default: every profile with vision)",
    )
    parser.add_argument(
        "--shape", action="append", metavar="NAME", help="only this shape (repeatable)"
    )
    parser.add_argument(
        "--page",
        metavar="WxH",
        help="price this page size instead of each profile's default page (px)",
    )
    parser.add_argument(
        "--text",
        action="append",
        metavar="PATH",
        help="real text to measure chars per token on: a history JSON (its transcript) "
        "or a text file, or a directory of *.anthropic.json histories (repeatable; "
        "default: the shipped sample session's transcript)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON list of rows")
    parser.add_argument("--why", action="store_true", help="also print the reason for each shape")


def _rendered_page(shape, prof, box: tuple[int, int]) -> tuple[int, int, int, int]:
    """Columns, rows, width and height of a full page as render_text draws it in ``box``.

    The render's own geometry (margins, whole rows of cells: ``render.config.page_size``), so the
    table prints what the pages written hold and cost.
    """
    from glyphfold.errors import LayoutError
    from glyphfold.render.config import page_size, resolve_setup

    try:
        setup = resolve_setup(profile=prof, shape=shape, page=box)
    except LayoutError:  # a page the provider would downscale: shown (with '!') as given
        return (*shape.cells_per_page(*box), *box)
    return (setup.config.cols, setup.config.rows, *page_size(setup, setup.config.rows))


def shape_rows(
    shapes: list, profiles: list, *, page: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """Return one row per (shape, profile): page geometry, chars and image tokens per page."""
    rows = []
    for shape in shapes:
        for prof in profiles:
            box = page if page is not None else prof.default_page
            cols, lines, page_w, page_h = _rendered_page(shape, prof, box)
            chars = cols * lines
            tokens = prof.cost(page_w, page_h)
            rows.append(
                {
                    "shape": shape.name,
                    "cell": [shape.cell_w, shape.cell_h],
                    "glyph": [shape.glyph_w, shape.glyph_h],
                    "line_pitch": shape.line_pitch,
                    "font": shape.font,
                    "bits": shape.bits,
                    "profile": prof.name,
                    "page": [page_w, page_h],
                    "cols": cols,
                    "lines": lines,
                    "chars_per_page": chars,
                    "image_tokens_per_page": tokens,
                    "chars_per_image_token": round(chars / tokens, 2) if tokens else None,
                    # text costs ~4 chars per token (the heuristic of SPEC §3.4)
                    "vs_text_chars4": round(chars / 4 / tokens, 2) if tokens else None,
                    "profile_default": prof.default_shape == shape.name,
                    # False: the provider resizes this page before reading it
                    "native": prof.fits(page_w, page_h),
                }
            )
    return rows


def real_text(paths: list[str] | None) -> tuple[str, str]:
    """Return (label, text): the transcripts of the given histories/files, or the sample's."""
    from pathlib import Path

    from glyphfold.legibility.density import load_histories, transcript_of

    if not paths:
        from glyphfold.samples.demo_session import demo_session

        history = demo_session(target_tokens=SAMPLE_TOKENS, sources=("stdlib",))
        return "the shipped sample session", transcript_of(history)
    parts: list[str] = []
    for spec in paths:
        path = Path(spec)
        if not path.exists():
            from glyphfold.errors import InputError

            msg = f"--text {spec}: no such file or directory"
            raise InputError(msg)
        if path.is_file() and path.suffix != ".json":
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
            continue
        parts.extend(transcript_of(h) for _, h in load_histories([path]))
    return f"{len(parts)} transcript(s) from {', '.join(paths)}", "\n".join(parts)


def add_real_density(rows: list[dict[str, Any]], text: str, page: tuple[int, int] | None):
    """Add chars per image token achieved on ``text`` to each row (snapshot layout: reflow)."""
    from glyphfold.render.api import plan_text

    for row in rows:
        row["real_chars"] = len(text)
        for key, reflow in (("", True), ("_lines_kept", False)):
            if not row["native"]:  # glyphfold refuses to render a page the provider shrinks
                row[f"real_image_tokens{key}"] = row[f"real_chars_per_image_token{key}"] = None
                continue
            plan = plan_text(
                text, profile=row["profile"], shape=row["shape"], page=page, reflow=reflow
            )
            tokens = plan.image_tokens
            row[f"real_image_tokens{key}"] = tokens
            row[f"real_chars_per_image_token{key}"] = (
                round(len(text) / tokens, 2) if tokens else None
            )


def run(args: argparse.Namespace) -> int:
    """Print the table (or JSON) of shapes x profiles."""
    from glyphfold.render.profiles import PROFILES, get_profile
    from glyphfold.render.shapes import SHAPES, get_shape

    if args.profile:
        profiles = [get_profile(name) for name in args.profile]
    else:
        profiles = [p for p in PROFILES.values() if p.vision]
    blind = [p.name for p in profiles if not p.vision]
    if blind:
        from glyphfold.errors import InputError

        msg = f"profile {', '.join(blind)} has no vision: no page is ever sent to it"
        raise InputError(msg)
    shapes = [get_shape(name) for name in args.shape] if args.shape else list(SHAPES.values())
    page = None
    if args.page is not None:
        from glyphfold.render.config import parse_size

        page = parse_size(args.page, what="page")
    rows = shape_rows(shapes, profiles, page=page)
    label, text = real_text(args.text)
    add_real_density(rows, text, page)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    header = (
        f"{'shape':<8} {'cell':>5} {'glyph':>5} {'font':<18} {'profile':<17} {'page':>9} "
        f"{'chars/page':>10} {'tok/page':>8} {'chars/tok':>9} {'vs text':>7} {'real c/tok':>10} "
        f"{'lines kept':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        cell = "x".join(map(str, r["cell"]))
        glyph = "x".join(map(str, r["glyph"]))
        page_size = "x".join(map(str, r["page"]))
        mark = "*" if r["profile_default"] else " "
        if not r["native"]:
            mark = "!"
        print(
            f"{r['shape']:<8} {cell:>5} {glyph:>5} {r['font']:<18} {r['profile'] + mark:<17} "
            f"{page_size:>9} {r['chars_per_page']:>10,} {r['image_tokens_per_page']:>8,} "
            f"{r['chars_per_image_token']:>9} {r['vs_text_chars4']:>6}x "
            f"{r['real_chars_per_image_token'] or '-':>10} "
            f"{r['real_chars_per_image_token_lines_kept'] or '-':>10}"
        )
    print(
        "* the profile's default shape; ! the provider downscales this page (unreadable); "
        "'vs text' = (chars / 4) / image tokens on a full grid;\n"
        f"'real c/tok' = chars per image token achieved on {label} "
        f"({len(text):,} chars), laid out as snapshots are (newlines folded); 'lines kept': "
        "each source line on its own row"
    )
    if args.why:
        for shape in shapes:
            print()
            print(textwrap.fill(f"{shape.name}: {shape.reason}", width=100))
    return 0
