"""The project's own pixel fonts (BDF sources)."""
