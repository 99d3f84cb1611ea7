"""Build the bundled BDF pixel fonts from their readable source files.

Run ``python -m glyphfold.fonts.pixel.build`` to rewrite ``fonts/pixel/*.bdf``
from ``fonts/pixel/*.glyphs.txt``; ``--check`` only compares and exits 1 when a
committed BDF is stale.

Source format (one file per font, ``#`` starts a comment line)::

    font glyphfold-dense         # font name (also the BDF family)
    cell 6 10                    # cell width and height in px
    ascent 8                     # rows above the baseline
    cap_height 7
    x_height 5
    glyph_width 5                # ink columns; the rest of the cell is spacing
    max_squash 1                 # rows an accented capital may drop to make room
    box 2 4 2 1                  # box drawing: centre x, centre y, heavy px, double gap

    char U+0041 A                # one glyph: exactly `cell` height rows of `#`/`.`,
    .###.                        # each glyph_width or cell width long
    ...
    mark acute above             # a diacritic: only its own rows
    ...#.
    ..#..
    mark stroke_d overlay        # overlay marks: full-cell rows OR-ed onto the base
    ...
    compose U+0111 U+0064 stroke_d   # explicit composition: base + marks
    alias U+00A0 U+0020          # same drawing under another codepoint
    invert U+E000 U+0021 U+007E  # reverse video: BASE + cp holds cp's cell inverted

A font can also be derived from another source: ``derive other.glyphs.txt``
copies it, ``widen 11 2`` moves every drawing 2 px right in an 11-px cell
(glyphs drawn into the gap column, such as the em dash, grow to the new edges),
``embolden`` doubles every vertical stroke rightwards (unless that would close
a 1-px gap), and later directives (``font``, ``box``, ``char`` blocks that
replace an inherited drawing) override.

Letters of Latin-1, Latin Extended-A, Greek and Cyrillic that Unicode decomposes into a
base letter and one combining mark are composed automatically (``i``/``j`` lose
their dot first and take ``NAME_dotless`` marks when the font has them; capitals
take ``NAME_cap`` marks when the font has them); any ``char`` drawn by hand wins
over composition. Box
drawing (U+2500-U+257F) and block elements (U+2580-U+259F) are generated from
their Unicode names so every line meets its neighbour cell exactly.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_SUFFIX = ".glyphs.txt"

# combining mark codepoint -> mark name used in the source files
COMBINING_MARKS: dict[int, str] = {
    0x0300: "grave",
    0x0301: "acute",
    0x0302: "circumflex",
    0x0303: "tilde",
    0x0304: "macron",
    0x0306: "breve",
    0x0307: "dot",
    0x0308: "diaeresis",
    0x030A: "ring",
    0x030B: "doubleacute",
    0x030C: "caron",
    0x0327: "cedilla",
    0x0328: "ogonek",
}

# ranges whose canonical decompositions are composed automatically
COMPOSE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00C0, 0x00FF),
    (0x0100, 0x017F),
    (0x0370, 0x03FF),
    (0x0400, 0x04FF),
)

# a dotted base loses its dot before an above-mark is added
DOTLESS: dict[int, int] = {0x0069: 0x0131, 0x006A: 0x0237}

_PLACEMENTS = ("above", "below", "overlay")
# directive -> minimum number of arguments
_ARITY = {
    "font": 1, "cell": 2, "ascent": 1, "cap_height": 1, "x_height": 1, "glyph_width": 1,
    "max_squash": 1, "box": 4, "char": 1, "mark": 2, "compose": 3, "alias": 2, "derive": 1,
    "widen": 2, "embolden": 0, "invert": 3,
}  # fmt: skip
_INT_DIRECTIVES = {
    "cell", "ascent", "cap_height", "x_height", "glyph_width", "max_squash", "box", "widen",
}  # fmt: skip


class SourceError(ValueError):
    """A glyph source file that does not parse; the message names file and line."""


@dataclass(frozen=True, slots=True)
class Mark:
    """A diacritic: its rows (cell-wide) and where it goes."""

    name: str
    placement: str
    rows: tuple[str, ...]


@dataclass(slots=True)
class FontSource:
    """One parsed source file."""

    name: str = ""
    cell_w: int = 0
    cell_h: int = 0
    ascent: int = 0
    cap_height: int = 0
    x_height: int = 0
    glyph_w: int = 0
    glyph_x: int = 0  # first column of the glyph box (0 unless a font was widened)
    max_squash: int = 2
    box: tuple[int, int, int, int] = (0, 0, 2, 1)
    glyphs: dict[int, tuple[str, ...]] = field(default_factory=dict)
    marks: dict[str, Mark] = field(default_factory=dict)
    composes: dict[int, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    aliases: dict[int, int] = field(default_factory=dict)
    overlaps: list[str] = field(default_factory=list)  # marks that had to overlap a base
    inverts: list[tuple[int, int, int]] = field(default_factory=list)  # (base, first, last)

    @property
    def descent(self) -> int:
        return self.cell_h - self.ascent


def _parse_cp(token: str, where: str) -> int:
    if not token.upper().startswith("U+"):
        msg = f"{where}: expected a codepoint like U+0041, got {token!r}"
        raise SourceError(msg)
    try:
        return int(token[2:], 16)
    except ValueError:
        msg = f"{where}: bad codepoint {token!r}"
        raise SourceError(msg) from None


def _widen(font: FontSource, cell_w: int, offset: int, where: str) -> None:
    """Move every drawing ``offset`` px right in a wider cell; joining glyphs grow to the edges."""
    old_w = font.cell_w
    right = cell_w - old_w - offset
    if offset < 0 or right < 0:
        msg = f"{where}: widen {cell_w} {offset} does not fit a {old_w}-px cell"
        raise SourceError(msg)

    def widen(rows: tuple[str, ...], *, join: bool) -> tuple[str, ...]:
        # a glyph drawn into the gap column joins its neighbours (em dash, underscore):
        # keep it joined by running its edge pixels out to the new cell edges
        return tuple(
            ("#" if join and r[0] == "#" else ".") * offset
            + r
            + ("#" if join and r[-1] == "#" else ".") * right
            for r in rows
        )

    gap = font.glyph_x + font.glyph_w
    for cp, rows in font.glyphs.items():
        letter = unicodedata.category(chr(cp))[0] == "L"
        join = not letter and any("#" in r[gap:] for r in rows)
        font.glyphs[cp] = widen(rows, join=join)
    for name, mark in font.marks.items():
        font.marks[name] = Mark(mark.name, mark.placement, widen(mark.rows, join=False))
    font.cell_w = cell_w
    font.glyph_x += offset


def _embolden_rows(rows: tuple[str, ...]) -> tuple[str, ...]:
    """Double every vertical stroke rightwards, except where that would close a 1-px gap."""
    out = []
    for r in rows:
        cells = list(r)
        for x in range(1, len(r)):
            nxt = r[x + 1] if x + 1 < len(r) else "."
            if r[x] == "." and r[x - 1] == "#" and nxt == ".":
                cells[x] = "#"
        out.append("".join(cells))
    return tuple(out)


def _embolden(font: FontSource, where: str) -> None:
    """Embolden every drawn glyph and mark by one px (the glyph box grows by one column)."""
    if font.glyph_x + font.glyph_w >= font.cell_w:
        msg = f"{where}: embolden needs a free column right of the glyph box; widen first"
        raise SourceError(msg)
    for cp, rows in font.glyphs.items():
        font.glyphs[cp] = _embolden_rows(rows)
    for name, mark in font.marks.items():
        font.marks[name] = Mark(mark.name, mark.placement, _embolden_rows(mark.rows))
    font.glyph_w += 1


def parse_source(text: str, *, path: str = "<source>", base_dir: Path | None = None) -> FontSource:
    """Parse one glyph source file into a FontSource (``derive`` reads from ``base_dir``)."""
    font = FontSource()
    inherited: set[int] = set()  # drawings a derived font may replace once
    lines = text.splitlines()
    i = 0
    header_ints = {"ascent", "cap_height", "x_height", "glyph_width", "max_squash"}

    def read_rows(start: int, where: str, *, count: int | None) -> tuple[list[str], int]:
        rows: list[str] = []
        j = start
        while j < len(lines):
            s = lines[j].strip()
            # a row is only '#' and '.'; anything else (blank, comment, directive) ends it
            if not s or set(s) - {"#", "."}:
                break
            rows.append(s)
            j += 1
            if count is not None and len(rows) == count:
                break
        if count is not None and len(rows) != count:
            msg = f"{where}: expected {count} rows of '#'/'.', got {len(rows)}"
            raise SourceError(msg)
        return rows, j

    def pad(rows: list[str], where: str) -> tuple[str, ...]:
        out = []
        for r in rows:
            if len(r) not in (font.glyph_w, font.cell_w):
                msg = (
                    f"{where}: row {r!r} is {len(r)} wide; rows must be glyph_width="
                    f"{font.glyph_w} or cell width={font.cell_w}"
                )
                raise SourceError(msg)
            out.append(r.ljust(font.cell_w, "."))
        return tuple(out)

    while i < len(lines):
        where = f"{path}:{i + 1}"
        raw = lines[i]
        s = raw.strip()
        i += 1
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        key = parts[0]
        arity = _ARITY.get(key)
        if arity is not None and len(parts) - 1 < arity:
            msg = f"{where}: {key!r} needs {arity} argument(s), got {s!r}"
            raise SourceError(msg)
        if key in _INT_DIRECTIVES and not all(p.lstrip("-").isdigit() for p in parts[1:]):
            msg = f"{where}: {key!r} takes integers, got {s!r}"
            raise SourceError(msg)
        if key == "font":
            font.name = parts[1]
        elif key == "cell":
            font.cell_w, font.cell_h = int(parts[1]), int(parts[2])
        elif key in header_ints:
            value = int(parts[1])
            if key == "glyph_width":
                font.glyph_w = value
            else:
                setattr(font, key, value)
        elif key == "box":
            font.box = (int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]))
        elif key == "char":
            cp = _parse_cp(parts[1], where)
            if cp in font.glyphs and cp not in inherited:
                msg = f"{where}: U+{cp:04X} is drawn twice"
                raise SourceError(msg)
            inherited.discard(cp)
            rows, i = read_rows(i, where, count=font.cell_h)
            font.glyphs[cp] = pad(rows, where)
        elif key == "mark":
            if len(parts) < 3 or parts[2] not in _PLACEMENTS:
                msg = f"{where}: expected 'mark NAME {'|'.join(_PLACEMENTS)}', got {s!r}"
                raise SourceError(msg)
            count = font.cell_h if parts[2] == "overlay" else None
            rows, i = read_rows(i, where, count=count)
            if not rows:
                msg = f"{where}: mark {parts[1]!r} has no rows"
                raise SourceError(msg)
            font.marks[parts[1]] = Mark(parts[1], parts[2], pad(rows, where))
        elif key == "compose":
            cp = _parse_cp(parts[1], where)
            base = _parse_cp(parts[2], where)
            font.composes[cp] = (base, tuple(parts[3:]))
        elif key == "alias":
            font.aliases[_parse_cp(parts[1], where)] = _parse_cp(parts[2], where)
        elif key == "invert":
            base, first, last = (_parse_cp(t, where) for t in parts[1:4])
            if last < first:
                msg = f"{where}: invert range U+{first:04X}..U+{last:04X} is empty"
                raise SourceError(msg)
            font.inverts.append((base, first, last))
        elif key == "derive":
            base_path = (base_dir or Path()) / parts[1]
            if not base_path.is_file():
                msg = f"{where}: derive: no source file {parts[1]!r} next to {path}"
                raise SourceError(msg)
            parent = parse_source(
                base_path.read_text(encoding="utf-8"), path=parts[1], base_dir=base_path.parent
            )
            font = replace(
                parent,
                glyphs=dict(parent.glyphs),
                marks=dict(parent.marks),
                composes=dict(parent.composes),
                aliases=dict(parent.aliases),
                overlaps=[],
                inverts=list(parent.inverts),
            )
            inherited = set(font.glyphs)
        elif key == "widen":
            _widen(font, int(parts[1]), int(parts[2]), where)
        elif key == "embolden":
            _embolden(font, where)
        else:
            msg = f"{where}: unknown directive {key!r}"
            raise SourceError(msg)
    for label in ("cell_w", "cell_h", "ascent", "glyph_w"):
        if getattr(font, label) <= 0:
            msg = f"{path}: header field {label} missing or not positive"
            raise SourceError(msg)
    return font


# --------------------------------------------------------------------------- composition

Bitmap = list[list[int]]


def _to_bitmap(rows: tuple[str, ...]) -> Bitmap:
    return [[1 if c == "#" else 0 for c in r] for r in rows]


def _or_rows(a: list[int], b: list[int]) -> list[int]:
    return [x | y for x, y in zip(a, b, strict=True)]


def _ink_rows(bm: Bitmap) -> list[int]:
    return [y for y, row in enumerate(bm) if any(row)]


def _squash(bm: Bitmap, k: int, baseline: int) -> Bitmap | None:
    """Drop k duplicated rows above the baseline, shifting the top down; None if too few."""
    out = [row[:] for row in bm]
    for _ in range(k):
        ink = [y for y in _ink_rows(out) if y < baseline]
        if not ink:
            return None
        top, bottom = ink[0], ink[-1]
        # runs of identical consecutive rows: removing one row of a run keeps the shape
        best: tuple[int, float, int] | None = None
        y = top
        mid = (top + bottom) / 2
        while y <= bottom:
            z = y
            while z + 1 <= bottom and out[z + 1] == out[y]:
                z += 1
            length = z - y + 1
            if length >= 2:
                centre = (y + z) / 2
                cand = (length, -abs(centre - mid), (y + z) // 2)
                if best is None or cand[:2] > best[:2]:
                    best = cand
            y = z + 1
        if best is None:
            return None
        del out[best[2]]
        out.insert(0, [0] * len(bm[0]))
    return out


def compose(font: FontSource, base_rows: tuple[str, ...], mark_names: tuple[str, ...]) -> Bitmap:
    """Return the base glyph with each mark applied in turn."""
    bm = _to_bitmap(base_rows)
    width = font.cell_w
    for name in mark_names:
        try:
            mark = font.marks[name]
        except KeyError:
            msg = f"{font.name}: unknown mark {name!r}; defined: {', '.join(sorted(font.marks))}"
            raise SourceError(msg) from None
        mbm = _to_bitmap(mark.rows)
        if mark.placement == "overlay":
            bm = [_or_rows(r1, r2) for r1, r2 in zip(bm, mbm, strict=True)]
            continue
        # marks keep their drawn height: a blank row inside a mark is part of its
        # design (it keeps e.g. diaeresis and caron apart by more than one pixel)
        mh = len(mbm)
        if mark.placement == "below":
            for dy, row in enumerate(mbm):
                y = font.ascent + dy
                if y < font.cell_h:
                    bm[y] = [a | b for a, b in zip(bm[y], row, strict=True)]
            continue
        ink = _ink_rows(bm)
        top = ink[0] if ink else font.ascent - font.x_height
        # wanted: the mark, one clear row, then the base. Short of room, drop up to
        # max_squash duplicated rows from the base (a capital stays taller than the
        # x-height), then give up the clear row, and only then overlap.
        need = mh + 1 - top
        squash = min(need, font.max_squash) if need > 0 else 0
        while squash > 0:
            squashed = _squash(bm, squash, font.ascent)
            if squashed is not None:
                bm = squashed
                break
            squash -= 1
        ink = _ink_rows(bm)
        top = ink[0] if ink else 0
        start = top - 1 - mh
        if start < 0:
            start = top - mh  # no clear row: the mark touches the base
            if start < 0:
                font.overlaps.append(name)
                start = 0
        for dy, row in enumerate(mbm):
            y = start + dy
            bm[y] = [a | b for a, b in zip(bm[y], row[:width], strict=True)]
    return bm


# --------------------------------------------------------------------------- box drawing

_WEIGHTS = {"LIGHT": 1, "SINGLE": 1, "HEAVY": 2, "DOUBLE": 3}
_DIRS = {
    "UP": ("U",),
    "DOWN": ("D",),
    "LEFT": ("L",),
    "RIGHT": ("R",),
    "VERTICAL": ("U", "D"),
    "HORIZONTAL": ("L", "R"),
}


def _parse_box_name(name: str) -> dict[str, int] | None:
    """Map a BOX DRAWINGS name to {direction: weight}; None if not a plain line glyph."""
    words = name.removeprefix("BOX DRAWINGS ").split()
    if any(w in ("DASH", "ARC", "DIAGONAL") for w in words):
        return None
    arms: dict[str, int] = {}
    clauses = " ".join(words).split(" AND ")
    weights: list[int | None] = []
    dirs: list[list[str]] = []
    for clause in clauses:
        cw = [w for w in clause.split() if w in _WEIGHTS]
        weights.append(_WEIGHTS[cw[0]] if cw else None)
        dirs.append([d for w in clause.split() if w in _DIRS for d in _DIRS[w]])
    for idx, ds in enumerate(dirs):
        w = weights[idx]
        if w is None:
            known = [x for x in weights[:idx][::-1] + weights[idx + 1 :] if x is not None]
            if not known:
                return None
            w = known[0]
        for d in ds:
            arms[d] = w
    return arms or None


def _box_glyph(font: FontSource, cp: int) -> Bitmap | None:
    name = unicodedata.name(chr(cp), "")
    w, h = font.cell_w, font.cell_h
    cx, cy, heavy, gap = font.box
    bm = [[0] * w for _ in range(h)]

    def hline(y: int, x0: int, x1: int) -> None:
        for x in range(max(min(x0, x1), 0), min(max(x0, x1), w - 1) + 1):
            if 0 <= y < h:
                bm[y][x] = 1

    def vline(x: int, y0: int, y1: int) -> None:
        for y in range(max(min(y0, y1), 0), min(max(y0, y1), h - 1) + 1):
            if 0 <= x < w:
                bm[y][x] = 1

    words = name.split()
    if "DASH" in words:
        count = {"DOUBLE": 2, "TRIPLE": 3, "QUADRUPLE": 4}[words[words.index("DASH") - 1]]
        thick = heavy if "HEAVY" in words else 1
        length = w if "HORIZONTAL" in words else h
        seg = length / count
        for k in range(count):
            a = round(k * seg)
            b = round((k + 1) * seg) - 2  # one clear pixel between dashes, at least
            for t in range(thick):
                if "HORIZONTAL" in words:
                    hline(cy + t, a, max(a, b))
                else:
                    vline(cx + t, a, max(a, b))
        return bm
    if "DIAGONAL" in words:
        ur = "UPPER RIGHT TO LOWER LEFT" in name or "CROSS" in words
        ul = "UPPER LEFT TO LOWER RIGHT" in name or "CROSS" in words
        for y in range(h):
            x = round(y * (w - 1) / (h - 1))
            if ul:
                bm[y][x] = 1
            if ur:
                bm[y][w - 1 - x] = 1
        return bm
    arc = "ARC" in words
    arms = _parse_box_name(name.replace("ARC ", "")) if arc else _parse_box_name(name)
    if arms is None:
        return None
    ext = {"L": (0, cx), "R": (cx, w - 1), "U": (0, cy), "D": (cy, h - 1)}
    perp = {"L": ("U", "D"), "R": ("U", "D"), "U": ("L", "R"), "D": ("L", "R")}
    sign = {"L": -1, "R": 1, "U": -1, "D": 1}
    for d, weight in arms.items():
        horizontal = d in "LR"
        c_along = cx if horizontal else cy
        edge = ext[d][0] if sign[d] < 0 else ext[d][1]
        if weight in (1, 2):
            # reach back across a double perpendicular so both of its lines are met
            back = gap if any(arms.get(p) == 3 for p in perp[d]) else 0
            start = c_along - sign[d] * back
            offsets = range(heavy) if weight == 2 else range(1)
            for t in offsets:
                pos = (cy if horizontal else cx) + t - (heavy - 1) // 2 * (weight == 2)
                (hline if horizontal else vline)(pos, start, edge)
        else:
            for side in perp[d]:
                off = -gap if side in "UL" else gap
                pos = (cy if horizontal else cx) + off
                p_arm = arms.get(side)
                if p_arm is None:
                    other = next(s for s in perp[d] if s != side)
                    back = gap if arms.get(other) == 3 else 0
                    start = c_along - sign[d] * back
                else:
                    start = c_along + sign[d] * (gap if p_arm == 3 else 0)
                (hline if horizontal else vline)(pos, start, edge)
    if arc:
        bm[cy][cx] = 0
    return bm


def _block_glyph(font: FontSource, cp: int) -> Bitmap | None:
    """Block elements U+2580-U+259F: eighths, halves, quadrants and shades."""
    w, h = font.cell_w, font.cell_h
    bm = [[0] * w for _ in range(h)]

    def fill(x0: float, y0: float, x1: float, y1: float) -> None:
        for y in range(round(y0 * h), round(y1 * h)):
            for x in range(round(x0 * w), round(x1 * w)):
                bm[y][x] = 1

    off = cp - 0x2580
    if off == 0:
        fill(0, 0, 1, 0.5)
    elif 1 <= off <= 8:  # lower n eighths, full block
        fill(0, 1 - off / 8, 1, 1)
    elif 9 <= off <= 0xF:  # left seven eighths .. left one eighth
        fill(0, 0, (16 - off) / 8, 1)
    elif off == 0x10:
        fill(0.5, 0, 1, 1)
    elif off in (0x11, 0x12, 0x13):  # light, medium, dark shade
        for y in range(h):
            for x in range(w):
                bm[y][x] = {
                    0x11: int(x % 2 == 0 and y % 2 == 0),
                    0x12: int((x + y) % 2 == 0),
                    0x13: int(not (x % 2 == 1 and y % 2 == 1)),
                }[off]
    elif off == 0x14:
        fill(0, 0, 1, 1 / 8)
    elif off == 0x15:
        fill(7 / 8, 0, 1, 1)
    elif 0x16 <= off <= 0x1F:
        # quadrants: bits UL, UR, LL, LR
        quads = {
            0x16: "0010",
            0x17: "0001",
            0x18: "1000",
            0x19: "1011",
            0x1A: "1001",
            0x1B: "1110",
            0x1C: "1101",
            0x1D: "0100",
            0x1E: "0110",
            0x1F: "0111",
        }[off]
        boxes = ((0, 0, 0.5, 0.5), (0.5, 0, 1, 0.5), (0, 0.5, 0.5, 1), (0.5, 0.5, 1, 1))
        for bit, box in zip(quads, boxes, strict=True):
            if bit == "1":
                fill(*box)
    else:
        return None
    return bm


# --------------------------------------------------------------------------- assembly


def _latin_twin(cp: int, latin_base: int) -> int | None:
    """The precomposed letter with ``cp``'s marks on ``latin_base`` (e.g. Ά -> Á), if any."""
    marks = unicodedata.normalize("NFD", chr(cp))[1:]
    twin = unicodedata.normalize("NFC", chr(latin_base) + marks)
    return ord(twin) if len(twin) == 1 else None


