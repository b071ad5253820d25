"""BM25 sparse vectors in the Qdrant/bm25 scheme (Snowball stems, mmh3 ids), used with the IDF modifier.

Computed in-process by Qdrant Edge's ``Bm25`` so the embedded engine and a Qdrant server share indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from qdrant_edge import Bm25, Bm25Config

BM25_SCHEME = "qdrant-bm25/en/k1.2/b0.75"


@dataclass(frozen=True)
class SparseVector:
    indices: list[int]
    values: list[float]


class Bm25Encoder:
    def __init__(self, avg_len: float = 256.0) -> None:
        self._bm25 = Bm25(Bm25Config(k=1.2, b=0.75, avg_len=avg_len, language="english"))

    def document(self, text: str) -> SparseVector:
        return self._sorted(self._bm25.embed_document(text))

    def query(self, text: str) -> SparseVector:
        return self._sorted(self._bm25.embed_query(text))

    @staticmethod
    def _sorted(vector: object) -> SparseVector:
        # Qdrant's local mode requires sorted indices; the server and Edge accept any order.
        pairs = sorted(zip(vector.indices, vector.values, strict=True))  # type: ignore[attr-defined]
        return SparseVector([i for i, _ in pairs], [v for _, v in pairs])
