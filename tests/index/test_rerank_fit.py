"""The learned reranker's fitting: the in-memory search it fits on ranks as the index does, and an
ingest with ``rerank_provider = "learned"`` stores a model with the generation (hash embedder)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from bookwise.index.build import chunking_params, run_ingest
from bookwise.index.cache import SqliteEmbeddingCache
from bookwise.index.edge.generations import read_current
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.rerank_fit import (
    FEATURES,
    RERANK_MODEL,
    BookSearch,
    Candidate,
    FitParams,
    RerankModel,
    feature_matrix,
    sections_of,
    synthetic_queries,
)
from bookwise.index.sparse import Bm25Encoder
from bookwise.index.store import HybridQuery
from bookwise.ingest.pipeline import ChunkingParams, ingest_site
from bookwise.ingest.site import read_site_config
from bookwise.settings import Settings
from conftest import SiteFactory

WORDS = (
    "reducer store action dispatch middleware selector thunk slice state immutable render component "
    "hook context provider effect memo router loader cache query mutation schema token session cookie "
    "header footer sidebar navbar plugin theme locale version sitemap feed search index anchor heading"
).split()
FILLER = [
    f"{a}{b}"
    for a in ("ka", "lo", "mi", "nu", "po", "ri", "su", "te")
    for b in ("ba", "de", "fi", "go", "hu", "ja")
]


def book_pages(pages: int = 6, sections: int = 4, seed: int = 3) -> dict[str, str]:
    rng = random.Random(seed)
    files = {}
    for p in range(pages):
        parts = [f"# Page {WORDS[p]}\n\nThis page is about {WORDS[p]} and {WORDS[p + 1]}.\n"]
        for s in range(sections):
            heading = f"{WORDS[(p * 7 + s * 3) % len(WORDS)].title()} {WORDS[(p + s * 5) % len(WORDS)]}"
            body = " ".join(
                " ".join(rng.choice(WORDS + FILLER * 3) for _ in range(rng.randint(6, 14))).capitalize() + "."
                for _ in range(rng.randint(3, 8))
            )
            parts.append(f"## {heading}\n\n{body}\n")
        files[f"docs/page-{p}.md"] = "\n".join(parts)
    return files


@pytest.fixture
def ingested(settings: Settings, make_site: SiteFactory) -> tuple[Settings, Path]:
    configured = settings.model_copy(update={"rerank_provider": "learned"})
    site = make_site(book_pages())
    run_ingest(configured, read_site_config(site), embedder=HashEmbedder())
    return configured, site


def test_the_fitting_search_ranks_chunks_as_the_index_does(ingested: tuple[Settings, Path]) -> None:
    settings, site = ingested
    embedder = HashEmbedder()
    params = chunking_params(settings, embedder)
    chunks = ingest_site(read_site_config(site), params).chunks
    cache = SqliteEmbeddingCache(settings.data_dir / "embeddings.sqlite")
    vectors = cache.get_many(embedder.model_id, [c.content_hash for c in chunks])
    cache.close()
    fit = FitParams(prefetch=30, limit=15, candidates=10)
    search = BookSearch(chunks, vectors, fit)
    store = open_store(settings)
    reader = store.open_reader()
    section_of = {c.id: str(c.payload["section_id"]) for c in chunks}
    try:
        for question in ("how does the reducer dispatch an action", "sidebar theme plugin", "cookie session"):
            vector = np.asarray(embedder.embed_documents([question])[0], dtype=np.float32)
            hits = reader.hybrid(
                HybridQuery(
                    dense=vector.tolist(),
                    sparse=Bm25Encoder().query(question),
                    limit=fit.limit,
                    prefetch=fit.prefetch,
                    rrf_k=fit.rrf_k,
                    weights=fit.weights,
                )
            )
            served = list(dict.fromkeys(section_of[h.id] for h in hits.fused))[: fit.candidates]
            fitted = search.candidates(question, vector / np.linalg.norm(vector))
            # Chunks with equal cosines (the hash embedder ties) are ordered by each engine its own way,
            # which moves only the sections holding them: the others must rank alike.
            cosines = np.round(search.vectors @ (vector / np.linalg.norm(vector)), 6)
            counts = dict(zip(*np.unique(cosines, return_counts=True), strict=True))
            tied = {section_of[c.id] for c, cos in zip(chunks, cosines, strict=True) if counts[cos] > 1}
            kept = [sid for sid in served if sid not in tied]
            mine = [c.section_id for c in fitted if c.section_id not in tied]
            shown = min(len(kept), len(mine))  # a tied section may push one more out of either top list
            assert shown >= 3
            assert mine[:shown] == kept[:shown]
            best = {h.id: h.score for h in hits.fused}[hits.fused[0].id]
            assert fitted[0].fused == pytest.approx(best, rel=1e-4)
    finally:
        reader.close()
        store.close()


def test_an_ingest_with_the_learned_reranker_stores_it_with_the_generation(
    ingested: tuple[Settings, Path],
) -> None:
    settings, _ = ingested
    root = settings.data_dir / "index"
    generation, _ = read_current(root)
    assert generation is not None
    directory = root / "generations" / generation
    assert (directory / RERANK_MODEL).is_file()
    model = RerankModel.load(directory, HashEmbedder().model_id)
    assert model is not None
    assert len(model.weights) == len(FEATURES) and np.all(np.isfinite(model.weights))
    assert len(model.rows) == 6 * 5  # every section, the pages' introductions too
    assert model.report["fitted_on"] >= 20
    assert RerankModel.load(directory, "another-model") is None  # vectors of another space are not used


def test_no_reranker_is_fitted_unless_it_is_configured(settings: Settings, make_site: SiteFactory) -> None:
    run_ingest(settings, read_site_config(make_site(book_pages())), embedder=HashEmbedder())
    root = settings.data_dir / "index"
    generation, _ = read_current(root)
    assert not (root / "generations" / str(generation) / RERANK_MODEL).exists()


def test_synthetic_questions_avoid_their_sections_heading_words(make_site: SiteFactory) -> None:
    embedder = HashEmbedder()
    params = ChunkingParams(
        max_tokens=200,
        overlap_tokens=20,
        min_tokens=10,
        model_max_tokens=256,
        count_tokens=embedder.count_tokens,
    )
    chunks = ingest_site(read_site_config(make_site(book_pages())), params).chunks
    sections = {s.section_id: s for s in sections_of(chunks)}
    questions = synthetic_queries(list(sections.values()), 100, seed=1)
    assert len(questions) >= 20
    for question, section_id in questions:
        heading_words = set(sections[section_id].context.lower().replace("›", " ").split())
        assert not heading_words & set(question.lower().split()) - {"how", "do", "i", "what", "is", "can"}


def test_features_are_relative_to_the_best_candidate() -> None:
    def candidate(sid: str, fused: float, cosine: float | None, bm25: float | None) -> Candidate:
        return Candidate(sid, fused, cosine, bm25, 1, frozenset({1, 2}), frozenset({3}), 2, False)

    rows = feature_matrix(
        frozenset({1, 3, 4, 5}),
        [candidate("a", 0.2, 0.8, None), candidate("b", 0.1, None, 4.0)],
        [0.5, None],
    )
    by_name = {name: rows[:, i].tolist() for i, name in enumerate(FEATURES)}
    assert by_name["fused"] == [1.0, 0.5]
    assert by_name["cosine"] == pytest.approx([0.0, -0.05])  # unranked: a margin below the lowest ranked
    assert by_name["bm25"] == [0.0, 1.0]
    assert by_name["heading_terms"] == [0.25, 0.25]
    assert by_name["heading_cosine"] == pytest.approx([0.0, -0.05])


def test_turning_the_learned_reranker_on_refits_an_unchanged_book(
    settings: Settings, make_site: SiteFactory
) -> None:
    site = read_site_config(make_site(book_pages()))
    run_ingest(settings, site, embedder=HashEmbedder())
    first, _ = read_current(settings.data_dir / "index")
    report = run_ingest(
        settings.model_copy(update={"rerank_provider": "learned"}), site, embedder=HashEmbedder()
    )
    assert report.index.generation != first  # nothing changed but the reranker: a new generation carries it
    assert (
        settings.data_dir / "index" / "generations" / str(report.index.generation) / RERANK_MODEL
    ).is_file()


def test_a_book_too_small_to_fit_on_is_marked_and_not_refitted(
    settings: Settings, make_site: SiteFactory
) -> None:
    configured = settings.model_copy(update={"rerank_provider": "learned"})
    site = read_site_config(make_site(book_pages(pages=1, sections=3)))
    first = run_ingest(configured, site, embedder=HashEmbedder()).index.generation
    directory = settings.data_dir / "index" / "generations" / str(first)
    assert RerankModel.load(directory, HashEmbedder().model_id) is None
    assert run_ingest(configured, site, embedder=HashEmbedder()).index.generation == first
