"""Emoji and pictographs: fold the semantic ones to short ASCII labels, drop the rest.

Pages are grayscale glyph grids; a colour emoji cannot be drawn and a monochrome
one at 8 px reads as a smudge. What an agent transcript means by a pictograph is
almost always one of a few states (done, failed, warning, blocked...), so:

* **Folded** (``FOLD``): the code points below become the ASCII label shown, e.g.
  ``✓ ✔ ✅ ☑ 🆗`` -> ``[OK]``, ``✗ ✘ ✖ ❌ ❎`` -> ``[X]``, ``⚠ ❗ ❕`` -> ``[!]``.
  Labels are drawn like any other text and count as that one source character.
* **Dropped** (decorative, counted in ``RenderResult.dropped["emoji"]``): every
  other code point in U+1F000..U+1FAFF (faces, hands, hearts, animals, food,
  flags made of regional indicators, party poppers, rockets, sparkles...) and
  the skin-tone modifiers U+1F3FB..U+1F3FF. Zero-width joiners and variation
  selectors that glue emoji sequences are format characters, dropped as such.
* **Kept**: BMP symbols outside the table (arrows, box drawing, ``★ ♥ ☺``, dingbats)
  are ordinary text: they render from the font chain in monochrome, or as a
  replacement box when no font has them.
"""

from __future__ import annotations

# code point -> ASCII label (explicit table; anything not listed is not folded)
FOLD: dict[int, str] = {
    # done / ok
    0x2713: "[OK]",  # ✓ check mark
    0x2714: "[OK]",  # ✔ heavy check mark
    0x2705: "[OK]",  # ✅ white heavy check mark
    0x2611: "[OK]",  # ☑ ballot box with check
    0x1F5F8: "[OK]",  # 🗸 light check mark
    0x1F197: "[OK]",  # 🆗 squared OK
    0x1F44C: "[OK]",  # 👌 ok hand
    # failed / wrong
    0x2717: "[X]",  # ✗ ballot x
    0x2718: "[X]",  # ✘ heavy ballot x
    0x2716: "[X]",  # ✖ heavy multiplication x
    0x274C: "[X]",  # ❌ cross mark
    0x274E: "[X]",  # ❎ negative squared cross mark
    0x2612: "[X]",  # ☒ ballot box with x
    # attention
    0x26A0: "[!]",  # ⚠ warning sign
    0x2757: "[!]",  # ❗ heavy exclamation mark
    0x2755: "[!]",  # ❕ white exclamation mark
    0x203C: "[!!]",  # ‼ double exclamation
    0x2049: "[!?]",  # ⁉ exclamation question
    0x2753: "[?]",  # ❓ question mark ornament
    0x2754: "[?]",  # ❔ white question mark ornament
    0x2139: "[i]",  # ℹ information source
    0x1F6A8: "[ALERT]",  # 🚨 police light
    # blocked / stopped
    0x26D4: "[NO]",  # ⛔ no entry
    0x1F6AB: "[NO]",  # 🚫 prohibited
    0x1F6D1: "[STOP]",  # 🛑 stop sign
    0x1F6A7: "[WIP]",  # 🚧 construction
    # waiting / time
    0x23F3: "[WAIT]",  # ⏳ hourglass flowing
    0x231B: "[WAIT]",  # ⌛ hourglass done
    0x23F1: "[TIMER]",  # ⏱ stopwatch
    0x23F0: "[ALARM]",  # ⏰ alarm clock
    # status lights (CI dashboards)
    0x1F534: "[RED]",  # 🔴
    0x1F7E0: "[ORANGE]",  # 🟠
    0x1F7E1: "[YELLOW]",  # 🟡
    0x1F7E2: "[GREEN]",  # 🟢
    0x1F535: "[BLUE]",  # 🔵
    0x26AA: "[WHITE]",  # ⚪
    0x26AB: "[BLACK]",  # ⚫
    # votes
    0x1F44D: "[+1]",  # 👍
    0x1F44E: "[-1]",  # 👎
    # checkboxes
    0x2610: "[ ]",  # ☐ ballot box
    # objects agents talk about
    0x1F41B: "[BUG]",  # 🐛
    0x1F4A1: "[IDEA]",  # 💡
    0x1F4C1: "[DIR]",  # 📁
    0x1F4C2: "[DIR]",  # 📂
    0x1F4C4: "[FILE]",  # 📄
    0x1F4DD: "[NOTE]",  # 📝
    0x1F512: "[LOCKED]",  # 🔒
    0x1F513: "[UNLOCKED]",  # 🔓
    0x1F511: "[KEY]",  # 🔑
    0x1F517: "[LINK]",  # 🔗
    0x1F50D: "[SEARCH]",  # 🔍
    0x1F50E: "[SEARCH]",  # 🔎
    0x1F4CC: "[PIN]",  # 📌
    0x2699: "[GEAR]",  # ⚙
    0x1F527: "[FIX]",  # 🔧
    0x1F6E0: "[TOOLS]",  # 🛠
    0x1F9EA: "[TEST]",  # 🧪
    0x1F4E6: "[PKG]",  # 📦
    0x1F195: "[NEW]",  # 🆕
    0x1F198: "[SOS]",  # 🆘
    0x1F4AC: "[SAYS]",  # 💬
}

# Ranges whose unlisted members are decorative pictographs (dropped).
DECORATIVE_RANGES: tuple[tuple[int, int], ...] = ((0x1F000, 0x1FAFF),)


def is_decorative(codepoint: int) -> bool:
    """Whether ``codepoint`` is a pictograph glyphfold drops (not in :data:`FOLD`)."""
    if codepoint in FOLD:
        return False
    return any(lo <= codepoint <= hi for lo, hi in DECORATIVE_RANGES)


# Labels wrap whole; layout.MIN_COLS leaves room for the longest one plus the mark.
MAX_LABEL_LEN = 10
assert max(map(len, FOLD.values())) <= MAX_LABEL_LEN
