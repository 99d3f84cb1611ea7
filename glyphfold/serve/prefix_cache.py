"""The proxy's conversations: one :class:`~glyphfold.Compactor` each, found from the request.

A harness sends its whole history with every request; the proxy has no session id. A
conversation's compactor is indexed by the chained content digest of the last history
it was given (:func:`glyphfold.compaction.ladder.compactor.content_digests`, computed
without ``cache_control`` markers, so a harness that moves its marker every turn is
still the same conversation). The next request of that conversation extends that
history: one of its own prefix digests is the key.

Bounded: by the bytes the compactors remember (their last output, PNG pages
included) and by count; the least recently used conversation leaves first.
Thread-safe: lookups and inserts hold one lock; each compactor serialises its own
calls (concurrent requests of one conversation run one after the other).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from glyphfold.compaction.ladder.compactor import Compactor

__all__ = ["FitCache"]

_MAX_CONVERSATIONS = 4096


class FitCache:
    """LRU of conversations (their compactors), bounded by ``max_bytes`` and a count."""

    def __init__(self, max_bytes: int, *, max_items: int = _MAX_CONVERSATIONS) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self._items: OrderedDict[bytes, Compactor] = OrderedDict()
        self._sizes: dict[bytes, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """Bytes the remembered outputs held when they were last stored."""
        return self._bytes

    def find(self, digests: Sequence[bytes]) -> Compactor | None:
        """The conversation whose last history is the longest prefix named by ``digests``."""
        with self._lock:
            for key in reversed(digests):
                hit = self._items.get(key)
                if hit is not None:
                    self._items.move_to_end(key)
                    return hit
        return None

    def put(self, compactor: Compactor, *, previous: Sequence[bytes] = ()) -> None:
        """File ``compactor`` under its last history (and drop its key ``previous``)."""
        keys = compactor.last_digests
        if not keys:
            return
        key = keys[-1]
        size = compactor.nbytes
        with self._lock:
            if previous and previous[-1] != key:
                self._drop(previous[-1])
            self._drop(key)
            if size > self.max_bytes:
                return  # larger than the whole cache: not kept
            self._items[key] = compactor
            self._sizes[key] = size
            self._bytes += size
            while self._bytes > self.max_bytes or len(self._items) > self.max_items:
                old, _ = self._items.popitem(last=False)
                self._bytes -= self._sizes.pop(old)

    def _drop(self, key: bytes) -> None:
        if self._items.pop(key, None) is not None:
            self._bytes -= self._sizes.pop(key)
