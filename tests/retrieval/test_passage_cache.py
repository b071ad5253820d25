"""Passage vectors: cached between questions, prefilled for the whole book at start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from apiserver import build_book
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.retrieval.embedding_cache import PassageVectorCache
from bookwise.retrieval.retriever import Retriever


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return super().embed_documents(texts)


def test_the_cache_embeds_only_what_it_has_not_seen_and_forgets_the_oldest() -> None:
    embedder = CountingEmbedder()
    cache = PassageVectorCache(embedder.embed_documents, capacity=2)
    first = cache.embed(["a b", "c d"])
    assert embedder.texts == 2 and len(first) == 2
    cache.embed(["a b", "e f"])  # "a b" is cached; "c d" is now the oldest and goes
    assert embedder.texts == 3 and len(cache) == 2
    cache.embed(["c d"])
    assert embedder.texts == 4


def test_after_the_prefill_a_question_embeds_no_passage(tmp_path: Path) -> None:
    settings = build_book(tmp_path)
    store = open_store(settings)
    embedder = CountingEmbedder()
    retriever = Retriever(settings, store.open_reader(), embedder, store=store)
    try:
        assert retriever.prefill_passages() > 0
        question = "What do quokkas eat in the morning?"
        sections = retriever.search(question).sections
        before = embedder.texts
        ranked = retriever.rank_passages(question, sections)
        assert ranked[0].dense > 0 and ranked[0].passage.text.startswith("Quokkas eat leaves")
        assert embedder.texts == before + 1  # the question's vector; every passage came from the cache
    finally:
        retriever.close()


def test_the_cache_keeps_at_most_its_capacity_the_most_recently_used() -> None:
    embedder = CountingEmbedder()
    cache = PassageVectorCache(embedder.embed_documents, capacity=3)
    cache.embed(["a", "b", "c", "d", "e"])  # more than it holds in one call
    assert len(cache) == 3 and embedder.texts == 5
    cache.embed(["c", "d", "e"])
    assert embedder.texts == 5  # the last three were kept
    cache.embed(["d", "c", "d"])  # "d" used last of all: "e" and then "c" are the oldest
    cache.embed(["x", "y"])
    assert len(cache) == 3 and embedder.texts == 7
    cache.embed(["d", "x", "y"])
    assert embedder.texts == 7
    cache.capacity = 1
    cache.embed(["z"])
    assert len(cache) == 1
    cache.embed(["y"])
    assert embedder.texts == 9
    cache.clear()
    assert len(cache) == 0


def test_a_passage_twice_in_one_call_is_embedded_once_and_returned_twice() -> None:
    embedder = CountingEmbedder()
    cache = PassageVectorCache(embedder.embed_documents, capacity=2)
    vectors = cache.embed(["a b", "c d", "a b"])
    assert embedder.texts == 2 and len(vectors) == 3
    assert vectors[0] is vectors[2] and vectors[0].dtype.name == "float32"
