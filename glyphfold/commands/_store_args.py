"""The ``--db`` option shared by the transcript-store commands (tree, sessions, export, import,
check)."""

from __future__ import annotations

import argparse


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--db URL`` (default: $GLYPHFOLD_DB, else the user's data directory)."""
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None,
        help="store URL (sqlite:///path.db, postgresql://...; add ?lock_timeout_s=N to wait "
        "N s behind another writer, default 30); default $GLYPHFOLD_DB "
        "or ~/.local/share/glyphfold/transcripts.db",
    )
