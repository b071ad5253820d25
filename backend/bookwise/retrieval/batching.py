"""Query embeddings for concurrent requests, computed together.

Under load, many searches want a query vector at once. Embedding them one by one in parallel
threads makes the model's own thread pools fight over the cores; one forward pass over all of
them is several times cheaper. The first caller becomes the leader and embeds everything queued;
callers arriving meanwhile wait for the next round. A lone query is embedded at once: no added wait.

One reader's query must never fail another's: when a round fails (a text the model cannot take, a
transient model error), each of its queries is embedded again on its own, so only the queries that
fail alone get the error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

EmbedMany = Callable[[Sequence[str]], list[list[float]]]


@dataclass
class _Slot:
    text: str
    done: threading.Event = field(default_factory=threading.Event)
    vector: list[float] | None = None
    error: BaseException | None = None


class QueryBatcher:
    def __init__(self, embed_many: EmbedMany, max_batch: int = 32) -> None:
        self._embed_many = embed_many
        self.max_batch = max_batch
        self._queue: list[_Slot] = []
        self._leading = False
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Queries waiting for the next round."""
        with self._lock:
            return len(self._queue)

    def embed(self, text: str) -> list[float]:
        slot = _Slot(text)
        with self._lock:
            self._queue.append(slot)
            lead = not self._leading
            self._leading = True
        if lead:
            self._lead()
        slot.done.wait()
        if slot.error is not None:
            raise slot.error
        assert slot.vector is not None
        return slot.vector

    def _lead(self) -> None:
        while True:
            with self._lock:
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                if not batch:
                    self._leading = False
                    return
            try:
                self._embed_round(batch)
            except BaseException as error:  # interpreter exit and the like: every waiter gets it
                for slot in batch:
                    if slot.vector is None and slot.error is None:
                        slot.error = error
            for slot in batch:
                slot.done.set()

    def _embed_round(self, batch: list[_Slot]) -> None:
        try:
            vectors = self._embed_many([slot.text for slot in batch])
            for slot, vector in zip(batch, vectors, strict=True):
                slot.vector = vector
            return
        except Exception as error:
            if len(batch) == 1:
                batch[0].error = error
                return
        for slot in batch:  # which query failed the round? each alone: only that one fails
            try:
                slot.vector = self._embed_many([slot.text])[0]
            except Exception as error:
                slot.error = error
