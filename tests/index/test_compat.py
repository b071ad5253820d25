"""Index compatibility on both backends (Edge on disk, qdrant-client in memory): the manifest's
counts, and a chunker or BM25 scheme change detected at ingest and at serve."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bookwise.errors import IndexIncompatibleError
from bookwise.index import indexer
from bookwise.index.build import run_ingest
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.store import IndexStore
from bookwise.ingest.site import read_site_config
from bookwise.retrieval import retriever as retrieval
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

PAGES = {
    "docs/intro.md": "# Intro\n\nWelcome to the book about reducers.\n\n## Setup\n\nInstall it with npm.\n",
    "docs/state.md": "## Store\n\nThe store holds the state tree.\n\n## Actions\n\nActions are objects.\n",
}


@pytest.fixture(params=["edge", "server"])
def book(
    request: pytest.FixtureRequest, settings: Settings, make_site: SiteFactory
) -> Iterator[tuple[Settings, IndexStore, SiteFactory]]:
    configured = settings.model_copy(
        update={"qdrant_url": ":memory:" if request.param == "server" else None, "index_refresh_s": 0.0}
    )
    store = open_store(configured)
    ingest(configured, store, make_site)
    yield configured, store, make_site
    store.close()


def ingest(settings: Settings, store: IndexStore, make_site: SiteFactory, **kw: bool) -> None:
    site = read_site_config(make_site(PAGES))
    run_ingest(settings, site, embedder=HashEmbedder(), store=store, **kw)  # type: ignore[arg-type]


def test_ready_points_count_the_chunks_on_a_qdrant_server_too(
    book: tuple[Settings, IndexStore, SiteFactory],
) -> None:
    settings, store, _ = book
    chunks = store.live_manifest()
    assert chunks is not None and len(chunks.chunks) >= 3
    served = Retriever(settings, store.open_reader(), HashEmbedder())
    try:
        assert served.status()["points"] == len(chunks.chunks)  # was 0 on a Qdrant server
    finally:
        served.close()


@pytest.mark.parametrize(("constant", "changed"), [("CHUNKER_VERSION", "999"), ("BM25_SCHEME", "bm25/other")])
def test_a_chunker_or_bm25_change_asks_for_reindex_at_ingest_instead_of_mixing(
    book: tuple[Settings, IndexStore, SiteFactory],
    monkeypatch: pytest.MonkeyPatch,
    constant: str,
    changed: str,
) -> None:
    settings, store, make_site = book
    before = store.live_manifest()
    monkeypatch.setattr(indexer, constant, changed)  # an upgraded Bookwise cuts or encodes otherwise
    with pytest.raises(IndexIncompatibleError, match="--reindex") as refused:
        ingest(settings, store, make_site)
    assert refused.value.code == "index_incompatible" and changed in refused.value.message
    after = store.live_manifest()
    assert after is not None and before is not None and after.generation == before.generation  # untouched
    ingest(settings, store, make_site, reindex=True)
    rebuilt = store.live_manifest()
    assert rebuilt is not None and changed in (rebuilt.chunker_version, rebuilt.bm25_scheme)


@pytest.mark.parametrize(("constant", "changed"), [("CHUNKER_VERSION", "999"), ("BM25_SCHEME", "bm25/other")])
def test_a_chunker_or_bm25_change_asks_for_reindex_at_serve_instead_of_mixing(
    book: tuple[Settings, IndexStore, SiteFactory],
    monkeypatch: pytest.MonkeyPatch,
    constant: str,
    changed: str,
) -> None:
    settings, store, make_site = book
    monkeypatch.setattr(retrieval, constant, changed)  # the server was upgraded, the index was not
    reader = store.open_reader()
    try:
        with pytest.raises(IndexIncompatibleError, match="--reindex"):
            Retriever(settings, reader, HashEmbedder())
    finally:
        reader.close()
    monkeypatch.setattr(indexer, constant, changed)
    ingest(settings, store, make_site, reindex=True)
    rebuilt = Retriever(settings, store.open_reader(), HashEmbedder())
    try:
        assert rebuilt.search("store").sections
    finally:
        rebuilt.close()
