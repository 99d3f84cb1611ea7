"""Provider profiles: image-token formulas, resize rules, limits, registry (SPEC §5.4).

Every expectation below is computed by hand from the provider's published
formula (sources in ``glyphfold.render.profiles``); the arithmetic is in the table.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from glyphfold.errors import UnknownProfileError
from glyphfold.render import profiles as P
from glyphfold.render.profiles import (
    AreaPricing,
    PatchPricing,
    Profile,
    cost,
    get_profile,
    profile_names,
)
from tests.render.profile_contract import contract_profiles, profile_problems

CONTRACT_NAMES = [
    "anthropic",
    "anthropic-hires",
    "openai",
    "openai-tile",
    "gemini-2",
    "gemini-3",
    "qwen-vl",
    "text-only",
]

# (profile, width, height, expected tokens, arithmetic)
COST_TABLE = [
    # Anthropic standard: ceil(w*h/750) when long edge <= 1568 and w*h <= 1.15 MP
    ("anthropic", 1000, 1000, 1334, "1,000,000/750 = 1333.3 -> 1334"),
    ("anthropic", 1568, 728, 1523, "1,141,504/750 = 1522.005 -> 1523"),
    ("anthropic", 750, 1, 1, "750/750 = 1"),
    ("anthropic", 751, 1, 2, "751/750 = 1.001 -> 2"),
    ("anthropic", 200, 200, 54, "40,000/750 = 53.3 -> 54"),
    # over 1.15 MP: s = sqrt(1,150,000/4,000,000) = 0.53619; 2000*s = 1072.38 -> 1072
    ("anthropic", 2000, 2000, 1533, "1072*1072 = 1,149,184; /750 = 1532.2 -> 1533"),
    # long edge over 1568: s = 1568/3136 = 0.5 -> 1568x100
    ("anthropic", 3136, 200, 210, "1568*100 = 156,800; /750 = 209.07 -> 210"),
    # hires: cap 2576 px long edge and 4784*750 = 3,588,000 px
    ("anthropic-hires", 2000, 1792, 4779, "3,584,000/750 = 4778.67 -> 4779"),
    ("anthropic-hires", 2576, 1392, 4782, "3,585,792/750 = 4781.06 -> 4782"),
    ("anthropic-hires", 1568, 728, 1523, "same price per pixel as standard"),
    # 5152x100: s = 2576/5152 = 0.5 -> 2576x50
    ("anthropic-hires", 5152, 100, 172, "2576*50 = 128,800; /750 = 171.7 -> 172"),
    # OpenAI patch (budget 2500, edge 2048): ceil(w/32)*ceil(h/32)
    ("openai", 1024, 1024, 1024, "32*32 patches"),
    ("openai", 1600, 1600, 2500, "50*50 patches = the budget exactly"),
    ("openai", 100, 33, 8, "ceil(100/32)=4 * ceil(33/32)=2"),
    # 1800x2400: 57*75 = 4275 > 2500; s = sqrt(1024*2500/4,320,000) = 0.769800;
    # 1385.64/32 = 43.30 -> 43 (0.99305), 1847.52/32 = 57.74 -> 57 (0.98727);
    # s' = 0.769800*0.98727 = 0.760000 -> 1368x1824 -> 43*57 = 2451
    ("openai", 1800, 2400, 2451, "43*57 patches after the two shrinks"),
    # 4096x1024: edge cap 2048/4096 = 0.5 -> 2048x512 = 64*16 = 1024 patches
    ("openai", 4096, 1024, 1024, "64*16 patches after the 2048 px edge cap"),
    ("openai-original", 3200, 3200, 10000, "100*100 patches = the original budget"),
    ("openai-original", 3000, 2000, 5922, "ceil(3000/32)=94 * ceil(2000/32)=63"),
    # OpenAI tile: 85 + 170 * tiles after fit-2048 and short-side-768
    ("openai-tile", 1024, 1024, 765, "-> 768x768, 2*2 tiles: 85 + 680"),
    ("openai-tile", 2048, 4096, 1105, "-> 1024x2048 -> 768x1536, 2*3 tiles: 85 + 1020"),
    ("openai-tile", 2048, 768, 1445, "no resize, 4*2 tiles: 85 + 1360"),
    ("openai-tile", 512, 512, 255, "1 tile: 85 + 170"),
    ("openai-tile", 513, 512, 425, "2*1 tiles: 85 + 340"),
    # Gemini 2.x: 258 up to 384x384, else 258 * ceil(w/768) * ceil(h/768)
    ("gemini-2", 384, 384, 258, "small image"),
    ("gemini-2", 385, 100, 258, "1*1 tile of 768"),
    ("gemini-2", 1536, 1536, 1032, "2*2 tiles: 4*258"),
    ("gemini-2", 1000, 800, 1032, "ceil(1000/768)=2 * ceil(800/768)=2"),
    # 6144x768 -> fit 3072: s = 0.5 -> 3072x384 -> 4*1 tiles
    ("gemini-2", 6144, 768, 1032, "4*1 tiles after the 3072 fit"),
    # Gemini 3: flat per image (media_resolution=high)
    ("gemini-3", 10, 10, 1120, "flat"),
    ("gemini-3", 1536, 1536, 1120, "flat"),
    ("gemini-3", 4000, 3000, 1120, "flat, whatever the size"),
    # Qwen2.5-VL: round sides to 28, one token per 28x28, + 2 markers
    ("qwen-vl", 1568, 616, 1234, "56*22 + 2"),
    ("qwen-vl", 100, 100, 18, "round(3.57)=4 -> 112x112: 4*4 + 2"),
    ("qwen-vl", 42, 42, 6, "round(1.5)=2 (banker's) -> 56x56 = 3136 = min: 2*2 + 2"),
    ("qwen-vl", 70, 70, 6, "round(2.5)=2 (banker's) -> 56x56: 2*2 + 2"),
    # 28x28 = 784 < min 3136: beta = sqrt(3136/784) = 2 -> ceil(56/28)*28 = 56
    ("qwen-vl", 28, 28, 6, "upscaled to 56x56: 2*2 + 2"),
    # 2000x2000: 71*71*784 = 3,952,144 > 1,003,520; beta = sqrt(4e6/1,003,520) = 1.99649;
    # 2000/1.99649/28 = 35.78 -> 35 -> 980x980
    ("qwen-vl", 2000, 2000, 1227, "35*35 + 2"),
]


@pytest.mark.parametrize(
    ("name", "width", "height", "expected", "arithmetic"),
    COST_TABLE,
    ids=[f"{r[0]}-{r[1]}x{r[2]}" for r in COST_TABLE],
)
def test_cost_matches_hand_computed_formula(name, width, height, expected, arithmetic):
    """SPEC §5.4: each provider's published formula, resize included."""
    assert cost(name, width, height) == expected, arithmetic
    assert get_profile(name).cost(width, height) == expected


