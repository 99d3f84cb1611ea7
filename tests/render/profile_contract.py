"""What every provider profile must satisfy, as one function the tests run over the registry.

The invariant tests used to loop over a hand-written list of names (which left out
``openai-original``); a profile registered without being listed was never checked, so a
broken one (a request limit smaller than one page image) passed the suite (issue 24).
:func:`contract_profiles` reads the registry, :func:`profile_problems` says what is wrong.
"""

from __future__ import annotations

from glyphfold.render.profiles import Profile, get_profile, profile_names
from glyphfold.render.shapes import get_shape


def contract_profiles(*, vision: bool | None = None) -> list[str]:
    """Every registered profile (only the vision ones, or only the others, when asked)."""
    names = profile_names()
    if vision is None:
        return names
    return [n for n in names if get_profile(n).vision is vision]


def profile_problems(p: Profile) -> list[str]:
    """What breaks the contract in ``p`` (empty: nothing)."""
    out: list[str] = []
    if p.context_window is not None and p.context_window <= 0:
        out.append(f"context_window must be positive, got {p.context_window}")
    if not p.vision:
        if p.max_images_per_request != 0 or p.page_tokens != 0:
            out.append("a text-only profile takes no image and prices none")
        return out
    m = p.page_multiple_px
    box_w = p.max_page_width - p.max_page_width % m
    box_h = p.max_page_height - p.max_page_height % m
    for w, h in [(box_w, box_h), (box_w, m * 8), (m * 8, box_h), p.default_page]:
        if not p.fits(w, h):
            out.append(f"a {w}x{h} page inside the no-downscale box is resized")
    if p.default_page[0] > p.max_page_width or p.default_page[1] > p.max_page_height:
        out.append(f"default page {p.default_page} is outside the box")
    if p.default_page[0] % m or p.default_page[1] % m:
        out.append(f"default page {p.default_page} is not a multiple of {m} px")
    if p.default_bits not in (1, 2, 4, 8):
        out.append(f"default_bits {p.default_bits} is not 1, 2, 4 or 8")
    if not p.shape_reason:
        out.append("the default shape has no reason")
    if p.max_image_bytes <= 0 or p.max_request_bytes <= p.max_image_bytes:
        out.append(
            f"a request ({p.max_request_bytes:,} bytes) must hold more than one image "
            f"({p.max_image_bytes:,} bytes)"
        )
    if p.max_images_per_request < 1:
        out.append("a vision profile must take at least one image per request")
    if not p.page_tokens == p.cost(*p.default_page) > 0:
        out.append("the default page's price is not its cost")
    shape = get_shape(p.default_shape)
    width, height = p.default_page
    cols, rows = width // shape.cell_w, height // shape.line_pitch
    if cols < 60 or rows < 20:
        out.append(f"the default shape fits only {cols}x{rows} cells on the default page")
    drawn = (cols * shape.cell_w, rows * shape.line_pitch)
    if not p.fits(*drawn):
        out.append(f"the drawn page {drawn} (whole cells) is resized to {p.resized(*drawn)}")
    return out
