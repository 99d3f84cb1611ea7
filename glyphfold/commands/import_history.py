"""``glyphfold import``: load a history or a session-tree dump into a transcript store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from glyphfold.commands._store_args import add_db_argument

HELP = "import a wire-format history or an `export --tree` dump as a new conversation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    parser.add_argument(
        "file",
        metavar="FILE",
        help="JSON file ('-' for stdin): an OpenAI/Anthropic history, or a glyphfold tree dump",
    )
    parser.add_argument("--title", default=None, help="title of the new conversation")


def run(args: argparse.Namespace) -> int:
    from glyphfold.compaction.store import open_store
    from glyphfold.compaction.store.dump import DUMP_FORMAT
    from glyphfold.errors import InputError

    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{args.file} is not JSON: {exc}"
        raise InputError(msg) from None
    with open_store(args.db) as store:
        if isinstance(data, dict) and data.get("format") == DUMP_FORMAT:
            conversation = store.load(data, title=args.title)
        else:
            conversation = store.import_history(data, title=args.title)
        count = store.conversation(conversation).message_count
    print(f"imported {count} messages as conversation {conversation}")
    return 0
