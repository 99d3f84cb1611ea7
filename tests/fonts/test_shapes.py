"""Named shapes (render/shapes.py) and the ``glyphfold shapes`` command."""

from __future__ import annotations

import dataclasses
import json

import pytest

from glyphfold.cli import main
from glyphfold.errors import UnknownShapeError
from glyphfold.fonts.pixel import bundled_fonts
from glyphfold.render.config import page_size, resolve_setup
from glyphfold.render.profiles import PROFILES, get_profile
from glyphfold.render.shapes import MIN_LINE_PITCH_PX, SHAPES, Shape, get_shape, shape_names

from .conftest import built


def test_the_three_contract_shapes_exist() -> None:
    assert {"dense", "regular", "large"} <= set(shape_names())
    assert shape_names() == list(SHAPES)
    for name, shape in SHAPES.items():
        assert shape.name == name
        assert shape.line_pitch == shape.cell_h >= MIN_LINE_PITCH_PX
        assert shape.reason, f"{name} must say why it exists"


def test_shape_fonts_are_bundled_and_match_the_cell() -> None:
    """Each shape's font is shipped, fits the cell, and has the glyph box the shape claims."""
    for shape in SHAPES.values():
        assert shape.font in bundled_fonts()
        src = built(shape.font).source
        assert src.cell_h == shape.cell_h
        assert src.cell_w <= shape.cell_w
        assert src.glyph_w == shape.glyph_w
        assert src.cap_height + src.descent == shape.glyph_h


def test_profile_default_shapes_exist() -> None:
    for prof in PROFILES.values():
        assert get_shape(prof.default_shape).name == prof.default_shape


def test_get_shape_passes_a_shape_through() -> None:
    shape = SHAPES["dense"]
    assert get_shape(shape) is shape


@pytest.mark.parametrize("bad", ["huge", "", None, 3])
def test_unknown_shape_lists_the_valid_names(bad: object) -> None:
    with pytest.raises(UnknownShapeError, match="valid shapes: dense, regular, large"):
        get_shape(bad)  # type: ignore[arg-type]


def test_unknown_shape_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        get_shape("nope")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"cell_h": 8, "glyph_h": 7}, "line pitch must be >= 9 px"),
        ({"glyph_w": 9}, "glyph_w must be in 1..cell_w=8"),
        ({"glyph_h": 17}, "glyph_h must be in 1..cell_h=16"),
        ({"cell_w": 0}, "cell_w must be a positive int"),
        ({"bits": 3}, "bits must be one of"),
        ({"font": ""}, "font must name a bundled font"),
        ({"name": ""}, "shape name must be a non-empty string"),
        ({"line_pitch": 20}, "line_pitch must equal cell_h=16"),
    ],
)
def test_invalid_shapes_are_rejected_up_front(changes: dict, message: str) -> None:
    base = dataclasses.asdict(SHAPES["regular"])
    base.update(changes)
    if "cell_h" in changes:
        base["line_pitch"] = 0
    with pytest.raises(ValueError, match=message):
        Shape(**base)


def test_shape_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SHAPES["dense"].cell_w = 4  # type: ignore[misc]


def test_chars_per_page() -> None:
    dense = SHAPES["dense"]
    assert dense.cells_per_page(1568, 728) == (261, 72)
    assert dense.chars_per_page(1568, 728) == 18_792
    assert SHAPES["large"].chars_per_page(1568, 728) == 142 * 45


def test_cli_lists_every_shape_for_every_vision_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shapes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    vision = [p for p in PROFILES.values() if p.vision]
    assert len(rows) == len(SHAPES) * len(vision)
    for row in rows:
        prof, shape = get_profile(row["profile"]), get_shape(row["shape"])
        # the page as render_text draws it (margins, whole rows of cells), priced as billed
        setup = resolve_setup(profile=prof, shape=shape)
        assert row["chars_per_page"] == setup.config.cols * setup.config.rows
        assert row["page"] == list(page_size(setup, setup.config.rows))
        assert row["image_tokens_per_page"] == prof.cost(*row["page"])
        assert row["chars_per_image_token"] == pytest.approx(
            row["chars_per_page"] / row["image_tokens_per_page"], abs=0.01
        )
        assert row["profile_default"] == (prof.default_shape == shape.name)


