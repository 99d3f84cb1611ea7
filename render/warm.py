"""``warm_up``: pay the renderer's first-call costs before they matter.

Kept apart from :mod:`glyphfold.render.api` so that importing it is cheap: with
``background=True`` even the heavy imports (numba, FreeType) happen on the thread.
"""

from __future__ import annotations

import threading
from typing import Any

_WARM_TEXT = "warm up: ASCII, déjà vu, 国语 ✓\tand a line long enough to wrap " * 4


def warm_up(
    *, profile: Any = "anthropic", shape: Any = None, background: bool = False
) -> threading.Thread | None:
    """Load numba, the cached kernels, the fonts and the glyph atlas now.

    A fresh process spends about a second on its first render even with a warm
    numba cache (numba initialises its typing registries and imports scipy when
    it is installed). Call this when the harness starts, with ``background=True``
    to do it on a daemon thread, so a context overflow later renders in
    milliseconds. Returns the thread when ``background`` is set, else None.
    """

    def run() -> None:
        from glyphfold.render.api import render_text

        render_text(_WARM_TEXT, profile=profile, shape=shape)

    if not background:
        run()
        return None
    thread = threading.Thread(target=run, name="glyphfold-warm-up", daemon=True)
    thread.start()
    return thread