def build_glyphs(font: FontSource) -> tuple[dict[int, Bitmap], dict[int, str]]:
    """Return every glyph bitmap (cell-sized) and how each was made."""
    out: dict[int, Bitmap] = {}
    how: dict[int, str] = {}
    for cp, rows in font.glyphs.items():
        out[cp] = _to_bitmap(rows)
        how[cp] = "drawn"
    for lo, hi in ((0x2500, 0x257F), (0x2580, 0x259F)):
        for cp in range(lo, hi + 1):
            if cp in out:
                continue
            bm = _box_glyph(font, cp) if cp < 0x2580 else _block_glyph(font, cp)
            if bm is not None:
                out[cp] = bm
                how[cp] = "generated"
    rules: dict[int, tuple[int, tuple[str, ...]]] = {}
    for lo, hi in COMPOSE_RANGES:
        for cp in range(lo, hi + 1):
            parts = unicodedata.decomposition(chr(cp)).split()
            if len(parts) != 2 or parts[0].startswith("<"):
                continue
            if not unicodedata.category(chr(cp)).startswith("L"):
                continue  # spacing accents (΅) are not letter + mark
            base, mark_cp = int(parts[0], 16), int(parts[1], 16)
            # a mark the font does not draw leaves the letter uncovered (coverage tests see it)
            if COMBINING_MARKS.get(mark_cp) in font.marks:
                rules[cp] = (base, (COMBINING_MARKS[mark_cp],))
    rules.update(font.composes)
    for cp, (base, marks) in sorted(rules.items()):
        if cp in font.glyphs:
            continue
        above = any(font.marks[m].placement == "above" for m in marks if m in font.marks)
        if base in font.aliases:
            # Greek Alpha is drawn as Latin A, so Alpha-tonos is the same drawing as A-acute
            base = font.aliases[base]
            same = _latin_twin(cp, base)
            if same is not None and same in out:
                out[cp] = [row[:] for row in out[same]]
                how[cp] = f"alias of U+{same:04X}"
                continue
        if above and base in DOTLESS:
            base = DOTLESS[base]
            # a font may give i/j their own mark (e.g. an acute that keeps off the dot's spot)
            marks = tuple(f"{m}_dotless" if f"{m}_dotless" in font.marks else m for m in marks)
        elif above and unicodedata.category(chr(base)) == "Lu":
            # a font may give capitals their own (shorter) marks: a mark tall enough to
            # read over the x-height does not fit over the cap height
            marks = tuple(f"{m}_cap" if f"{m}_cap" in font.marks else m for m in marks)
        if base not in font.glyphs:
            continue  # composition needs a drawn base; coverage tests report the gap
        before = len(font.overlaps)
        out[cp] = compose(font, font.glyphs[base], marks)
        how[cp] = "composed" if len(font.overlaps) == before else "composed, mark overlaps"
    for cp, target in sorted(font.aliases.items()):
        if cp in out:
            msg = f"{font.name}: U+{cp:04X} is both drawn and an alias of U+{target:04X}"
            raise SourceError(msg)
        if target not in out:
            msg = f"{font.name}: alias U+{cp:04X} points at U+{target:04X}, which has no glyph"
            raise SourceError(msg)
        out[cp] = [row[:] for row in out[target]]
        how[cp] = f"alias of U+{target:04X}"
    _add_inverse(font, out, how)
    return out, how


