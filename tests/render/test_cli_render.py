"""``glyphfold render``: outputs, JSON summary, and one-line errors for bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from PIL import Image

from glyphfold.cli import main


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("glyphfold: error: ")
    return lines[0]


def test_no_input_renders_the_sample_into_default_dir(tmp_path, monkeypatch, capsys):
    """`glyphfold render` with no args writes ./glyphfold-out/page-0001.png."""
    monkeypatch.chdir(tmp_path)
    assert main(["render"]) == 0
    page = tmp_path / "glyphfold-out" / "page-0001.png"
    assert page.is_file()
    assert Image.open(page).size[0] > 100
    assert "sample transcript" in capsys.readouterr().out


def test_json_summary_has_the_documented_fields(tmp_path, capsys, dejavu):
    """--json prints one object with pages, chars, tokens, ratio, missing glyphs, files."""
    src = tmp_path / "in.txt"
    src.write_text("hello\nworld ✓\n" * 50, encoding="utf-8")
    out = tmp_path / "out"
    args = ["render", str(src), "--out", str(out), "--font", str(dejavu)]
    rc = main([*args, "--cell", "8x16", "--page", "400x160", "--bits", "2", "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    for key in (
        "pages",
        "chars",
        "width",
        "height",
        "image_tokens",
        "text_tokens_estimate",
        "chars_per_image_token",
        "missing_glyphs",
        "elapsed_ms",
        "files",
    ):
        assert key in data, key
    assert data["chars"] == len(src.read_text(encoding="utf-8"))
    assert data["text_tokens_estimate"] == (data["chars"] + 3) // 4
    assert data["width"] == 400 and data["pages"] == len(data["files"]) > 1
    assert data["files"][0].endswith("page-0001.png")
    assert Image.open(data["files"][0]).mode in ("L", "I", "P", "LA", "1")


def test_shapes_change_the_cell(tmp_path, capsys):
    """--shape picks the cell and font: dense pages hold more characters per token."""
    src = tmp_path / "in.txt"
    src.write_text("The quick brown fox jumps over the lazy dog. " * 200, encoding="utf-8")
    ratios = {}
    for shape in ("dense", "regular", "large"):
        out = tmp_path / shape
        assert main(["render", str(src), "--out", str(out), "--shape", shape, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["shape"] == shape
        ratios[shape] = data["chars_per_image_token"]
    assert ratios["dense"] > ratios["regular"] > ratios["large"]


def test_stdin_and_reflow(tmp_path, monkeypatch, capsys, dejavu):
    """`-` reads UTF-8 from stdin; --reflow folds lines."""
    text = "a\nb\nc\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    out = tmp_path / "o"
    assert (
        main(["render", "-", "--out", str(out), "--font", str(dejavu), "--reflow", "--json"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["pages"] == 1 and data["height"] == 16 + 2 * 8  # one row + its margins


@pytest.mark.parametrize(
    ("setup", "extra", "pattern"),
    [
        ("empty", [], "empty"),
        ("blank", [], "empty"),
        ("binary", [], "binary"),
        ("latin1", [], "not valid UTF-8"),
        ("missing", [], "not found"),
        ("ok", ["--profile", "nope"], "unknown profile"),
        ("ok", ["--shape", "nope"], "unknown shape"),
        ("ok", ["--page", "4000x4000"], "downscaled"),
        ("ok", ["--cell", "0x16"], "positive"),
        ("ok", ["--cell", "big"], "WxH"),
        ("ok", ["--page", "40x8"], "at least 12 columns"),
        ("ok", ["--font", "/nonexistent/font.ttf"], "font"),
        ("unwritable", [], "is not a folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, setup, extra, pattern):
    """Each bad input: exit 2 and a single `glyphfold: error:` line, no traceback."""
    src = tmp_path / "in.txt"
    out = tmp_path / "out"
    data = {
        "empty": b"",
        "blank": b"  \n\n",
        "binary": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "latin1": "caf\xe9".encode("latin-1"),
        "ok": b"hello",
        "unwritable": b"hello",
    }.get(setup)
    if data is not None:
        src.write_bytes(data)
    if setup == "unwritable":
        (tmp_path / "afile").write_text("x")
        out = tmp_path / "afile" / "sub"
    rc = main(["render", str(src), "--out", str(out), *extra])
    assert rc == 2
    assert pattern in _one_line_error(capsys)


def test_subprocess_error_has_no_traceback(tmp_path):
    """A real process: missing input -> exit 2, one stderr line, nothing on stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "glyphfold", "render", str(tmp_path / "missing.txt")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().startswith("glyphfold: error: input file not found")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_bench_runs_and_reports_the_comparison(capsys):
    """`glyphfold bench` (tiny run) prints every figure of the comparison table as JSON."""
    args = ["bench", "--chars", "4000", "--baseline-pages", "1", "--repeat", "1"]
    code = main([*args, "--no-fresh", "--json"])
    data = json.loads(capsys.readouterr().out)
    # a tiny run is noise: its targets may be missed, and then the exit is 1 (issue 24)
    assert code == (0 if all(t["met"] for t in data["targets"]) else 1)
    assert data["chars"] == 4000
    for key in ("speedup_vs_pillow", "pixel_stage_ms_per_page", "memset_ms_per_page"):
        assert data[key] > 0
    assert data["pillow"]["pages_timed"] == 1
    assert data["glyphfold"]["pages"] >= 1


def test_bench_kernel_list_names_real_kernels():
    """Every kernel the fresh-process check inspects exists in the kernel module."""
    from glyphfold.commands._bench_fresh import KERNELS
    from glyphfold.render import _kernels as K

    for name in KERNELS:
        assert callable(getattr(K, name, None)), name


