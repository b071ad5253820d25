"""Passage embeddings kept between questions: the same passages come back for many questions.

Only the passages not seen recently are embedded, in one batch; the least recently used are
forgotten past ``capacity``. Vectors are kept as float32 arrays (1.5 kB each for MiniLM; a list of
Python floats would take six times that).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

EmbedMany = Callable[[Sequence[str]], list[list[float]]]
Vector = npt.NDArray[np.float32]


class PassageVectorCache:
    """Passage text -> its vector, in memory, the least recently used forgotten past ``capacity``."""

    def __init__(self, embed_many: EmbedMany, capacity: int) -> None:
        self._embed_many = embed_many
        self.capacity = capacity
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        fresh = (
            {t: _array(v) for t, v in zip(missing, self._embed_many(missing), strict=True)} if missing else {}
        )
        with self._lock:
            vectors = []
            for text in texts:
                vector = fresh.get(text)
                if vector is None:
                    vector = self._vectors.get(text)
                if vector is None:  # forgotten between the two locks by a concurrent caller
                    vector = _array(self._embed_many([text])[0])
                vectors.append(vector)
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return vectors


def _array(vector: Sequence[float]) -> Vector:
    return np.asarray(vector, dtype=np.float32)
