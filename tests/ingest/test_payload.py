"""The typed chunk payload and the book model, against payloads a real index stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from apiserver import hash_settings, ingest_hashed
from bookwise.index.factory import open_store
from bookwise.ingest.book import Book, relink_outside_code
from bookwise.ingest.models import SectionFlags
from bookwise.ingest.payload import ChunkPayload
from bookwise.ingest.pipeline import ChunkingParams, ingest_site
from bookwise.ingest.site import read_site_config
from bookwise.settings import Settings
from docusite import FIXTURE_SITE

INDEX_STAMPS = {"payload_hash", "ingested_at", "index_version", "embed_model"}  # the index's own keys


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = hash_settings(tmp_path_factory.mktemp("payload") / "data", chunk_max_tokens=60)
    ingest_hashed(settings, FIXTURE_SITE)
    return settings


@pytest.fixture(scope="module")
def stored(indexed: Settings) -> Iterator[list[dict[str, Any]]]:
    store = open_store(indexed)
    try:
        reader = store.open_reader()
        yield [hit.payload for hit in reader.all_chunks()]
        reader.close()
    finally:
        store.close()


def test_a_stored_payload_reads_back_to_the_same_keys_and_values(stored: list[dict[str, Any]]) -> None:
    assert len(stored) > 50
    for payload in stored:
        again = ChunkPayload.from_payload(payload).to_payload()
        assert list(again) == list(payload)  # same keys, same order
        assert json.dumps(again) == json.dumps(payload)  # same values, same JSON types
        assert INDEX_STAMPS <= set(ChunkPayload.from_payload(payload).extra)


def test_ingest_writes_what_the_index_stores(indexed: Settings, stored: list[dict[str, Any]]) -> None:
    """Every key but the index's own stamps is ingestion's, written through the typed payload."""
    params = ChunkingParams(indexed.chunk_max_tokens, indexed.chunk_overlap_tokens, 0, 10_000, len)
    chunks = ingest_site(read_site_config(FIXTURE_SITE), params).chunks
    written = [chunk.payload for chunk in chunks]
    assert {tuple(p) for p in written} == {tuple(k for k in p if k not in INDEX_STAMPS) for p in stored}
    for payload in written:
        assert payload == ChunkPayload.from_payload(payload).to_payload()
        assert not ChunkPayload.from_payload(payload).extra


def test_an_older_payload_reads_with_the_defaults_readers_had() -> None:
    """An ingest before learning objectives, suggestions and section totals: missing keys read as
    the `.get()` defaults the readers used; keys with reader-specific fallbacks stay None."""
    old = {"section_chunk_index": 2, "text": "Some text.", "title": "A page", "page_url": "/docs/a"}
    payload = ChunkPayload.from_payload(old)
    assert (payload.title, payload.heading, payload.heading_level, payload.breadcrumb) == (
        "A page",
        "",
        1,
        (),
    )
    assert (payload.char_start, payload.char_end, payload.content_hash) == (-1, -1, "")
    assert payload.learning_objectives == () and payload.suggestions is None and not payload.unlisted
    assert payload.flags == SectionFlags()
    for unset in ("url", "section_id", "content_type", "module", "chapter", "version", "locale"):
        assert getattr(payload, unset) is None, unset


def test_the_book_from_an_index_is_the_book_ingest_parsed(stored: list[dict[str, Any]]) -> None:
    """Pages, their sections in order and their headings, as the index gives them back, are the
    Documents ingestion parsed."""
    book = Book.from_payloads(ChunkPayload.from_payload(p) for p in stored)
    params = ChunkingParams(10_000, 0, 0, 10_000, len)
    documents = {d.url: d for d in ingest_site(read_site_config(FIXTURE_SITE), params).documents}
    assert {page.page_url for page in book.pages} == set(documents)
    for page in book.pages:
        document = documents[page.page_url]
        assert (page.title, page.doc_path, page.unlisted) == (
            document.title,
            document.doc_path,
            document.unlisted,
        )
        assert [s.heading for s in page.sections] == [s.as_heading() for s in document.sections]
    # Reading order: sidebar position, then the source path.
    keys = [(p.sidebar_position is None, p.sidebar_position or 0, p.doc_path) for p in book.reading]
    assert keys == sorted(keys) and {id(p) for p in book.reading} == {id(p) for p in book.pages}


def test_a_payload_is_frozen() -> None:
    payload = ChunkPayload(text="x")
    with pytest.raises(AttributeError):
        payload.text = "y"  # type: ignore[misc]


def test_links_between_pages_become_page_urls_outside_code_only() -> None:
    pages = {"a/intro.md": "https://site.test/docs/intro"}
    text = (
        "See [intro](../a/intro.md#start) and [site](/docs/x).\n\n"
        "````md\n[intro](../a/intro.md)\n```js\nstill code [intro](../a/intro.md)\n```\n````\n\n"
        "~~~\n[intro](../a/intro.md)\n~~~\n"
        'After [intro](../a/intro.md "Intro") and [missing](../b/gone.md).'
    )
    out = relink_outside_code(text, "b/page.md", pages.get, "https://site.test")
    assert out.split("\n") == [
        "See [intro](https://site.test/docs/intro#start) and [site](https://site.test/docs/x).",
        "",
        "````md",
        "[intro](../a/intro.md)",
        "```js",  # neither a shorter fence nor one with an info string closes it
        "still code [intro](../a/intro.md)",
        "```",
        "````",
        "",
        "~~~",
        "[intro](../a/intro.md)",
        "~~~",
        'After [intro](https://site.test/docs/intro "Intro") and [missing](../b/gone.md).',
    ]
