"""``glyphfold legibility``: render the fixed corpus, OCR it back, print how well it reads."""

from __future__ import annotations

import argparse
import json

HELP = "render the legibility corpus per shape, OCR it back, print CER and compression"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile", default="anthropic", help="provider profile (default anthropic)"
    )
    parser.add_argument(
        "--shape",
        action="append",
        help="glyph shape to measure (repeatable; default: every shape)",
    )
    parser.add_argument(
        "--part", action="append", help="corpus part to measure (repeatable; default: all)"
    )
    parser.add_argument(
        "--engine",
        choices=("rapidocr", "tesseract", "all"),
        default="all",
        help="OCR engine (tesseract is used only when installed)",
    )
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        help="integer nearest-neighbour enlargement before rapidocr (default 1 = native)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _shape_names(args: argparse.Namespace) -> list[str]:
    if args.shape:
        return list(args.shape)
    from glyphfold.render.shapes import shape_names

    return list(shape_names())


def _fmt(x: float | None, pct: bool = True) -> str:
    if x is None:
        return "-"
    return f"{x:.2%}" if pct else f"{x:.2f}"


def _report_dict(report) -> dict[str, object]:
    from glyphfold.legibility import best_results

    best = best_results(report.results)
    return {
        "profile": report.profile,
        "shape": report.shape,
        "chars": report.chars,
        "pages": report.pages,
        "image_tokens": report.image_tokens,
        "image_tokens_reflow": report.image_tokens_reflow,
        "chars_per_image_token": round(report.chars_per_image_token, 3),
        "chars_per_image_token_reflow": round(report.chars_per_image_token_reflow, 3),
        "text_tokens": report.text_tokens,
        "compression": {
            k: None if v is None else round(v, 3) for k, v in report.compression().items()
        },
        "render_ms": round(report.render_ms, 2),
        "failures": list(report.failures),
        "parts": [
            {
                "part": r.part,
                "engine": r.engine,
                "cer": r.cer,
                "cer_spaced": r.cer_spaced,
                "identifiers": [r.identifiers_matched, r.identifiers_total],
                "pages": r.pages,
                "image_tokens": r.image_tokens,
                "missing_glyphs": r.missing_glyphs,
                "confusions": [list(c) for c in r.confusions],
                "ocr_ms": round(r.ocr_ms, 1),
                "skipped": r.skipped,
                "best": best.get(r.part) is r,
            }
            for r in report.results
        ],
    }


def _print_report(report) -> None:
    from glyphfold.legibility import best_results

    best = best_results(report.results)
    print(f"\n== profile {report.profile}, shape {report.shape}  (* = best engine for the part)")
    print(
        f"{'part':<10} {'engine':<10} {'CER':>7} {'CER sp':>7} {'ids':>7} {'pages':>5} "
        f"{'img tok':>7}  confusions (ref->read)"
    )
    for r in report.results:
        ids = f"{r.identifiers_matched}/{r.identifiers_total}" if r.identifiers_total else "-"
        conf = " ".join(f"{a or '∅'}->{b or '∅'}x{n}" for a, b, n in r.confusions[:6])
        if r.skipped:
            conf = f"skipped: {r.skipped}"
        mark = "*" if best.get(r.part) is r else " "
        print(
            f"{r.part:<10}{mark}{r.engine:<10} {_fmt(r.cer):>7} {_fmt(r.cer_spaced):>7} {ids:>7} "
            f"{r.pages:>5} {r.image_tokens:>7}  {conf}"
        )
    tt = report.text_tokens
    comp = report.compression()
    o200k = "unavailable" if tt["o200k_base"] is None else str(tt["o200k_base"])
    print(
        f"whole corpus as one text: {report.chars} chars, {report.pages} page(s), "
        f"{report.image_tokens} image tokens ({report.chars_per_image_token:.2f} chars/token; "
        f"reflow {report.image_tokens_reflow}, {report.chars_per_image_token_reflow:.2f}); "
        "text tokens: chars/4 "
        f"{tt['chars_div_4']} (x{_fmt(comp['chars_div_4'], pct=False)}), o200k_base {o200k}"
        + ("" if comp["o200k_base"] is None else f" (x{comp['o200k_base']:.2f})")
    )
    for failure in report.failures:
        print(f"TARGET MISSED: {failure}")


def run(args: argparse.Namespace) -> int:
    from glyphfold import legibility as L
    from glyphfold.render.profiles import get_profile

    profile = get_profile(args.profile)
    if not profile.vision:
        from glyphfold.errors import InputError

        msg = f"profile {profile.name!r} sends no images; pick a vision profile"
        raise InputError(msg)
    names = ("rapidocr", "tesseract") if args.engine == "all" else (args.engine,)
    engines = L.ocr_engines(names, rapidocr={"scale": args.scale})
    reports = [
        L.measure(profile=profile.name, shape=shape, engines=engines, parts=args.part)
        for shape in _shape_names(args)
    ]
    if args.json:
        print(json.dumps([_report_dict(r) for r in reports], ensure_ascii=False))
    else:
        for report in reports:
            _print_report(report)
    return 1 if any(r.failures for r in reports) else 0
