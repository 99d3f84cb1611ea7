"""``glyphfold profiles``: list the provider profiles, their page geometry and prices."""

from __future__ import annotations

import argparse
from typing import Any

from glyphfold.commands._args import add_json

HELP = "list provider profiles: no-downscale box, the full page as rendered, its price, limits"
DESCRIPTION = """\
List the provider profiles, one row each:
  box       the largest image the provider reads without downscaling (px)
  page      a full page as glyphfold renders it with the profile's default shape:
            whole rows of cells inside the box (px)
  tok/page  what the provider bills for that page (image tokens)
  shape     the default glyph shape (`glyphfold shapes` compares them)
  images    the most images one request may carry; MB/img: the byte limit of one
  context   the profile model's context window (tokens)
Reference: docs/cli.md#profiles, docs/rendering.md."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_json(parser, "a list, one object per profile")


def _full_page(p) -> tuple[int, int] | None:
    """Width and height of a full page with the profile's default shape, as rendered."""
    if not p.vision:
        return None
    from glyphfold.render.config import page_size, resolve_setup

    setup = resolve_setup(profile=p)
    return page_size(setup, setup.config.rows)


def _row(p) -> dict[str, Any]:
    full = _full_page(p)
    return {
        "name": p.name,
        "provider": p.provider,
        "model": p.model,
        "vision": p.vision,
        "max_page": [p.max_page_width, p.max_page_height],
        "default_page": list(p.default_page),
        "page_tokens": p.page_tokens,
        "full_page": list(full) if full else None,
        "full_page_tokens": p.cost(*full) if full else 0,
        "default_shape": p.default_shape,
        "default_bits": p.default_bits,
        "context_window": p.context_window,
        "max_images_per_request": p.max_images_per_request,
        "max_image_bytes": p.max_image_bytes,
        "max_request_bytes": p.max_request_bytes,
        "page_multiple_px": p.page_multiple_px,
        "shape_reason": p.shape_reason,
        "notes": p.notes,
    }


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._term import print_json, say
    from glyphfold.render.profiles import PROFILES

    rows = [_row(p) for p in PROFILES.values()]
    if args.json:
        print_json(rows)
        return 0
    header = (
        f"{'profile':<16} {'model':<18} {'box':>10} {'page':>10} {'tok/page':>8} "
        f"{'shape':<8} {'images':>6} {'MB/img':>6} {'context':>9}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        box = "x".join(map(str, r["max_page"]))
        page = "x".join(map(str, r["full_page"])) if r["full_page"] else "-"
        mb = r["max_image_bytes"] / 1e6
        ctx = "-" if r["context_window"] is None else f"{r['context_window']:,}"
        lines.append(
            f"{r['name']:<16} {r['model'] or '-':<18} {box:>10} {page:>10} "
            f"{r['full_page_tokens']:>8,} {r['default_shape']:<8} "
            f"{r['max_images_per_request']:>6,} {mb:>6.1f} {ctx:>9}"
        )
    say("\n".join(lines))
    return 0