# (profile, size in, size the encoder sees)
RESIZE_TABLE = [
    ("anthropic", (2000, 2000), (1072, 1072)),
    ("anthropic", (3136, 200), (1568, 100)),
    ("anthropic", (1568, 733), (1568, 733)),  # 1,149,344 px <= 1.15 MP
    ("anthropic", (1568, 734), (1567, 733)),  # 1,150,912 px > 1.15 MP
    ("openai", (1800, 2400), (1368, 1824)),
    ("openai-tile", (2048, 4096), (768, 1536)),
    ("gemini-2", (6144, 768), (3072, 384)),
    ("gemini-3", (3072, 1536), (1536, 768)),
    ("qwen-vl", (100, 100), (112, 112)),
    ("qwen-vl", (2000, 2000), (980, 980)),
]


@pytest.mark.parametrize(("name", "size", "seen"), RESIZE_TABLE)
def test_resize_before_pricing(name, size, seen):
    """SPEC §5.4: a page outside the provider's box is resized before it is priced."""
    profile = get_profile(name)
    assert profile.resized(*size) == seen
    assert profile.fits(*size) is (size == seen)


def test_openai_doc_example_with_gpt41_mini_budget():
    """OpenAI's own worked example: 1536-patch budget, 1800x2400 -> 1452 patches.

    s = sqrt(1024*1536/4,320,000) = 0.60340; 1086.1/32 = 33.94 -> 33 (0.97229),
    1448.2/32 = 45.26 -> 45 (0.99433); s' = 0.58668 -> 1056x1408 -> 33*44 = 1452;
    with the gpt-4.1-mini multiplier 1.62: ceil(1452*1.62) = ceil(2352.24) = 2353.
    """
    mini = PatchPricing(patch_px=32, max_patches=1536, max_edge_px=2048, multiplier=1.62)
    assert mini.resize(1800, 2400) == (1056, 1408)
    assert mini.tokens(1800, 2400) == 2353
    assert dataclasses.replace(mini, multiplier=1.0).tokens(1800, 2400) == 1452
    assert mini.tokens(1024, 1024) == math.ceil(1024 * 1.62)  # 1658.88 -> 1659


