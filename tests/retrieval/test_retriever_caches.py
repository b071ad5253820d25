"""What the Retriever keeps between queries (chunk payloads read back, sections' chunks,
passages' BM25 terms) never outlives what it was read from: a re-ingest that edits a page is read anew.
A real Edge index, the hash embedder."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from bookwise.index.build import run_ingest
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

PAGES = {
    "docs/intro.md": "# Intro\n\nThis book is about small robots and how they move.\n",
    "docs/odometry.md": "---\ntitle: Odometry\n---\n\n## Wheels\n\nOdometry counts wheel turns.\n",
    "docs/lidar.md": "## Ranging\n\nA lidar measures distance with light.\n",
}
Ingest = Callable[[dict[str, str]], None]


@pytest.fixture
def book(settings: Settings, make_site: SiteFactory) -> Iterator[tuple[Retriever, Ingest]]:
    """A retriever on the ingested PAGES, and a way to re-ingest edited pages into its store."""
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    store = open_store(configured)

    def ingest(pages: dict[str, str]) -> None:
        run_ingest(configured, read_site_config(make_site(pages)), embedder=HashEmbedder(), store=store)

    try:
        ingest(PAGES)
        retriever = Retriever(configured, store.open_reader(), HashEmbedder())
        yield retriever, ingest
        retriever.close()
    finally:
        store.close()


def test_a_page_edited_by_a_reingest_is_read_anew_not_from_the_kept_payloads(
    book: tuple[Retriever, Ingest],
) -> None:
    retriever, ingest = book
    top = retriever.search("odometry wheel turns").sections[0]
    assert (top.title, top.heading_text) == ("Odometry", "Wheels")
    # The same section, the same chunk (its id is its place), a new title: a new payload.
    ingest({**PAGES, "docs/odometry.md": PAGES["docs/odometry.md"].replace("Odometry\n", "Dead reckoning\n")})
    again = retriever.search("odometry wheel turns").sections[0]
    assert again.section_id == top.section_id
    assert again.title == "Dead reckoning"


def test_a_section_edited_by_a_reingest_is_assembled_from_its_new_chunks_not_the_kept_ones(
    book: tuple[Retriever, Ingest],
) -> None:
    retriever, ingest = book
    top = retriever.search("odometry wheel turns").sections[0]
    assert "counts wheel turns" in top.text
    # The same section (its id is its page and heading), new words in its only chunk.
    ingest({**PAGES, "docs/odometry.md": PAGES["docs/odometry.md"].replace("counts", "sums up")})
    again = retriever.search("odometry wheel turns").sections[0]
    assert again.section_id == top.section_id
    assert "sums up wheel turns" in again.text and "counts" not in again.text


@pytest.mark.parametrize("kept", ["_payloads", "_section_chunks_kept"])
def test_what_is_kept_is_bounded(kept: str, book: tuple[Retriever, Ingest]) -> None:
    retriever, _ = book
    getattr(retriever, kept).capacity = 2
    for query in ("odometry", "lidar", "robots"):
        assert retriever.search(query).sections
    assert len(getattr(retriever, kept)) == 2
