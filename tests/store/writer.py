"""A writer process for the crash and load tests (run as a script).

``crash_turn(k)`` is the numbered 4-message turn the crash test's writer appends.
``writer.py load URL WORKER TURNS SEED CONV...``: append TURNS turns to random
conversations, retrying on ConflictError; prints the number of conflicts.
"""

from __future__ import annotations

import random
import sys

from glyphfold.compaction.store import open_store

from glyphfold.errors import ConflictError


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
                    store.commit_turn(conv, turn)
                    break
                except ConflictError:
                    conflicts += 1
    print(f"conflicts {conflicts}", flush=True)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    if mode == "load":
        load(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4:])
    else:
        sys.exit(f"unknown mode {mode!r}; use load")