def test_bench_fresh_processes_report_cpu(tmp_path):
    """The fresh-process runs read whole-process CPU; small first renders skip numba."""
    from glyphfold.commands import _bench_fresh as F

    runs = F.render_runs("first page\n" * 50, profile="anthropic", repeat=1)
    for r in runs.values():
        assert r.cpu_s > 0 and r.wall_s > 0
        assert r.info["backend"] == "numpy" and not r.info["numba_imported"]
    base = F.baseline_runs(repeat=1)
    assert set(base) == set(F.BASELINES) and all(r.cpu_s > 0 for r in base.values())


def _cheaper_unbounded(text, options, image_tokens):
    """The cheaper-option search as it was: every candidate planned whole."""
    from glyphfold.render.api import plan_text

    text_tokens = (len(text) + 3) // 4
    best = None
    for shape in ("dense", "regular", "large"):
        for reflow in (False, True):
            if shape == options["shape"] and reflow == options["reflow"]:
                continue
            cost = plan_text(text, **{**options, "shape": shape, "reflow": reflow}).image_tokens
            flags = f"--shape {shape}"
            if reflow != options["reflow"]:
                flags += " --reflow" if reflow else " --no-reflow"
            if cost < image_tokens and (best is None or cost < best[0]):
                best = (cost, flags)
    if best is not None and best[0] < text_tokens:
        return f"{best[1]} costs ~{best[0]:,} image tokens"
    return f"send it as text (~{text_tokens:,} tokens)"


@pytest.mark.parametrize(
    ("text", "shape", "reflow"),
    [
        ("x = 1\n" * 3000, None, False),  # short lines: reflow wins
        ("word " * 4000, "large", True),  # dense text in large cells: a smaller shape wins
        ("a\n" * 500, "dense", True),  # nothing beats the text itself
    ],
)
def test_cheaper_option_plans_no_further_than_the_price_to_beat(monkeypatch, text, shape, reflow):
    """The warning's search names the option the whole-plan search named, but each
    candidate's plan stops at the price it must beat (issue 22: the check is cheap)."""
    from glyphfold.commands import render as R
    from glyphfold.render import api
    from glyphfold.render.api import render_text

    options = {
        "profile": "anthropic",
        "shape": shape,
        "font": None,
        "cell": None,
        "page": None,
        "bits": None,
        "reflow": reflow,
        "collapse": False,
        "margin": None,
    }
    image_tokens = render_text(text, **options).image_tokens
    expected = _cheaper_unbounded(text, options, image_tokens)
    bounds = []
    real = api.plan_text

    def spy(t, **kw):
        bounds.append(kw.get("max_tokens"))
        return real(t, **kw)

    monkeypatch.setattr(api, "plan_text", spy)
    assert R.cheaper_option(text, options, image_tokens) == expected
    assert bounds and all(b is not None and b < image_tokens for b in bounds)


def test_a_render_imports_only_what_its_first_page_needs(tmp_path):
    """A fresh `glyphfold render` imports no other command's module and not numpy.ma
    (np.unique's first call imported it: ~40 ms of a cold first page; issue 22)."""
    src = tmp_path / "in.txt"
    src.write_text("a first page of text, 国语 ✓\n" * 200, encoding="utf-8")
    code = (
        "import sys; from glyphfold.cli import main; "
        f"main(['render', {str(src)!r}, '--out', {str(tmp_path / 'o')!r}, '--quiet']); "
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "glyphfold.commands.render" in out
    others = [
        m
        for m in out
        if m.startswith("glyphfold.commands.")
        and not m.startswith(("glyphfold.commands.render", "glyphfold.commands._"))
    ]
    assert not others, others
    assert "numpy.ma" not in out
    assert "concurrent.futures" not in out  # one thread: no pool
    assert (tmp_path / "o" / "page-0001.png").is_file()


def test_the_cli_keeps_openblas_to_one_thread_unless_told(tmp_path):
    """numpy's OpenBLAS threads spin when numpy loads (~0.1 s of CPU per fresh run): the
    CLI's own process asks for one, before numpy loads; a user's setting wins."""
    import os

    src = tmp_path / "in.txt"
    src.write_text("one page\n", encoding="utf-8")
    code = (
        "import os, sys; from glyphfold.cli import main; "
        f"main(['render', {str(src)!r}, '--out', {str(tmp_path / 'o')!r}, '--quiet']); "
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout
    assert out.split()[-1] == "1"
    env["OPENBLAS_NUM_THREADS"] = "3"
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout
    assert out.split()[-1] == "3"


def test_threaded_render_writes_the_same_pages(tmp_path):
    """`render --threads 2` renders on a thread of its own while the files are written:
    the same page files as one thread."""
    src = tmp_path / "in.txt"
    src.write_text("threads write pages: 国语 ✓\tand a line long enough\n" * 900, "utf-8")
    assert main(["render", str(src), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    assert main(["render", str(src), "--out", str(tmp_path / "b"), "--threads", "2", "-q"]) == 0
    a = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(a) > 3 and a == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in a:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_rendered_ahead_raises_the_renders_error_and_stops_early():
    """An error of the render reaches the writer; a writer that stops stops the render."""
    from glyphfold.commands.render import rendered_ahead

    def boom():
        yield 1
        raise ValueError("page 2 failed")

    got = []
    with pytest.raises(ValueError, match="page 2 failed"):
        for x in rendered_ahead(boom(), depth=2):
            got.append(x)
    assert got == [1]
    made = []

    def endless():
        while True:
            made.append(1)
            yield len(made)

    it = rendered_ahead(endless(), depth=3)
    assert next(it) == 1
    it.close()  # joins the producer: it stops at its next put
    n = len(made)
    assert n <= 6 and len(made) == n
