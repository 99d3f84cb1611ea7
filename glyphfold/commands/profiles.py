"""``glyphfold profiles``: list the provider profiles, their page geometry and prices."""

from __future__ import annotations

import argparse
import json

HELP = "list provider profiles: no-downscale page box, default page, image tokens, limits"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object per profile")


def _row(p) -> dict[str, object]:
    return {
        "name": p.name,
        "provider": p.provider,
        "model": p.model,
        "vision": p.vision,
        "max_page": [p.max_page_width, p.max_page_height],
        "default_page": list(p.default_page),
        "page_tokens": p.page_tokens,
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
    from glyphfold.render.profiles import PROFILES

    rows = [_row(p) for p in PROFILES.values()]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    header = (
        f"{'profile':<16} {'model':<18} {'box':>10} {'page':>10} {'tok/page':>8} "
        f"{'shape':<8} {'images':>6} {'MB/img':>6} {'context':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        box = "x".join(map(str, r["max_page"]))
        page = "x".join(map(str, r["default_page"]))
        mb = r["max_image_bytes"] / 1e6  # type: ignore[operator]
        ctx = "-" if r["context_window"] is None else f"{r['context_window']:,}"
        print(
            f"{r['name']:<16} {r['model'] or '-':<18} {box:>10} {page:>10} "
            f"{r['page_tokens']:>8} {r['default_shape']:<8} {r['max_images_per_request']:>6} "
            f"{mb:>6.1f} {ctx:>9}"
        )
    return 0
