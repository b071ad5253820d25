"""A bounded, thread-safe map that forgets the least recently used entry past its capacity: what the
retriever, the keystroke search and the answerer keep between questions (the same chunks, sections,
terms and typed words come back), and the answers a reader may still rate."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity  # read at every insertion
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def get_many(self, keys: Iterable[K]) -> tuple[dict[K, V], list[K]]:
        """The kept values of ``keys`` (each a use, as ``get``) and the keys not kept, each once, in
        the order first asked: what a caller computes in one batch."""
        kept: dict[K, V] = {}
        missing: dict[K, None] = {}
        with self._lock:
            for key in keys:
                value = self._entries.get(key)
                if value is None:
                    missing[key] = None
                else:
                    self._entries.move_to_end(key)
                    kept[key] = value
        return kept, list(missing)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Take ``key``'s value out (None: not kept), in one step: of two callers taking the same key
        at once, one gets it."""
        with self._lock:
            return self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
