"""``glyphfold check``: report what is inconsistent in a transcript store.

Exit codes: 0 the store is sound; 1 it is damaged or inconsistent (each problem
on its own line); 2 bad input (no store there, a bad URL, not a glyphfold store).
"""

from __future__ import annotations

import argparse

from glyphfold.commands._store_args import add_db_argument

HELP = "check a transcript store: damaged pages, broken parent chains, half imports"

EXIT_OK = 0
EXIT_INCONSISTENT = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)


def run(args: argparse.Namespace) -> int:
    from glyphfold.commands._term import say
    from glyphfold.commands.store_view import open_existing
    from glyphfold.compaction.store.url import parse_store_url
    from glyphfold.errors import CorruptStoreError, NotFoundError

    try:
        store = open_existing(args.db)
    except CorruptStoreError as exc:  # too damaged to open: that is the answer
        say(f"glyphfold check: 1 problem\n  {exc}")
        return EXIT_INCONSISTENT
    if store is None:
        msg = f"no store at {parse_store_url(args.db).target} (nothing to check)"
        raise NotFoundError(msg)
    with store:
        problems = store.check()
        where = store.where
        counts = None
        if not problems:
            listed = store.conversations()
            counts = (len(listed), sum(c.message_count for c in listed))
    if counts is not None:
        conversations, messages = counts
        say(
            f"{where}: ok ({conversations:,} conversation{'s' if conversations != 1 else ''}, "
            f"{messages:,} message{'s' if messages != 1 else ''})"
        )
        return EXIT_OK
    say(f"{where}: {len(problems):,} problem{'s' if len(problems) != 1 else ''}")
    for problem in problems:
        say(f"  {problem}")
    return EXIT_INCONSISTENT
