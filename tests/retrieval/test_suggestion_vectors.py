"""The suggested questions' vectors travel with the index generation: a reader who clicks one is
answered by a fresh server without embedding the question."""

from __future__ import annotations

from pathlib import Path

import local_http
from apiserver import hash_settings, ingest_hashed, running_api
from bookwise.index.embedders import ServingEmbedder
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.suggestions import suggest_for_live_index
from examplesite import EXAMPLE_SITE

KALMAN = "/docs/sensing/kalman-filter"


def test_a_clicked_suggestion_is_answered_without_embedding_it(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "data")
    ingest_hashed(settings, EXAMPLE_SITE)
    suggest_for_live_index(settings)
    with running_api(settings) as url:
        response = local_http.get(f"{url}/api/suggestions", params={"url": KALMAN}, timeout=10)
    questions: list[str] = response.json()["questions"]
    assert questions, response.text

    retriever = Retriever.open(settings)  # a server started after the ingest
    try:
        embedder = retriever.embedder
        assert isinstance(embedder, ServingEmbedder)
        assert embedder.questions_known >= len(questions)
        before = embedder.computed
        for question in questions:
            assert retriever.search(question).sections
            assert retriever.search(f"  {question}\n").sections  # as typed: same words, other spaces
        assert embedder.computed == before
        retriever.search("Which suggestion did nobody make about the Kalman gain?")
        assert embedder.computed > before  # any other question is embedded
    finally:
        retriever.close()
