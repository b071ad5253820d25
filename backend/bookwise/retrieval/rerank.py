"""The optional reranking stage: reordering the top sections by more than their fused ranks.

Two kinds. ``rerank_provider = "learned"``: a small scorer fitted at ingest on the book's own
synthetic questions (``index/rerank_fit.py``) and stored with the index generation; serving applies
it with numpy to the top ``rerank_candidates`` sections, using what the search measured (fused rank,
cosine, BM25, heading terms, the context line's cosine). ``rerank_provider = "cross-encoder"``: a
sentence-transformers cross-encoder (a local path or a model name the machine can load) rescores the
top sections' text; anything else implementing ``Reranker`` can be passed in.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from bookwise.errors import ConfigError
from bookwise.index.rerank_fit import Candidate, RerankModel
from bookwise.index.sparse import Bm25Encoder
from bookwise.index.store import HybridHits
from bookwise.ingest.payload import ChunkPayload
from bookwise.settings import RetrievalSettings


class Reranker(Protocol):
    name: str

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """One relevance score per passage, higher is better."""


class CrossEncoderReranker:
    def __init__(self, model: str) -> None:
        self.name = f"cross-encoder:{model}"
        self._model_name = model
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as exc:  # the `local` extra is not installed
                    raise ConfigError("the cross-encoder reranker needs sentence-transformers") from exc
                try:
                    self._model = CrossEncoder(self._model_name, device="cpu")
                except Exception as exc:  # a missing or unreadable model
                    raise ConfigError(f"cannot load reranker model {self._model_name!r}: {exc}") from exc
            return self._model

    def scores(self, query: str, passages: list[str]) -> list[float]:
        model = self._load()
        return [float(s) for s in model.predict([(query, p) for p in passages])]


class LearnedReranker:
    """The scorer fitted at ingest, loaded from each index generation that carries one (an index
    without it, built by a Qdrant server or before fitting existed, is served by fusion alone)."""

    name = "learned"

    def __init__(self, data_dir: Path) -> None:
        self._generations = data_dir / "index" / "generations"
        self._loaded: tuple[str, str, RerankModel | None] = ("", "", None)
        self._lock = threading.Lock()
        self._sparse = Bm25Encoder()
        self._terms: dict[str, frozenset[int]] = {}

    def model(self, generation: str, embed_model: str) -> RerankModel | None:
        with self._lock:
            if self._loaded[:2] != (generation, embed_model):
                found = RerankModel.load(self._generations / generation, embed_model) if generation else None
                self._loaded = (generation, embed_model, found)
            return self._loaded[2]

    def _text_terms(self, text: str) -> frozenset[int]:
        found = self._terms.get(text)
        if found is None:
            if len(self._terms) > 50_000:  # headings of a few books; never unbounded
                self._terms.clear()
            found = self._terms[text] = frozenset(self._sparse.document(text).indices)
        return found

    def candidates(
        self, hits: HybridHits, sections: Sequence[tuple[str, float, ChunkPayload]]
    ) -> list[Candidate]:
        """``sections`` (id, fused score, best chunk's payload) in fused order, with what the search
        measured of their chunks."""
        section_of = {h.id: str(h.payload.get("section_id") or h.id) for h in hits.fused}
        matched: dict[str, int] = {}
        for sid in section_of.values():
            matched[sid] = matched.get(sid, 0) + 1
        cosine = _best(hits.dense, section_of)
        bm25 = _best(hits.sparse, section_of)
        out = []
        for sid, fused, p in sections:
            title = " ".join([p.title, *p.breadcrumb])
            out.append(
                Candidate(
                    sid,
                    fused,
                    cosine.get(sid),
                    bm25.get(sid),
                    matched.get(sid, 1),
                    self._text_terms(p.heading_text or p.heading),
                    self._text_terms(title),
                    p.heading_level,
                    not p.heading,
                )
            )
        return out


def _best(ranked: Sequence[Any], section_of: Mapping[str, str]) -> dict[str, float]:
    best: dict[str, float] = {}
    for hit in ranked:
        sid = section_of.get(hit.id)
        if sid is not None and hit.score > best.get(sid, float("-inf")):
            best[sid] = float(hit.score)
    return best


def create_learned_reranker(settings: RetrievalSettings, data_dir: Path) -> LearnedReranker | None:
    """The scorer the ingest fitted and stored in ``data_dir``, when ``rerank_provider`` is ``learned``."""
    return LearnedReranker(data_dir) if settings.rerank_provider == "learned" else None


def create_reranker(settings: RetrievalSettings) -> Reranker | None:
    if settings.rerank_provider in ("none", "learned"):
        return None
    if not settings.rerank_model:
        raise ConfigError("rerank_provider is 'cross-encoder' but rerank_model is not set")
    return CrossEncoderReranker(settings.rerank_model)
