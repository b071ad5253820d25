"""Passage embeddings kept between questions: the same passages come back for many questions.

Only the passages not seen recently are embedded, in one batch; the least recently used are
forgotten past ``capacity``. Vectors are kept as float32 arrays (1.5 kB each for MiniLM; a list of
Python floats would take six times that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from bookwise.lru import Lru

EmbedMany = Callable[[Sequence[str]], list[list[float]]]
Vector = npt.NDArray[np.float32]


class PassageVectorCache:
    """Passage text -> its vector, in memory, the least recently used forgotten past ``capacity``."""

    def __init__(self, embed_many: EmbedMany, capacity: int) -> None:
        self._embed_many = embed_many
        self._vectors: Lru[str, Vector] = Lru(capacity)

    @property
    def capacity(self) -> int:
        return self._vectors.capacity

    @capacity.setter
    def capacity(self, capacity: int) -> None:
        self._vectors.capacity = capacity

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self) -> None:
        self._vectors.clear()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors, missing = self._vectors.get_many(texts)
        if missing:
            vectors.update(zip(missing, map(_array, self._embed_many(missing)), strict=True))
        for text in texts:  # in order, so the last used is the last forgotten
            self._vectors.put(text, vectors[text])
        return [vectors[text] for text in texts]


def _array(vector: Sequence[float]) -> Vector:
    return np.asarray(vector, dtype=np.float32)
