"""Must-show 3: on the example textbook, every citation in the index lands on a real page and element
of the real build, and the plugin's manifest agrees with Bookwise's own URL/anchor computation on
every doc and every heading."""

from pathlib import Path
from typing import Any

import pytest

from bookwise.index.build import IngestReport
from bookwise.index.factory import open_store
from bookwise.settings import Settings
from docusite import read_built_pages, unresolved
from examplesite import build_example, index_example, read_manifest

pytestmark = pytest.mark.docusaurus


@pytest.fixture(scope="module")
def build_dir() -> Path:
    return build_example()


@pytest.fixture(scope="module")
def indexed(build_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, IngestReport]:
    return index_example(tmp_path_factory.mktemp("example-index"), build_dir)


def test_manifest_and_bookwise_agree_on_every_doc_and_heading(
    build_dir: Path, indexed: tuple[Settings, IngestReport]
) -> None:
    _, report = indexed
    check = report.manifest
    assert check is not None
    assert check.mismatches == []
    assert check.docs == report.docs_processed == len(read_manifest(build_dir)["docs"]) >= 8
    assert check.docs_agreeing == check.docs
    assert check.headings_agreeing == check.headings >= 40
    assert report.errors == []


def test_manifest_headings_equal_an_html_parsers_reading_of_the_build(build_dir: Path) -> None:
    pages = read_built_pages(build_dir)
    for doc in read_manifest(build_dir)["docs"]:
        assert doc["built"], doc["permalink"]
        assert tuple(h["id"] for h in doc["headings"]) == pages[doc["permalink"]].heading_ids


def index_payloads(settings: Settings) -> list[dict[str, Any]]:
    store = open_store(settings)
    try:
        reader = store.open_reader()
        try:
            return [hit.payload for hit in reader.all_chunks()]
        finally:
            reader.close()
    finally:
        store.close()


def test_every_citation_url_in_the_index_resolves_to_a_page_and_element(
    build_dir: Path, indexed: tuple[Settings, IngestReport]
) -> None:
    settings, report = indexed
    pages = read_built_pages(build_dir)
    payloads = index_payloads(settings)
    assert len(payloads) == report.chunks > 0
    assert unresolved((payload["url"] for payload in payloads), pages) == []
    anchored = {p["url"] for p in payloads if "#" in p["url"]}
    assert len(anchored) >= 40  # sections, not just pages, are cited
