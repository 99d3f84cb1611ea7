"""Text -> glyph cells -> pixel pages -> PNG (installed as glyphfold.render)."""
