"""The demo's index.html shows pages pixel for pixel, checked in headless Chromium (issue 14).

Below ~1650 px of window width the report used to shrink pages to the window with
nearest-neighbour sampling, which drops glyph strokes ("glyphfolc"). A screenshot
at 1280 and 1920 px must hold the page's pixels exactly.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from glyphfold.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEIGHT = 8000  # tall enough to hold the first page below the tables
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (installed by .ci/run)"),
]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    assert list((out / "pages").glob("page-*.png")), "the demo's default shows snapshot pages"
    return out


def _screenshot(url: str, width: int, tmp_path) -> np.ndarray:
    shot = tmp_path / f"shot-{width}.png"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / f'profile-{width}'}",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--window-size={width},{HEIGHT}",
        f"--screenshot={shot}",
        url,
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    return np.asarray(Image.open(shot).convert("L"))


def _find(screen: np.ndarray, page: np.ndarray) -> tuple[int, int]:
    """Top-left of ``page`` in ``screen``: its left 256 columns must match there whole."""
    r0 = int(np.argmax((page[:, :256] < 128).sum(axis=1)))
    needle = page[r0, :256].tobytes()
    left = page[:, :256]
    for y in range(r0, screen.shape[0] - page.shape[0] + r0 + 1):
        row = screen[y].tobytes()
        x = row.find(needle)
        while x >= 0:
            top = y - r0
            if np.array_equal(screen[top : top + page.shape[0], x : x + 256], left):
                return top, x
            x = row.find(needle, x + 1)
    pytest.fail("the page's pixels are not in the screenshot (scaled or hidden)")


@pytest.mark.parametrize("width", [1280, 1920])
def test_pages_are_shown_one_to_one(demo_dir, tmp_path, width):
    """Page 1 appears unscaled: every visible pixel equals the PNG's."""
    page = np.asarray(Image.open(demo_dir / "pages" / "page-0001.png").convert("L"))
    screen = _screenshot((demo_dir / "index.html").as_uri(), width, tmp_path)
    y, x = _find(screen, page)
    h = min(page.shape[0], screen.shape[0] - y)
    w = min(page.shape[1], screen.shape[1] - x)
    same = (screen[y : y + h, x : x + w] == page[:h, :w]).all(axis=0)
    shown = int(np.argmin(same)) if not same.all() else w  # columns equal from the left
    assert h == page.shape[0]
    # the figure clips the page at the window's edge (scroll sideways), never scales it
    assert shown >= min(page.shape[1], width - 2 * x), (shown, width, x)
    if width >= 1920:
        assert shown == page.shape[1]  # the whole page fits: no sideways scroll
