"""What every index backend provides: generations built aside and switched atomically, hybrid queries."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from bookwise.errors import IndexIncompatibleError, ModelMismatchError
from bookwise.index.sparse import SparseVector

DENSE = "dense"
SPARSE = "bm25"
KEYWORD_FIELDS = (
    "doc_path",
    "doc_id",
    "module",
    "chapter",
    "content_type",
    "tags",
    "version",
    "locale",
    "section_id",
    "page_url",
    "anchor",
)
INTEGER_FIELDS = ("chunk_index", "heading_level")
# Payload keys that change on every ingest without the chunk changing.
VOLATILE_KEYS = frozenset({"ingested_at", "index_version", "embed_model"})

Filters = dict[str, list[str]]  # field → accepted values (any of); fields are ANDed


@dataclass(frozen=True)
class IndexPoint:
    id: str
    dense: list[float]
    sparse: SparseVector
    payload: dict[str, Any]


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class HybridQuery:
    """One hybrid search: a dense and a BM25 prefetch fused by weighted RRF inside Qdrant."""

    dense: list[float]
    sparse: SparseVector
    limit: int  # fused chunks returned
    prefetch: int  # candidates per channel
    rrf_k: int = 60
    weights: tuple[float, float] = (1.0, 1.0)  # dense, sparse
    filters: Filters | None = None
    # BM25 term ids to look up on their own, in the same batch: which of them no chunk contains.
    probe_terms: tuple[int, ...] = ()


@dataclass(frozen=True)
class HybridHits:
    """The fused ranking (with payloads) and each channel's own ranking (ids and raw scores only).

    The raw scores (cosine, BM25) are absolute where RRF scores are only ranks: the sufficiency
    decision is calibrated on them.
    """

    fused: list[Hit]
    dense: list[Hit]
    sparse: list[Hit]
    unmatched_terms: frozenset[int] = frozenset()  # the probed terms that no chunk (within the filters) has


@dataclass
class IndexManifest:
    generation: str
    embed_model: str
    dim: int
    chunker_version: str
    bm25_scheme: str
    created_at: str
    docs_commit: str | None = None
    site: dict[str, Any] = field(default_factory=dict)
    # chunk id → [content_hash, payload_hash, ingested_at]; a Qdrant server's reader leaves it empty
    chunks: dict[str, list[str]] = field(default_factory=dict)
    points: int = 0  # chunks in the generation, written at ingest: the descriptor's own count

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexManifest:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def summary(self) -> dict[str, Any]:
        points = self.points or len(self.chunks)  # a manifest written before ``points`` existed
        return {k: v for k, v in asdict(self).items() if k != "chunks"} | {"points": points}

    def differences(self, chunker_version: str, bm25_scheme: str, here: str = "this Bookwise") -> list[str]:
        """How this generation's chunking and BM25 encoding differ from the given ones, one phrase each."""
        return [
            f"{name} {built!r} ({here}: {current!r})"
            for name, built, current in (
                ("chunker version", self.chunker_version, chunker_version),
                ("BM25 scheme", self.bm25_scheme, bm25_scheme),
            )
            if built != current
        ]

    def check_compatible(self, chunker_version: str, bm25_scheme: str) -> None:
        """Chunks cut or BM25-encoded another way must not be mixed with (or queried as) these."""
        changed = self.differences(chunker_version, bm25_scheme)
        if changed:
            raise IndexIncompatibleError(
                f"the index generation {self.generation} was built with {' and '.join(changed)}; "
                "rebuild it with `bookwise ingest --reindex`"
            )

    def check_model(self, model_id: str, dim: int) -> None:
        if self.embed_model != model_id or (dim and self.dim != dim):
            raise ModelMismatchError(
                f"the index was built with embedding model {self.embed_model!r} ({self.dim} dims) but "
                f"{model_id!r} ({dim} dims) is configured; configure the same model, or rebuild the "
                "index with `bookwise ingest --reindex`"
            )


def unmatched_terms(probed: Sequence[int], found: Sequence[bool]) -> frozenset[int]:
    """The probed BM25 terms whose own search found no chunk (one result per term, in order)."""
    return frozenset(term for term, hit in zip(probed, found, strict=True) if not hit)


def payload_hash(payload: dict[str, Any]) -> str:
    stable = {k: v for k, v in payload.items() if k not in VOLATILE_KEYS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()


class IndexReader(Protocol):
    """Queries one live generation; ``refresh`` moves to a newer one if an ingest switched."""

    @property
    def manifest(self) -> IndexManifest: ...

    def refresh(self) -> bool: ...

    def hybrid(self, query: HybridQuery) -> HybridHits: ...

    def section_chunks(self, section_ids: list[str]) -> list[Hit]:
        """Every chunk of these sections, with payloads (score 0), in no particular order."""

    def all_chunks(self) -> list[Hit]:
        """Every chunk of the generation, with payloads (score 0): for audits such as link checks."""

    def close(self) -> None: ...


class IndexStore(Protocol):
    def live_manifest(self) -> IndexManifest | None: ...

    def pointer_ok(self) -> bool:
        """False when the live pointer was broken at the last ``live_manifest`` (which then fell back
        to the newest complete generation): the next ingest must switch even if nothing changed."""

    def fetch_dense(self, ids: list[str]) -> dict[str, list[float]]: ...

    def write_generation(self, manifest: IndexManifest, points: Iterable[IndexPoint]) -> None:
        """Build the generation aside, then make it the live one in one atomic step."""

    def remove_half_built(self) -> list[str]:
        """Remove what crashed ingests left half-built (taking the write lock): their space first."""

    def prune(self, keep: int) -> list[str]:
        """Old generations beyond ``keep``; never the live one nor the newest complete one."""

    def open_reader(self) -> IndexReader: ...

    def close(self) -> None: ...