def _add_inverse(font: FontSource, out: dict[int, Bitmap], how: dict[int, str]) -> None:
    """Add reverse-video copies (every pixel of the cell flipped) under ``invert`` ranges.

    Made last, from the finished drawings (a derived font inverts its own, widened
    and emboldened glyphs). The copies live in the Private Use Area: no text a
    user writes maps to them, so a line drawn with them cannot be forged by text.
    (The reversed space would be a full block, which text can draw: sources invert
    from U+0021.)
    """
    for base, first, last in font.inverts:
        for cp in range(first, last + 1):
            if cp not in out:
                continue
            target = base + cp
            if target in out and not how[target].startswith("inverse"):
                msg = f"{font.name}: U+{target:04X} is both drawn and the inverse of U+{cp:04X}"
                raise SourceError(msg)
            out[target] = [[1 - bit for bit in row] for row in out[cp]]
            how[target] = f"inverse of U+{cp:04X}"


def _bdf(font: FontSource, glyphs: dict[int, Bitmap]) -> str:
    w, h, asc, desc = font.cell_w, font.cell_h, font.ascent, font.descent
    family = font.name
    props = [
        ('FOUNDRY "glyphfold"'),
        (f'FAMILY_NAME "{family}"'),
        ('WEIGHT_NAME "Medium"'),
        ('SLANT "R"'),
        ('SETWIDTH_NAME "Normal"'),
        ('ADD_STYLE_NAME ""'),
        (f"PIXEL_SIZE {h}"),
        (f"POINT_SIZE {h * 10}"),
        ("RESOLUTION_X 72"),
        ("RESOLUTION_Y 72"),
        ('SPACING "C"'),
        (f"AVERAGE_WIDTH {w * 10}"),
        ('CHARSET_REGISTRY "ISO10646"'),
        ('CHARSET_ENCODING "1"'),
        (f"FONT_ASCENT {asc}"),
        (f"FONT_DESCENT {desc}"),
        (f"CAP_HEIGHT {font.cap_height}"),
        (f"X_HEIGHT {font.x_height}"),
        ("DEFAULT_CHAR 65533" if 0xFFFD in glyphs else "DEFAULT_CHAR 32"),
        ('COPYRIGHT "glyphfold project, MIT licence; drawn for glyphfold"'),
    ]
    xlfd = f"-glyphfold-{family}-Medium-R-Normal--{h}-{h * 10}-72-72-C-{w * 10}-ISO10646-1"
    lines = [
        "STARTFONT 2.1",
        f"FONT {xlfd}",
        f"SIZE {h} 72 72",
        f"FONTBOUNDINGBOX {w} {h} 0 {-desc}",
        f"STARTPROPERTIES {len(props)}",
        *props,
        "ENDPROPERTIES",
        f"CHARS {len(glyphs)}",
    ]
    row_bytes = (w + 7) // 8
    swidth = round(w * 1000 / h)
    for cp in sorted(glyphs):
        bm = glyphs[cp]
        lines += [
            f"STARTCHAR uni{cp:04X}",
            f"ENCODING {cp}",
            f"SWIDTH {swidth} 0",
            f"DWIDTH {w} 0",
            f"BBX {w} {h} 0 {-desc}",
            "BITMAP",
        ]
        for row in bm:
            value = 0
            for x, bit in enumerate(row):
                if bit:
                    value |= 1 << (row_bytes * 8 - 1 - x)
            lines.append(f"{value:0{row_bytes * 2}X}")
        lines.append("ENDCHAR")
    lines.append("ENDFONT")
    return "\n".join(lines) + "\n"


def source_paths(folder: Path = HERE) -> list[Path]:
    """Return the glyph source files in ``folder``, sorted by name."""
    return sorted(folder.glob(f"*{SOURCE_SUFFIX}"))


def build_font(source: Path) -> tuple[FontSource, str]:
    """Parse one source file and return it with its BDF text."""
    font = parse_source(
        source.read_text(encoding="utf-8"), path=source.name, base_dir=source.parent
    )
    glyphs, _ = build_glyphs(font)
    return font, _bdf(font, glyphs)


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, verify) every bundled BDF next to its source."""
    parser = argparse.ArgumentParser(prog="python -m glyphfold.fonts.pixel.build")
    parser.add_argument("--check", action="store_true", help="exit 1 if a BDF is stale")
    parser.add_argument("--out", type=Path, default=HERE, help="where to write the .bdf files")
    args = parser.parse_args(argv)
    stale = []
    for src in source_paths():
        font, text = build_font(src)
        target = args.out / f"{font.name}.bdf"
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(target.name)
            continue
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({text.count('STARTCHAR')} glyphs)")
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m glyphfold.fonts.pixel.build")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
