"""A bounded, thread-safe LRU of compaction results, keyed by request-prefix hashes.

Memory is bounded by the byte size each entry declares (its serialised messages,
PNG pages included); the least recently used entries leave first.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CachedFit", "FitCache", "prefix_hashes"]


def _plain(o: Any) -> Any:
    if isinstance(o, Mapping):
        return dict(o)
    msg = f"cannot cache a {type(o).__name__}"
    raise TypeError(msg)


@dataclass(frozen=True, slots=True)
class CachedFit:
    """A compacted history (wire, snapshot sources kept) for a request prefix.

    Held as JSON bytes, not as Python objects: a cache of many large histories would
    otherwise be millions of live objects for the garbage collector to walk.
    """

    data: bytes  # compact()'s output, x_glyphfold keys kept (SPEC §5.3), as JSON
    length: int  # how many messages of the client's history it stands for
    tokens_before: int
    tokens_after: int
    rungs: tuple[str, ...]

    @classmethod
    def of(
        cls, messages: Any, length: int, before: int, after: int, rungs: tuple[str, ...]
    ) -> CachedFit:
        data = json.dumps(messages, ensure_ascii=False, separators=(",", ":"), default=_plain)
        # surrogatepass: a lone surrogate in a tool result (issue 21 item 8) round-trips
        return cls(data.encode("utf-8", "surrogatepass"), length, before, after, rungs)

    @property
    def messages(self) -> Any:
        """A fresh copy of the compacted history."""
        return json.loads(self.data.decode("utf-8", "surrogatepass"))

    @property
    def nbytes(self) -> int:
        return len(self.data)


def prefix_hashes(seed: str, system: Any, messages: Iterable[Any]) -> list[bytes]:
    """Chained hashes: ``out[k]`` identifies ``seed`` + ``system`` + ``messages[:k+1]``.

    ``seed`` names everything else the compaction depends on (model, profile,
    budget, rungs), so a hit is only a hit for the same compaction.
    """
    h = hashlib.blake2b(seed.encode(), digest_size=20)
    h.update(
        json.dumps(system, sort_keys=True, ensure_ascii=False, default=str).encode(
            "utf-8", "surrogatepass"
        )
    )
    out: list[bytes] = []
    for m in messages:
        h.update(b"\x1e")
        h.update(
            json.dumps(m, sort_keys=True, ensure_ascii=False, default=str).encode(
                "utf-8", "surrogatepass"
            )
        )
        out.append(h.copy().digest())
    return out


class FitCache:
    """LRU of :class:`CachedFit` bounded by ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[bytes, CachedFit] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """Bytes held by the entries now."""
        return self._bytes

    def longest(self, hashes: list[bytes]) -> CachedFit | None:
        """The entry of the longest prefix among ``hashes`` (newest first), or None."""
        with self._lock:
            for key in reversed(hashes):
                hit = self._items.get(key)
                if hit is not None:
                    self._items.move_to_end(key)
                    return hit
        return None

    def put(self, key: bytes, value: CachedFit) -> None:
        """Insert ``value`` (an entry larger than the whole cache is not kept)."""
        if value.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._items[key] = value
            self._bytes += value.nbytes
            while self._bytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= evicted.nbytes