def test_contract_profile_names_are_registered():
    """The cross-team contract names all resolve; anthropic is the default."""
    names = profile_names()
    for name in CONTRACT_NAMES:
        assert name in names
    assert P.DEFAULT_PROFILE == "anthropic"
    assert names == list(P.PROFILES)


def test_unknown_profile_lists_valid_names():
    """Dispatch ends in an explicit error naming every valid profile."""
    with pytest.raises(UnknownProfileError) as info:
        get_profile("claude")
    for name in CONTRACT_NAMES:
        assert name in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownProfileError):
        cost("nope", 10, 10)
    with pytest.raises(UnknownProfileError):
        get_profile(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, -1568])
def test_non_positive_sizes_raise_with_value(bad):
    """Non-positive sizes are rejected and the message carries the value."""
    with pytest.raises(ValueError, match=str(bad)):
        cost("anthropic", bad, 100)
    with pytest.raises(ValueError, match=str(bad)):
        get_profile("openai").cost(100, bad)
    with pytest.raises(ValueError, match=str(bad)):
        get_profile("qwen-vl").resized(bad, 100)


@pytest.mark.parametrize("bad", [1.5, "100", None, True])
def test_non_int_sizes_raise(bad):
    with pytest.raises(ValueError, match="int"):
        cost("gemini-2", bad, 100)


def test_text_only_profile_prices_no_image():
    """A text-only model never silently prices an image at zero."""
    p = get_profile("text-only")
    assert p.vision is False
    assert p.max_images_per_request == 0
    assert p.page_tokens == 0
    with pytest.raises(ValueError, match="vision"):
        p.cost(100, 100)


@pytest.mark.parametrize("name", contract_profiles())
def test_every_registered_profile_keeps_the_contract(name):
    """Every profile of the registry (not a hand-written list) keeps the contract."""
    assert profile_problems(get_profile(name)) == []


