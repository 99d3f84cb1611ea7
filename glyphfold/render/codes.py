"""The codes both render paths share: character classes, drop rules, grid codes, state slots.

Plain ints, importable without numba: the numba kernels (``_kernels``) and the
numpy path (``vector``) read the same table.
"""

from __future__ import annotations

# Character classes (uint8), filled per code point by glyphfold.render.layout.
C_UNKNOWN = 0
C_NARROW = 1
C_WIDE = 2
C_TAB = 3
C_LF = 4
C_CR = 5
C_ESC = 6
C_FOLD = 7
C_DROP_CONTROL = 10
C_DROP_FORMAT = 11
C_DROP_EMOJI = 12
C_DROP_COMBINING = 13

# Indices into the dropped-by-rule counters (R_CONTROL.. follow C_DROP_CONTROL.. in order).
R_ANSI = 0
R_CONTROL = 1
R_FORMAT = 2
R_EMOJI = 3
R_COMBINING = 4
N_RULES = 5

# Grid code of the right half of a wide glyph (beyond the last Unicode code point).
WIDE_CONT = 0x110000
# Grid code of the lower left cell of a wide glyph drawn two rows tall (``LayoutConfig.wide_rows``
# 2: rows too short for an ideograph): the row under a row of wide glyphs holds it below each
# wide glyph's left half, ``WIDE_CONT`` below the right half.
WIDE_BELOW = 0x110001
BLANK = 0x20

# layout state slots (int64 array of length N_STATE)
S_POS = 0  # next source offset to consume
S_CONT = 1  # 1 when the next row continues a wrapped line (starts with the mark)
N_STATE = 2


# Word wrap (glyphfold.render.layout): the unit class of a visible character.
U_TOKEN = 0  # a narrow character inside a token (letters, digits, most punctuation)
U_END = 1  # narrow punctuation that ends a token: a row may break after it
U_BREAK = 2  # everything else visible: space, tab, line break, wide glyph, folded label
# narrow punctuation after which a row may break (it ends the token before it)
TOKEN_END = (0x2C, 0x3B, 0x29, 0x5D, 0x7D)  # , ; ) ] }


def unit(k: int, cp: int) -> int:
    """Unit class (``U_*``) of a visible character of class ``k`` and code point ``cp``.

    Two neighbours ``a b`` (characters dropped by rule between them are invisible)
    belong to one token, which a row break must not split without a join mark,
    when ``a`` is ``U_TOKEN`` and ``b`` is not ``U_BREAK``.
    """
    if k != C_NARROW or cp == 0x20:
        return U_BREAK
    if cp == 0x2C or cp == 0x3B or cp == 0x29 or cp == 0x5D or cp == 0x7D:
        return U_END
    return U_TOKEN


def drop_rule(k: int) -> int:
    """Counter index of the rule that drops class ``k``; -1 for classes that reach the page."""
    if k == C_ESC:
        return R_ANSI
    if k >= C_DROP_CONTROL:
        return R_CONTROL + (k - C_DROP_CONTROL)
    return -1


def ansi_len(cps: list[int], i: int, n: int) -> int:
    """Length of the ANSI escape sequence starting at cps[i] (an ESC)."""
    if i + 1 >= n:
        return 1
    nxt = cps[i + 1]
    if nxt == 0x5B:  # CSI: ESC [ params intermediates final
        j = i + 2
        while j < n and 0x30 <= cps[j] <= 0x3F:
            j += 1
        while j < n and 0x20 <= cps[j] <= 0x2F:
            j += 1
        if j < n and 0x40 <= cps[j] <= 0x7E:
            j += 1
        return j - i
    if nxt == 0x5D:  # OSC: ESC ] text (BEL | ESC backslash); a control char ends it early
        j = i + 2
        while j < n:
            c = cps[j]
            if c == 0x07:
                return j + 1 - i
            if c == 0x1B:
                return j + 2 - i if j + 1 < n and cps[j + 1] == 0x5C else j - i
            if c < 0x20 or c == 0x7F:
                return j - i
            j += 1
        return n - i
    if 0x20 <= nxt <= 0x2F:  # ESC ( B: intermediate + final
        return 3 if i + 2 < n and 0x30 <= cps[i + 2] <= 0x7E else 2
    if 0x30 <= nxt <= 0x7E:  # two-character escapes (ESC =, ESC 7, ESC M...)
        return 2
    return 1
