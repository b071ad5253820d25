"""Queries running while re-ingests switch generations: 0 failures, never empty, never a mix."""

from __future__ import annotations

import threading
import time

from bookwise.index.build import run_ingest
from bookwise.index.edge.store import EdgeStore
from bookwise.index.embedders import HashEmbedder
from bookwise.index.sparse import Bm25Encoder
from bookwise.index.store import HybridQuery
from bookwise.ingest.site import read_site_config
from bookwise.settings import Settings
from conftest import SiteFactory


def page(n: int, version: int) -> str:
    return (
        f"## Topic {n}\n\nReducers topic {n} text, edition {version}.\n\n"
        f"## More {n}\n\nExtra words {version}.\n"
    )


def test_queries_during_reingest_see_old_or_new_never_mixed_or_empty(
    settings: Settings, make_site: SiteFactory
) -> None:
    site_dir = make_site({f"docs/page-{n}.md": page(n, 0) for n in range(30)})
    site = read_site_config(site_dir)
    writer = EdgeStore(settings.data_dir)
    run_ingest(settings, site, embedder=HashEmbedder(), store=writer)

    reader = EdgeStore(settings.data_dir).open_reader()  # the API process' view
    embedder, sparse = HashEmbedder(), Bm25Encoder()
    query = "reducers topic text edition"
    dense, terms = embedder.embed_query(query), sparse.query(query)
    failures: list[BaseException] = []
    generations_seen: set[str] = set()
    stop = threading.Event()
    queries = 0

    def query_loop() -> None:
        nonlocal queries
        while not stop.is_set():
            try:
                reader.refresh()
                hits = reader.hybrid(HybridQuery(dense, terms, limit=10, prefetch=40)).fused
                assert hits, "empty result during a switch"
                versions = {h.payload["index_version"] for h in hits}
                assert len(versions) == 1, f"mixed generations {versions}"
                generations_seen.update(versions)
                queries += 1
            except BaseException as exc:
                failures.append(exc)
                return

    thread = threading.Thread(target=query_loop)
    thread.start()
    try:
        for version in range(1, 5):
            for n in range(30):
                (site_dir / f"docs/page-{n}.md").write_text(page(n, version))
            report = run_ingest(settings, site, embedder=HashEmbedder(), store=writer)
            assert report.index.switched
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=30)
        reader.close()
        writer.close()
    assert failures == []
    assert queries > 0
    assert len(generations_seen) >= 2  # the reader really moved across switches


def test_a_second_writer_is_refused_while_one_holds_the_index(
    settings: Settings, make_site: SiteFactory
) -> None:
    import pytest

    from bookwise.errors import IndexBusyError

    site = read_site_config(make_site({"docs/a.md": "## A\n\ntext\n"}))
    first = EdgeStore(settings.data_dir)
    run_ingest(settings, site, embedder=HashEmbedder(), store=first)
    second = EdgeStore(settings.data_dir)
    (site.site_dir / "docs/a.md").write_text("## A\n\nchanged\n")
    with pytest.raises(IndexBusyError):
        run_ingest(settings, site, embedder=HashEmbedder(), store=second)
    first.close()
    assert run_ingest(settings, site, embedder=HashEmbedder(), store=second).index.switched
    second.close()
