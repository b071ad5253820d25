"""Bookwise's url#anchor for every section equals what a real Docusaurus 3 build renders.

Builds ``tests/fixtures/docusite`` with npm (about a minute the first time, cached after).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from bookwise.index.embedders import HashEmbedder
from bookwise.ingest.pipeline import ChunkingParams, IngestResult, ingest_site
from bookwise.ingest.site import read_site_config
from docusite import FIXTURE_SITE, BuiltPage, build_fixture_site, read_built_pages, unresolved

pytestmark = pytest.mark.docusaurus

# Ids the build adds that no source heading has (GFM footnotes).
GENERATED_IDS = {"footnote-label"}


@pytest.fixture(scope="module")
def built() -> dict[str, BuiltPage]:
    return read_built_pages(build_fixture_site())


@pytest.fixture(scope="module")
def ingested() -> IngestResult:
    embedder = HashEmbedder()
    site = read_site_config(FIXTURE_SITE)
    assert (site.base_url, site.route_base_path, site.read_from) == (
        "/mysite/",
        "docs",
        "docusaurus.config.js",
    )
    params = ChunkingParams(450, 60, 40, embedder.max_input_tokens, embedder.count_tokens)
    return ingest_site(site, params)


def test_every_doc_page_is_ingested_at_its_built_url(
    built: dict[str, BuiltPage], ingested: IngestResult
) -> None:
    assert ingested.errors == []
    built_docs = {url: page.doc_id for url, page in built.items() if page.doc_id is not None}
    ours = {doc.url: doc.doc_id for doc in ingested.documents}
    assert ours == built_docs


def test_every_chunk_cites_an_existing_page_and_element_id(
    built: dict[str, BuiltPage], ingested: IngestResult
) -> None:
    assert ingested.chunks
    assert unresolved((chunk.payload["url"] for chunk in ingested.chunks), built) == []
    for chunk in ingested.chunks:
        page_url, anchor = chunk.payload["page_url"], chunk.payload["anchor"]
        assert chunk.payload["url"] == page_url + (f"#{anchor}" if anchor else "")


def test_every_built_heading_id_has_its_section_in_the_index(
    built: dict[str, BuiltPage], ingested: IngestResult
) -> None:
    sections: dict[str, list[str]] = defaultdict(list)
    for document in ingested.documents:
        sections[document.url] = [s.anchor for s in document.sections if s.anchor]
    for url, page in built.items():
        if page.doc_id is None:
            continue
        expected = [i for i in page.heading_ids if i not in GENERATED_IDS]
        assert sections[url] == expected, url
