"""Where fonts come from: explicit path, ``GLYPHFOLD_FONT``, bundled, system.

Resolution order for the primary font (first hit wins):

1. an explicit ``font`` argument: a path to any font file FreeType reads, or the
   name of a bundled font (``glyphfold.fonts.pixel.bundled_fonts()``);
2. the ``GLYPHFOLD_FONT`` environment variable (same forms);
3. the fonts bundled with glyphfold (so a machine with no fonts installed works);
4. the system: fontconfig's ``fc-match monospace``, then well-known directories;
5. :class:`~glyphfold.errors.FontNotFoundError` naming the Debian package to install.

The fallback chain (:func:`fallback_chain`) adds system fonts after the primary,
per code point: DejaVu Sans Mono (Greek, Cyrillic, symbols), then Noto Sans CJK
(CJK, Hangul, kana), then GNU Unifont (16-px pixel glyphs, the scripts Noto CJK
lacks), then Unifont Upper (supplementary planes). A family the system lacks is taken from a
PyPI package when one is installed (:data:`PACKAGED_FONTS`): ``pip install
'glyphfold[cjk]'`` brings Noto Sans CJK (package ``noto-cjk-sans-otc``) to a
machine without Debian's CJK fonts.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from glyphfold.errors import FontNotFoundError

ENV_VAR = "GLYPHFOLD_FONT"

# Debian package that provides each system fallback family (named in hints).
FALLBACK_PACKAGES: dict[str, str] = {
    "DejaVu Sans Mono": "fonts-dejavu-core",
    "Unifont": "fonts-unifont",
    "Unifont Upper": "fonts-unifont",
    "Noto Sans CJK SC": "fonts-noto-cjk",
}

# Well-known locations, tried when fontconfig is absent or finds nothing.
WELL_KNOWN: dict[str, tuple[str, ...]] = {
    "DejaVu Sans Mono": (
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
        "/usr/share/fonts/dejavu/DejaVuSansMono.ttf",
        "/usr/local/share/fonts/DejaVuSansMono.ttf",
        "/Library/Fonts/DejaVuSansMono.ttf",
    ),
    "Unifont": (
        "/usr/share/fonts/opentype/unifont/unifont.otf",
        "/usr/share/fonts/truetype/unifont/unifont.ttf",
        "/usr/share/fonts/unifont/unifont.otf",
        "/usr/share/fonts/misc/unifont.pcf.gz",
    ),
    "Unifont Upper": (
        "/usr/share/fonts/opentype/unifont/unifont_upper.otf",
        "/usr/share/fonts/unifont/unifont_upper.otf",
    ),
    "Noto Sans CJK SC": (
        "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
        "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
        "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
    ),
}

# family -> (import name of a PyPI package that ships it, file inside the package);
# pyproject's `cjk` extra installs the one below
PACKAGED_FONTS: dict[str, tuple[str, str]] = {
    "Noto Sans CJK SC": ("noto_cjk_sans_otc", "NotoSansCJK-Regular.ttc"),
}

_FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".otc", ".bdf", ".pcf", ".pcf.gz", ".pfb", ".woff")


@functools.lru_cache(maxsize=1)
def bundled() -> dict[str, Path]:
    """Return the fonts shipped with glyphfold (name -> path); empty if none exist."""
    from glyphfold.fonts.pixel import bundled_fonts

    return {name: Path(p) for name, p in bundled_fonts().items() if Path(p).is_file()}


def _lookup(spec: str, *, origin: str) -> Path:
    """Turn a path or a bundled font name into an existing font path."""
    fonts = bundled()
    if spec in fonts:
        return fonts[spec]
    path = Path(spec).expanduser()
    if path.is_file():
        return path.resolve()
    names = ", ".join(sorted(fonts)) or "none installed"
    msg = (
        f"{origin} font {spec!r} is neither a font file nor a bundled font name (bundled: {names})"
    )
    raise FontNotFoundError(msg)


@functools.lru_cache(maxsize=64)
def fc_match(family: str) -> Path | None:
    """Ask fontconfig for ``family``; None when fc-match is missing or substitutes."""
    import shutil  # here: a render that needs no system font does not import them
    import subprocess

    exe = shutil.which("fc-match")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "-f", "%{family}\t%{file}", family],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    fams, _, file = out.partition("\t")
    if not file or not Path(file).is_file():
        return None
    # fc-match always answers; reject its substitutes for a named family.
    generic = family in ("monospace", "mono")
    if not generic and family.lower() not in fams.lower():
        return None
    return Path(file)


def find_system_font(family: str) -> Path | None:
    """Find ``family`` in the well-known directories, then via fontconfig.

    A file test costs microseconds; ``fc-match`` is a process of its own (milliseconds
    of CPU each, paid by every fresh process), so it only runs for what the
    well-known paths do not hold.
    """
    for candidate in WELL_KNOWN.get(family, ()):
        if Path(candidate).is_file():
            return Path(candidate)
    return fc_match(family)


def find_packaged_font(family: str) -> Path | None:
    """The font file of ``family`` shipped by an installed PyPI package, else None.

    The package is located, not imported (no import-time cost).
    """
    entry = PACKAGED_FONTS.get(family)
    if entry is None:
        return None
    module, file_name = entry
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / file_name
        if path.is_file():
            return path
    return None


def resolve_font(
    font: str | os.PathLike[str] | None = None, *, preferred: str | None = None
) -> Path:
    """Return the primary font path following the documented resolution order.

    ``preferred`` (a shape's font) is tried between ``GLYPHFOLD_FONT`` and the
    default bundled font; unlike an explicit ``font`` it may be absent.
    """
    if font is not None:
        return _lookup(os.fspath(font), origin="explicit")
    env = os.environ.get(ENV_VAR)
    if env:
        return _lookup(env, origin=f"${ENV_VAR}")
    fonts = bundled()
    if preferred is not None:
        if preferred in fonts:
            return fonts[preferred]
        if Path(preferred).expanduser().is_file():
            return Path(preferred).expanduser().resolve()
    if fonts:
        # The densest bundled face is not always right; the regular one is the default.
        for name in ("glyphfold-regular", "glyphfold-dense"):
            if name in fonts:
                return fonts[name]
        return fonts[sorted(fonts)[0]]
    hit = fc_match("monospace")
    if hit is not None and hit.name.lower().endswith(_FONT_SUFFIXES):
        return hit
    for candidate in WELL_KNOWN["DejaVu Sans Mono"]:
        if Path(candidate).is_file():
            return Path(candidate)
    msg = (
        "no usable font found (no bundled font, no $GLYPHFOLD_FONT, no system monospace); "
        "install one, e.g. `apt-get install fonts-dejavu-core`, or pass font=PATH"
    )
    raise FontNotFoundError(msg)


@functools.lru_cache(maxsize=64)
def fallback_chain(primary: Path, *, cell_h: int) -> tuple[Path, ...]:
    """Return the per-code-point font chain: primary first, then system fallbacks.

    Noto Sans CJK (scaled, with paper between rows) comes before Unifont at every
    cell height: Unifont's exact 16-px CJK bitmaps fill a 16-px cell edge to edge,
    and whole-page OCR read them at 9.2% CER against 0.0% for 13-px Noto glyphs
    (docs/legibility.md). Unifont stays for the scripts Noto CJK lacks.
    ``cell_h`` is kept for callers (the order no longer depends on it).
    """
    del cell_h
    families = ["DejaVu Sans Mono", "Noto Sans CJK SC", "Unifont"]
    families.append("Unifont Upper")  # supplementary planes: symbols, historic scripts
    chain = [primary]
    for fam in families:
        path = find_system_font(fam) or find_packaged_font(fam)
        if path is not None and path not in chain:
            chain.append(path)
    return tuple(chain)


# First matching range wins; used to name the package that would cover a glyph.
_HINT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0370, 0x052F, "fonts-dejavu-core"),  # Greek, Cyrillic
    (0x1100, 0x11FF, "fonts-noto-cjk"),  # Hangul Jamo
    (0x2E80, 0x9FFF, "fonts-noto-cjk"),  # CJK radicals, kana, ideographs
    (0xAC00, 0xD7AF, "fonts-noto-cjk"),  # Hangul syllables
    (0xF900, 0xFAFF, "fonts-noto-cjk"),
    (0xFF00, 0xFFEF, "fonts-noto-cjk"),  # fullwidth forms
    (0x20000, 0x3FFFF, "fonts-hanazono"),  # CJK extension B and later
    (0x0590, 0x08FF, "fonts-noto-core"),  # Hebrew, Arabic, Syriac...
    (0x0900, 0x0DFF, "fonts-noto-core"),  # Indic scripts
    (0x0E00, 0x0EFF, "fonts-thai-tlwg"),
)


def install_hint(codepoint: int) -> str:
    """Name the Debian package that most likely has a glyph for ``codepoint``."""
    for lo, hi, pkg in _HINT_RANGES:
        if lo <= codepoint <= hi:
            return pkg
    return "fonts-noto"


CJK_EXTRA = "cjk"  # the extra that brings PACKAGED_FONTS["Noto Sans CJK SC"]


def pip_hint(codepoint: int) -> str | None:
    """The glyphfold extra whose PyPI font covers ``codepoint`` (``"glyphfold[cjk]"``), or None."""
    if install_hint(codepoint) == "fonts-noto-cjk":
        return f"glyphfold[{CJK_EXTRA}]"
    return None
