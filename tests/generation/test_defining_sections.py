"""The sections that define a "what is" question's term: searched once per index generation, model
and term, at most so many terms kept; a re-ingest, with the same model or another, is searched anew.
A real Edge index and Retriever, the hash embedder."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

from bookwise.generation.coverage import DefiningSections
from bookwise.index.build import run_ingest
from bookwise.index.embedders import Embedder, HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.store import IndexStore
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.models import RetrievalResult, SectionResult
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

PAGES = {
    "docs/intro.md": "# Intro\n\nThis book is about small robots and how they move.\n",
    "docs/odometry.md": "## Wheel odometry\n\nOdometry is the estimate of the pose from wheel turns.\n",
    "docs/drift.md": "## Drift\n\nWheels slip on the floor, so odometry drifts over time.\n",
    "docs/kalman.md": "## Filters\n\nA Kalman filter is a way to merge noisy sensor readings.\n",
    "docs/lidar.md": "## Ranging\n\nA lidar is a sensor that measures distance with light.\n",
}


class CountingRetriever(Retriever):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.searched: list[str] = []

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, Sequence[str] | str] | None = None,
    ) -> RetrievalResult:
        self.searched.append(query)
        return super().search(query, top_k=top_k, filters=filters)


@pytest.fixture
def book(settings: Settings, make_site: SiteFactory) -> Iterator[tuple[Settings, IndexStore, SiteFactory]]:
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    store = open_store(configured)
    run_ingest(configured, read_site_config(make_site(PAGES)), embedder=HashEmbedder(), store=store)
    yield configured, store, make_site
    store.close()


def retriever_of(settings: Settings, store: IndexStore) -> CountingRetriever:
    def embedder_for(model: str) -> Embedder:
        return HashEmbedder(model_id=model)  # follows a re-ingest with another model, as a server does

    return CountingRetriever(settings, store.open_reader(), HashEmbedder(), embedder_for=embedder_for)


def headings(sections: Sequence[SectionResult]) -> list[str]:
    return [s.heading_text for s in sections]


def test_a_terms_defining_sections_are_searched_once(book: tuple[Settings, IndexStore, SiteFactory]) -> None:
    settings, store, _ = book
    retriever, definers = retriever_of(settings, store), DefiningSections(capacity=8)
    first = definers.of(retriever, "odometry")
    assert headings(first) == ["Wheel odometry"]  # "so odometry drifts" names it, defines nothing
    assert definers.of(retriever, "odometry") == first
    assert retriever.searched == ["odometry"]
    retriever.close()


def test_at_most_capacity_terms_are_kept(book: tuple[Settings, IndexStore, SiteFactory]) -> None:
    settings, store, _ = book
    retriever, definers = retriever_of(settings, store), DefiningSections(capacity=2)
    for term in ("odometry", "lidar", "odometry", "Kalman filter", "lidar", "odometry"):
        definers.of(retriever, term)
    # "lidar" was the least recently asked when "Kalman filter" came, then "odometry" when "lidar"
    # came back: each forgotten, each searched again.
    assert retriever.searched == ["odometry", "lidar", "Kalman filter", "lidar", "odometry"]
    retriever.close()


@pytest.mark.parametrize("model", ["hash-384", "hash-b"])
def test_a_reingest_is_searched_anew_never_served_the_old_generations_sections(
    book: tuple[Settings, IndexStore, SiteFactory], model: str
) -> None:
    settings, store, make_site = book
    retriever, definers = retriever_of(settings, store), DefiningSections(capacity=8)
    assert headings(definers.of(retriever, "odometry")) == ["Wheel odometry"]
    edited = {**PAGES, "docs/odometry.md": "## Dead reckoning\n\nOdometry is counting wheel turns.\n"}
    site = read_site_config(make_site(edited))
    run_ingest(settings, site, embedder=HashEmbedder(model_id=model), store=store, reindex=True)
    assert headings(definers.of(retriever, "odometry")) == ["Dead reckoning"]
    assert retriever.embedder.model_id == model
    assert retriever.searched == ["odometry", "odometry"]
    retriever.close()


def test_what_is_the_books_own_subject_missed_the_page_that_says_regression(
    settings: Settings, make_site: SiteFactory
) -> None:
    """ "What is Docusaurus?" quoted "We provide official Docusaurus plugins.": every page names the
    book's subject, so its own search ranks the pages that repeat it, and the introduction, whose
    opening says what it is, was not among them."""
    pages = {
        f"docs/part{i}.md": f"## Rover part {i}\n\nRover Rover: the Rover wheel {i} of the Rover.\n"
        for i in range(8)
    }
    pages["docs/index.md"] = (
        "# Welcome\n\nRover is a small teaching robot built from cheap parts; this book explains how its "
        "motors, sensors and controllers work together, one chapter at a time.\n\n## Next\n\nRead on.\n"
    )
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    store = open_store(configured)
    run_ingest(configured, read_site_config(make_site(pages)), embedder=HashEmbedder(), store=store)
    retriever = retriever_of(configured, store)
    try:
        found = DefiningSections(capacity=8).of(retriever, "Rover")
        opening = [s for s in found if (s.page_url, s.anchor) == ("/docs/", "")]
        assert opening and opening[0].text.startswith("Rover is a small teaching robot")
    finally:
        retriever.close()
        store.close()
