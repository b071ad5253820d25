"""Incremental, model-guarded ingest into both backends (Edge on disk, qdrant-client in memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bookwise.errors import ModelMismatchError
from bookwise.index.build import run_ingest
from bookwise.index.edge.store import EdgeStore
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.server import QdrantServerStore
from bookwise.index.sparse import Bm25Encoder
from bookwise.index.store import HybridQuery, IndexStore
from bookwise.ingest.site import read_site_config
from bookwise.settings import Settings
from conftest import SiteFactory

PAGES = {
    "docs/intro.md": "# Intro\n\nWelcome to the book about reducers.\n\n## Setup\n\nInstall it with npm.\n",
    "docs/01-basics/01-state.md": "---\ntitle: State\n---\n\n## Store\n\nThe store holds the state tree.\n",
    "docs/01-basics/02-actions.md": "## Actions\n\nActions are plain objects with a type field.\n",
}


class CountingEmbedder(HashEmbedder):
    """The hash embedder, keeping every batch it was given."""

    def __init__(self, model_id: str = "hash-384", dim: int = 384) -> None:
        super().__init__(dim=dim, model_id=model_id)
        self.batches: list[list[str]] = []

    @property
    def embedded(self) -> int:
        return sum(len(batch) for batch in self.batches)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
        self.batches.append(list(texts))
        return super().embed_documents(texts)


@pytest.fixture(params=["edge", "server"])
def store(request: pytest.FixtureRequest, settings: Settings) -> Iterator[IndexStore]:
    url = ":memory:" if request.param == "server" else None
    opened = open_store(settings.model_copy(update={"qdrant_url": url}))
    yield opened
    opened.close()


def ingest(
    settings: Settings, site: Path, store: IndexStore, embedder: CountingEmbedder | None = None, **kw: object
):  # type: ignore[no-untyped-def]
    return run_ingest(
        settings, read_site_config(site), embedder=embedder or CountingEmbedder(), store=store, **kw
    )  # type: ignore[arg-type]


def search(store: IndexStore, text: str) -> list[str]:
    reader = store.open_reader()
    embedder, sparse = HashEmbedder(), Bm25Encoder()
    hits = reader.hybrid(HybridQuery(embedder.embed_query(text), sparse.query(text), limit=5, prefetch=20))
    return [h.payload["url"] for h in hits.fused]


def test_second_run_embeds_nothing_and_keeps_the_generation(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    site = make_site(PAGES)
    first = ingest(settings, site, store)
    assert (first.docs_processed, first.index.created, first.index.switched) == (3, first.chunks, True)
    embedder = CountingEmbedder()
    second = ingest(settings, site, store, embedder)
    assert embedder.embedded == 0
    assert (second.index.unchanged, second.index.created, second.index.switched) == (first.chunks, 0, False)
    assert second.index.generation == first.index.generation


def test_changing_one_file_embeds_only_its_changed_chunks(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    site = make_site(PAGES)
    first = ingest(settings, site, store)
    (site / "docs/01-basics/02-actions.md").write_text("## Actions\n\nActions describe what happened.\n")
    (site / "docs/intro.md").unlink()
    embedder = CountingEmbedder()
    report = ingest(settings, site, store, embedder).index
    assert embedder.embedded == 1
    assert (report.updated, report.created, report.deleted) == (1, 0, 2)
    assert report.unchanged == first.chunks - 3
    urls = search(store, "actions describe what happened")
    assert urls[0] == "/docs/basics/actions#actions"
    assert not any(u.startswith("/docs/intro") for u in urls)


def test_moving_a_page_updates_payloads_without_re_embedding(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    site = make_site(PAGES)
    ingest(settings, site, store)
    (site / "docs/01-basics/01-state.md").write_text(
        "---\ntitle: State\nslug: /state\n---\n\n## Store\n\nThe store holds the state tree.\n"
    )
    embedder = CountingEmbedder()
    report = ingest(settings, site, store, embedder).index
    assert embedder.embedded == 0
    assert report.updated == 1
    assert "/docs/state#store" in search(store, "store holds the state tree")


def test_another_embedding_model_is_refused_then_reindex_allows_it(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    site = make_site(PAGES)
    ingest(settings, site, store)
    with pytest.raises(ModelMismatchError, match="hash-384.*other-model.*--reindex"):
        ingest(settings, site, store, CountingEmbedder("other-model", 128))
    report = ingest(settings, site, store, CountingEmbedder("other-model", 128), reindex=True)
    assert report.index.switched
    manifest = store.open_reader().manifest
    assert (manifest.embed_model, manifest.dim) == ("other-model", 128)


def test_dry_run_writes_nothing(settings: Settings, make_site: SiteFactory, store: IndexStore) -> None:
    report = ingest(settings, make_site(PAGES), store, dry_run=True)
    assert report.index.embedded == report.chunks and not report.index.switched
    assert store.live_manifest() is None


def test_payload_carries_every_citation_field(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    ingest(settings, make_site(PAGES), store)
    hit = (
        store.open_reader()
        .hybrid(
            HybridQuery(
                HashEmbedder().embed_query("store state tree"),
                Bm25Encoder().query("store state tree"),
                limit=1,
                prefetch=10,
            )
        )
        .fused[0]
    )
    payload = hit.payload
    for key in (
        "doc_path",
        "url",
        "page_url",
        "anchor",
        "title",
        "heading",
        "heading_level",
        "breadcrumb",
        "module",
        "chapter",
        "tags",
        "content_type",
        "has_code",
        "has_table",
        "has_math",
        "has_admonition",
        "has_image",
        "section_id",
        "chunk_index",
        "total_chunks",
        "char_start",
        "char_end",
        "content_hash",
        "ingested_at",
        "index_version",
        "embed_model",
        "text",
    ):
        assert key in payload, key
    assert (payload["doc_path"], payload["module"], payload["heading"]) == (
        "01-basics/01-state.md",
        "basics",
        "Store",
    )


def test_filters_restrict_results(settings: Settings, make_site: SiteFactory, store: IndexStore) -> None:
    ingest(settings, make_site(PAGES), store)
    reader = store.open_reader()
    query = "state store actions reducers"
    hits = reader.hybrid(
        HybridQuery(
            HashEmbedder().embed_query(query),
            Bm25Encoder().query(query),
            limit=10,
            prefetch=20,
            filters={"module": ["basics"]},
        )
    )
    assert hits.fused and {h.payload["module"] for h in hits.fused} == {"basics"}


def test_old_generations_are_pruned(settings: Settings, make_site: SiteFactory, store: IndexStore) -> None:
    site = make_site(PAGES)
    for n in range(4):
        (site / "docs/extra.md").write_text(f"## Extra\n\nVersion {n} of the extra page.\n")
        report = ingest(settings, site, store)
    assert report.index.pruned  # keep_generations = 2


def test_failed_build_leaves_the_live_generation_and_no_debris(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    """A crash while writing a generation must not switch, and must not leave a half-built one."""
    from bookwise.index.store import IndexManifest, IndexPoint

    site = make_site(PAGES)
    live = ingest(settings, site, store).index.generation
    broken = IndexManifest("99990101T000000000000Z", "hash-384", 384, "1", "x", "now")

    def points() -> Iterator[IndexPoint]:
        yield from ()
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        store.write_generation(broken, points())
    assert store.open_reader().manifest.generation == live
    assert search(store, "store holds the state tree")
    if isinstance(store, EdgeStore):
        assert not (store.root / "generations" / broken.generation).exists()
    else:
        assert isinstance(store, QdrantServerStore)
        names = [c.name for c in store.client.get_collections().collections]
        assert not any(broken.generation in n for n in names)


def test_chunks_are_embedded_longest_first_so_a_batch_is_padded_to_its_own_length(
    settings: Settings, make_site: SiteFactory, store: IndexStore
) -> None:
    """A batch is padded to its longest text: cut from the book's order, short passages paid for the
    code block beside them."""
    pages = {f"docs/p{i}.md": f"# Page {i}\n\n" + "word " * (5 + (i * 37) % 50) + "\n" for i in range(9)}
    embedder = CountingEmbedder()
    run_ingest(
        settings.model_copy(update={"embedding_batch_size": 2}),
        read_site_config(make_site(pages)),
        embedder=embedder,
        store=store,
    )
    lengths = [len(text) for batch in embedder.batches for text in batch]
    assert len(lengths) >= 9 and lengths == sorted(lengths, reverse=True)
