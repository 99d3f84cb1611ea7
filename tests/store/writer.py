"""A writer process for the crash and load tests (run as a script).

``crash_turn(k)`` is the numbered 4-message turn the crash test's writer appends;
``import_history_of(k)`` the numbered history its imports bring.
``writer.py load URL WORKER TURNS SEED CONV...``: append TURNS turns to random
conversations, retrying on ConflictError; every COMPACT_EVERY turns record a
compaction of the turn just written, every IMPORT_EVERY turns import a history
as a new conversation. Prints the number of conflicts.
"""

from __future__ import annotations

import random
import sys

from glyphfold.compaction.store import open_store
from glyphfold.errors import ConflictError

COMPACT_EVERY = 10
IMPORT_EVERY = 50
IMPORT_TURNS = 5


def crash_turn(k: int) -> list[dict]:
    call = f"call_{k}"
    return [
        {"role": "user", "content": f"turn {k} " + "u" * 2000},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "run", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": f"result {k} " + "r" * 6000},
        {"role": "assistant", "content": f"end {k}"},
    ]


def import_history_of(tag: str, turns: int) -> list[dict]:
    """A plain history of ``turns`` numbered turns: what an import of ``tag`` brings."""
    out: list[dict] = [{"role": "system", "content": f"imported {tag}"}]
    for k in range(turns):
        out.append({"role": "user", "content": f"{tag} q{k} " + "i" * 500})
        out.append({"role": "assistant", "content": f"{tag} a{k}"})
    return out


def load(url: str, worker: int, turns: int, seed: int, convs: list[str]) -> None:
    rng = random.Random(seed)
    conflicts = 0
    with open_store(url) as store:
        for i in range(turns):
            conv = rng.choice(convs)
            turn = [
                {"role": "user", "content": f"w{worker} t{i}"},
                {"role": "assistant", "content": f"ack w{worker} t{i}"},
            ]
            while True:
                try:
                    store.tip(conv)
                    ids = store.commit_turn(conv, turn)
                    break
                except ConflictError:
                    conflicts += 1
            if i % COMPACT_EVERY == 0:
                store.record_compaction(conv, {"w": worker, "t": i}, [f"w{worker} t{i}"], ids)
            if i % IMPORT_EVERY == 0:
                tag = f"w{worker} i{i}"
                store.import_history(import_history_of(tag, IMPORT_TURNS), title=tag)
    print(f"conflicts {conflicts}", flush=True)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    if mode == "load":
        load(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4:])
    else:
        sys.exit(f"unknown mode {mode!r}; use load")
