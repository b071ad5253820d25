"""What the Retriever keeps between queries (chunk payloads read back, sections' chunks,
passages' BM25 terms) never outlives what it was read from: a re-ingest that edits a page is read anew.
A real Edge index, the hash embedder."""

from __future__ import annotations

import pytest

from bookwise.index.build import run_ingest
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.ingest.site import read_site_config
from bookwise.retrieval import retriever as retriever_module
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

PAGES = {
    "docs/intro.md": "# Intro\n\nThis book is about small robots and how they move.\n",
    "docs/odometry.md": "---\ntitle: Odometry\n---\n\n## Wheels\n\nOdometry counts wheel turns.\n",
    "docs/lidar.md": "## Ranging\n\nA lidar measures distance with light.\n",
}


def test_a_page_edited_by_a_reingest_is_read_anew_not_from_the_kept_payloads(
    settings: Settings, make_site: SiteFactory
) -> None:
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    store = open_store(configured)
    try:
        run_ingest(configured, read_site_config(make_site(PAGES)), embedder=HashEmbedder(), store=store)
        retriever = Retriever(configured, store.open_reader(), HashEmbedder())
        top = retriever.search("odometry wheel turns").sections[0]
        assert (top.title, top.heading_text) == ("Odometry", "Wheels")
        # The same section, the same chunk (its id is its place), a new title: a new payload.
        edited = {
            **PAGES,
            "docs/odometry.md": PAGES["docs/odometry.md"].replace("Odometry\n", "Dead reckoning\n"),
        }
        run_ingest(configured, read_site_config(make_site(edited)), embedder=HashEmbedder(), store=store)
        again = retriever.search("odometry wheel turns").sections[0]
        assert again.section_id == top.section_id
        assert again.title == "Dead reckoning"
        retriever.close()
    finally:
        store.close()


def test_the_kept_payloads_are_bounded(
    settings: Settings, make_site: SiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retriever_module, "PAYLOAD_CACHE", 2)
    store = open_store(settings)
    try:
        run_ingest(settings, read_site_config(make_site(PAGES)), embedder=HashEmbedder(), store=store)
        retriever = Retriever(settings, store.open_reader(), HashEmbedder())
        for query in ("odometry", "lidar", "robots"):
            assert retriever.search(query).sections
        assert len(retriever._payloads) == 2
        retriever.close()
    finally:
        store.close()


def test_a_section_edited_by_a_reingest_is_assembled_from_its_new_chunks_not_the_kept_ones(
    settings: Settings, make_site: SiteFactory
) -> None:
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    store = open_store(configured)
    try:
        run_ingest(configured, read_site_config(make_site(PAGES)), embedder=HashEmbedder(), store=store)
        retriever = Retriever(configured, store.open_reader(), HashEmbedder())
        top = retriever.search("odometry wheel turns").sections[0]
        assert "counts wheel turns" in top.text
        # The same section (its id is its page and heading), new words in its only chunk.
        edited = {**PAGES, "docs/odometry.md": PAGES["docs/odometry.md"].replace("counts", "sums up")}
        run_ingest(configured, read_site_config(make_site(edited)), embedder=HashEmbedder(), store=store)
        again = retriever.search("odometry wheel turns").sections[0]
        assert again.section_id == top.section_id
        assert "sums up wheel turns" in again.text and "counts" not in again.text
        retriever.close()
    finally:
        store.close()


def test_the_kept_section_chunks_are_bounded(
    settings: Settings, make_site: SiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retriever_module, "SECTION_CHUNKS_CACHE", 2)
    store = open_store(settings)
    try:
        run_ingest(settings, read_site_config(make_site(PAGES)), embedder=HashEmbedder(), store=store)
        retriever = Retriever(settings, store.open_reader(), HashEmbedder())
        for query in ("odometry", "lidar", "robots"):
            assert retriever.search(query).sections
        assert len(retriever._section_chunks_kept) == 2
        retriever.close()
    finally:
        store.close()
