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

    Without it a process renders on the numpy path until the kernels pay for
    themselves (see :mod:`glyphfold.render.backend`). A long-running harness that
    will render a lot calls this at start-up, with ``background=True`` to do it on
    a daemon thread: the kernels then load (about a second of CPU with a warm
    cache, a few seconds to compile on a machine's first run) before a context
    overflow needs them, and every render after uses them. Returns the thread
    when ``background`` is set, else None.
    """

    def run() -> None:
        from glyphfold.render import backend
        from glyphfold.render.api import render_text

        backend.kernels()
        render_text(_WARM_TEXT, profile=profile, shape=shape)
        # the snapshot rung's options: whitespace folded, line breaks as a mark
        render_text(_WARM_TEXT, profile=profile, shape=shape, reflow=True, collapse=True)
        # a chunk's distinct code points come from a kernel on chunks of 4096+ chars
        from glyphfold.render.layout import Layout, LayoutConfig, to_codepoints

        lay = Layout("", LayoutConfig(cols=16, rows=1), kernels=True)
        lay.distinct(to_codepoints(_WARM_TEXT * 20))

    if not background:
        run()
        return None
    thread = threading.Thread(target=run, name="glyphfold-warm-up", daemon=True)
    thread.start()
    return thread