def test_cli_page_is_the_page_render_writes(capsys: pytest.CaptureFixture[str]) -> None:
    """shapes said 1568x728 and 1,523 tokens while the pages written are 1568x720, 1,506."""
    from glyphfold.render.api import render_text

    assert main(["shapes", "--profile", "anthropic", "--shape", "regular", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    page = render_text("x\n" * 100, profile="anthropic", shape="regular").pages[0]
    assert row["page"] == [page.width, page.height] == [1568, 720]
    assert row["image_tokens_per_page"] == page.image_tokens == 1506


def test_cli_table_and_filters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shapes", "--profile", "anthropic", "--shape", "dense", "--why"]) == 0
    out = capsys.readouterr().out
    body = [line for line in out.splitlines() if line.startswith("dense ")]
    assert len(body) == 1
    assert "18,318" in body[0] and "anthropic" in body[0]  # 258 x 71 cells inside the margins
    assert "dense: Readers with strong vision" in out


def test_cli_reports_chars_per_token_on_real_text(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 15: chars per image token achieved on a transcript, not only on a full grid."""
    from glyphfold.render.api import render_text

    text = ("def f(x):\n    return x + 1\n\n" * 400) + ("short line\n" * 300)
    path = tmp_path / "t.txt"
    path.write_text(text)
    argv = ["shapes", "--profile", "anthropic", "--shape", "regular", "--text", str(path)]
    assert main([*argv, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["real_chars"] == len(text)
    # the numbers are the renderer's own: the same text rendered costs the same
    for key, reflow in (("", True), ("_lines_kept", False)):
        tokens = render_text(text, profile="anthropic", shape="regular", reflow=reflow).image_tokens
        assert row[f"real_image_tokens{key}"] == tokens
    # short lines waste the rest of their row: keeping lines carries far fewer chars
    assert row["real_chars_per_image_token_lines_kept"] < row["real_chars_per_image_token"]
    assert row["real_chars_per_image_token_lines_kept"] < row["chars_per_image_token"]
    assert main(argv) == 0
    assert "chars per image token achieved on 1 transcript(s)" in capsys.readouterr().out
    assert main(["shapes", "--text", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["shapes", "--profile", "nope"], "unknown profile 'nope'"),
        (["shapes", "--shape", "nope"], "unknown shape 'nope'"),
        (["shapes", "--profile", "text-only"], "has no vision"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_public_names_resolve_lazily() -> None:
    import glyphfold

    assert glyphfold.get_shape("large") is SHAPES["large"]
    assert glyphfold.shape_names() == shape_names()
    assert glyphfold.Shape is Shape
    assert glyphfold.bundled_fonts() == bundled_fonts()
    assert {"Shape", "get_shape", "shape_names", "bundled_fonts"} <= set(dir(glyphfold))


def test_cli_prices_a_custom_page_and_flags_downscaling(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shapes", "--page", "1000x500", "--shape", "regular", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for row in rows:
        prof = get_profile(row["profile"])
        setup = resolve_setup(profile=prof, shape="regular", page=(1000, 500))
        assert row["page"] == list(page_size(setup, setup.config.rows))
        assert row["chars_per_page"] == setup.config.cols * setup.config.rows
        assert row["image_tokens_per_page"] == prof.cost(*row["page"])
        assert row["native"] == prof.fits(*row["page"])
    assert main(["shapes", "--page", "4000x4000", "--profile", "anthropic"]) == 0
    assert "!" in capsys.readouterr().out  # Claude's standard tier downscales a 4000 px page
    assert main(["shapes", "--page", "12"]) == 2
    assert "page must look like WxH" in capsys.readouterr().err
