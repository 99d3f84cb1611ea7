"""Golden-image cases, and the script that (re)generates them.

Regenerate only when a rendering change is intended, then look at the images:

    .venv/bin/python -m tests.render.goldens

Each case renders a fixed string with a fixed system font (Debian packages
fonts-dejavu-core and fonts-unifont) into tests/render/golden/<name>.png, with the
default 8-px margin (each page is its grid plus 16 px each way).
"""

from __future__ import annotations

from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
UNIFONT = "/usr/share/fonts/opentype/unifont/unifont.otf"

CASES: dict[str, dict] = {
    "dejavu-aa-4bit": {
        "text": "The quick brown fox 0O 1lI 5S 8B {}[]\ndef f(x): return x**2  # ok",
        "font": DEJAVU,
        "cell": "8x16",
        "page": "336x80",
        "bits": 4,
    },
    "dejavu-mono-1bit": {
        "text": "The quick brown fox 0O 1lI 5S 8B {}[]\ndef f(x): return x**2  # ok",
        "font": DEJAVU,
        "cell": "8x16",
        "page": "336x80",
        "bits": 1,
    },
    "unifont-cjk": {
        "text": "漢字かなカナ한국어\nΩμέγα Жизнь déjà",
        "font": UNIFONT,
        "cell": "8x16",
        "page": "176x80",
        "bits": 1,
    },
    "fold-wrap-tabs": {
        "text": "status:\t✓ done ❌ failed ⚠ warn 🎉 and a long line that wraps\nnext",
        "font": DEJAVU,
        "cell": "7x14",
        "page": "156x100",
        "bits": 2,
    },
}


def render_case(name: str) -> bytes:
    """Render one golden case to PNG bytes (single page)."""
    from glyphfold.render.api import render_text

    res = render_text(**CASES[name])
    assert len(res.pages) == 1, f"golden case {name} must fit one page"
    return res.pages[0].png


def main() -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for name in CASES:
        path = GOLDEN_DIR / f"{name}.png"
        path.write_bytes(render_case(name))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
