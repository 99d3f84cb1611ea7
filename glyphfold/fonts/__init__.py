"""Finding fonts, rasterising glyphs, the project's own pixel fonts (glyphfold.fonts)."""
