"""``glyphfold import``: load a history or a session-tree dump into a transcript store."""

from __future__ import annotations

import argparse

from glyphfold.commands._store_args import add_db_argument

HELP = "import a wire-format history or an `export --tree` dump as a new conversation"
DESCRIPTION = """\
Import a wire-format history (one commit per turn) or an `export --tree` dump as
a new conversation. Orphan tool calls/results in a plain history are repaired
first, and the repair is reported. Reference: docs/cli.md#import, docs/store.md."""
EPILOG = "exit codes: 0 imported; 2 bad input (nothing is imported) or a bad --db"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    add_db_argument(parser)
    parser.add_argument(
        "file",
        metavar="FILE",
        help="JSON file ('-' for stdin): an OpenAI/Anthropic history, or a glyphfold tree dump",
    )
    parser.add_argument("--title", default=None, help="title of the new conversation")


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._history_io import read_json, report_sweep, sweep
    from glyphfold.commands._progress import progress
    from glyphfold.commands._term import say
    from glyphfold.compaction.history.messages import coerce
    from glyphfold.compaction.store import open_store
    from glyphfold.compaction.store.dump import DUMP_FORMAT
    from glyphfold.errors import HistoryFormatError

    with progress(f"reading {args.file}"):
        data, label = read_json(args.file)
    is_dump = isinstance(data, dict) and data.get("format") == DUMP_FORMAT
    if not is_dump:
        if not isinstance(data, list | dict):
            msg = f"{label}: a history is a JSON list of messages or an object with 'messages'"
            raise HistoryFormatError(msg)
        # the store keeps plain text without a format; the sweep finds no orphans in it
        h, restore = coerce(data, plain="openai")
        swept, repaired = sweep(h)
        report_sweep(repaired)
        data = restore(swept)
    with progress("importing"), open_store(args.db) as store:
        if is_dump:
            conversation = store.load(data, title=args.title)
        else:
            conversation = store.import_history(data, title=args.title)
        count = store.conversation(conversation).message_count
    say(f"imported {count:,} messages as conversation {conversation}")  # the result: always
    return 0