def test_a_broken_profile_breaks_the_contract():
    """A request limit smaller than one image (it passed 243 tests, issue 24)."""
    base = get_profile("anthropic")
    broken = dataclasses.replace(base, name="broken", max_request_bytes=base.max_image_bytes // 2)
    assert any("more than one image" in p for p in profile_problems(broken))


@pytest.mark.parametrize("name", contract_profiles(vision=True))
def test_vision_profile_invariants(name):
    """Every page inside the no-downscale box reaches the encoder unresized."""
    p = get_profile(name)
    assert p.vision
    m = p.page_multiple_px
    box_w = p.max_page_width - p.max_page_width % m
    box_h = p.max_page_height - p.max_page_height % m
    for w, h in [(box_w, box_h), (box_w, m * 8), (m * 8, box_h), p.default_page]:
        assert p.fits(w, h), (w, h)
    assert p.default_page[0] <= p.max_page_width and p.default_page[1] <= p.max_page_height
    assert p.default_page[0] % m == 0 and p.default_page[1] % m == 0
    assert p.default_shape in {"dense", "regular", "large"}
    assert p.default_bits in (1, 2, 4, 8)
    assert p.shape_reason
    assert p.max_image_bytes > 0 and p.max_request_bytes > p.max_image_bytes
    assert p.max_images_per_request >= 1
    assert p.context_window is None or p.context_window > 0
    assert p.page_tokens == p.cost(*p.default_page) > 0


def test_box_is_tight_for_area_and_patch_profiles():
    """One step past the box in area is resized (the box is the largest, not just safe)."""
    # 1568 x 734 = 1,150,912 px > 1,150,000
    assert not get_profile("anthropic").fits(1568, 734)
    assert not get_profile("anthropic").fits(1569, 100)
    # 1601 px -> 51 patches a side = 2601 > 2500
    assert not get_profile("openai").fits(1601, 1600)
    # short side 769 > 768
    assert not get_profile("openai-tile").fits(2048, 769)
    # qwen: not a multiple of 28 -> resampled
    assert not get_profile("qwen-vl").fits(1567, 616)


def test_profile_validation_names_bad_value():
    """Frozen, validated config: bad values raise with the value and the fix."""
    base = get_profile("anthropic")
    with pytest.raises(ValueError, match=r"default_bits.*3"):
        dataclasses.replace(base, default_bits=3)
    with pytest.raises(ValueError, match="1600x800"):
        dataclasses.replace(base, default_page=(1600, 800))
    with pytest.raises(ValueError, match="context_window"):
        dataclasses.replace(base, context_window=0)
    with pytest.raises(ValueError, match="max_images_per_request"):
        dataclasses.replace(base, max_images_per_request=0)
    with pytest.raises(ValueError, match="resized"):
        dataclasses.replace(
            base,
            pricing=AreaPricing(max_pixels=1_000_000),
            default_page=(1568, 728),
        )
    with pytest.raises(ValueError, match="px_per_token"):
        AreaPricing(px_per_token=0)
    with pytest.raises(ValueError, match="min_pixels"):
        P.QwenPricing(min_pixels=10**7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.name = "x"  # type: ignore[misc]


def test_profile_object_accepted_by_module_cost():
    """cost() takes a name or a Profile; a custom Profile prices with its own pricing."""
    custom = dataclasses.replace(
        get_profile("openai"),
        name="gpt-5.4-mini",
        pricing=PatchPricing(max_patches=2500, max_edge_px=2048, multiplier=1.2),
    )
    assert isinstance(custom, Profile)
    # 1600x1600 = 2500 patches * 1.2 = 3000
    assert cost(custom, 1600, 1600) == 3000
    assert get_profile(custom) is custom
    assert cost("openai", 1600, 1600) == 2500


def test_profiles_command_lists_every_profile(capsys):
    """``glyphfold profiles`` prints every profile; ``--json`` round-trips the numbers."""
    import argparse
    import json

    from glyphfold import cli
    from glyphfold.commands import profiles as command

    assert cli.COMMANDS["profiles"] == "glyphfold.commands.profiles"
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert command.run(parser.parse_args([])) == 0
    out = capsys.readouterr().out
    for name in CONTRACT_NAMES:
        assert name in out
    assert command.run(parser.parse_args(["--json"])) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["anthropic"]["page_tokens"] == 1523
    assert rows["anthropic"]["max_page"] == [1568, 728]
    assert rows["qwen-vl"]["page_tokens"] == 1102  # 55 * 20 + 2
    assert rows["text-only"]["vision"] is False


@pytest.mark.parametrize("name", contract_profiles(vision=True))
def test_default_shape_exists_and_fills_the_page(name):
    """Each default shape is registered and at least 60 columns x 20 rows fit the page."""
    from glyphfold.render.shapes import get_shape

    p = get_shape(get_profile(name).default_shape)
    width, height = get_profile(name).default_page
    cols, rows = width // p.cell_w, height // p.line_pitch
    assert p.line_pitch >= 9
    assert cols >= 60 and rows >= 20, (cols, rows)


@pytest.mark.parametrize("name", contract_profiles(vision=True))
def test_whole_cell_default_page_is_not_resized(name):
    """The page the renderer draws (whole cells of the default shape) keeps its size.

    The renderer crops the default page to whole cells; for qwen-vl that cropped
    page must still have sides that are multiples of 28 px, or smart_resize
    resamples every glyph.
    """
    from glyphfold.render.shapes import get_shape

    profile = get_profile(name)
    shape = get_shape(profile.default_shape)
    width, height = profile.default_page
    drawn = (width // shape.cell_w * shape.cell_w, height // shape.line_pitch * shape.line_pitch)
    assert profile.fits(*drawn), (drawn, profile.resized(*drawn))
