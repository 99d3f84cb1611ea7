"""Baseline (a) of ``glyphfold bench`` (shipped as ``glyphfold.commands._bench_pillow``).

It ships with the package so that ``glyphfold bench`` runs from an install; this
name stays for scripts that imported it from the source tree.
"""

from glyphfold.commands._bench_pillow import count_pages, render_pillow, wrapped_lines

__all__ = ["count_pages", "render_pillow", "wrapped_lines"]
