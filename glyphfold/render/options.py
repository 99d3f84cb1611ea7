"""``RenderOptions``: the one frozen object of render options (issue 24).

``plan_text``, ``render_text``, ``iter_pages`` and ``resolve_setup`` take the same
options; they are one value here, built once and passed around whole (the
snapshot rung builds one per configuration, the CLI one per command line). The
keyword arguments of those functions stay: they build a ``RenderOptions`` (and,
given ``options=`` too, override the fields they set to a non-default value).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from glyphfold.errors import InputError
from glyphfold.render.encode import DEFAULT_LEVEL

if TYPE_CHECKING:
    from glyphfold.render.ink import InkSpans
    from glyphfold.render.profiles import Profile
    from glyphfold.render.shapes import Shape


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """How text becomes pages: geometry (profile, shape, font, cell, page, bits, margin),
    text rules (reflow, tab_size, collapse, ink) and encoding (level, max_image_bytes,
    keep_pixels, threads). ``None`` means "the profile's or shape's default"."""

    profile: str | Profile = "anthropic"
    shape: str | Shape | None = None
    font: str | os.PathLike[str] | None = None
    cell: str | Sequence[int] | None = None
    page: str | Sequence[int] | None = None
    bits: int | None = None
    reflow: bool = False
    tab_size: int = 8
    margin: int | None = None
    collapse: bool = False
    ink: InkSpans = ()
    level: int = DEFAULT_LEVEL
    max_image_bytes: int | None = None
    keep_pixels: bool = False
    # threads drawing and encoding pages while the layout runs ahead (the kernels and
    # deflate release the GIL); 1 by default: on a shared, loaded machine a second
    # thread measured slower (benchmarks/README.md, "Pages on two threads")
    threads: int = 1

    def setup_fields(self) -> dict[str, Any]:
        """The options that decide the page geometry and layout (``resolve_setup``'s)."""
        return {name: getattr(self, name) for name in SETUP_FIELDS}


FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RenderOptions))
SETUP_FIELDS = (
    "profile",
    "shape",
    "font",
    "cell",
    "page",
    "bits",
    "reflow",
    "tab_size",
    "margin",
    "collapse",
)
_DEFAULTS = RenderOptions()


def options_of(options: RenderOptions | None, **given: Any) -> RenderOptions:
    """``options`` (default: the defaults) with every field of ``given`` that is not at
    its default value put in; unknown names raise :class:`InputError`."""
    unknown = sorted(set(given) - set(FIELDS))
    if unknown:
        msg = f"unknown render option(s) {', '.join(unknown)}; known: {', '.join(FIELDS)}"
        raise InputError(msg)
    if options is None:
        return RenderOptions(**given)
    if not isinstance(options, RenderOptions):
        msg = f"options must be a RenderOptions, got {type(options).__name__}"
        raise InputError(msg)
    changed = {k: v for k, v in given.items() if not _is_default(k, v)}
    return dataclasses.replace(options, **changed) if changed else options


def _is_default(name: str, value: Any) -> bool:
    default = getattr(_DEFAULTS, name)
    try:
        return bool(value == default) and type(value) is type(default)
    except (TypeError, ValueError):  # e.g. an array compared elementwise
        return False
