"""GET /api/search/instant on a real uvicorn over the example book: sections for a query that ends
in half a word, grouped by page with their citation anchors and marked words, within the reader's
version, and a per-client budget of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import local_http
from apiserver import hash_settings, ingest_hashed, running_api
from bookwise.settings import Settings
from examplesite import EXAMPLE_SITE


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = hash_settings(tmp_path_factory.mktemp("example") / "data", instant_search_per_minute=40)
    ingest_hashed(settings, EXAMPLE_SITE)
    return settings


@pytest.fixture(scope="module")
def url(example: Settings) -> Iterator[str]:
    with running_api(example) as url:
        yield url


def instant(url: str, q: str, **params: Any) -> dict[str, Any]:
    response = local_http.get(f"{url}/api/search/instant", params={"q": q, **params}, timeout=30)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def sections(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(page["page_url"], section) for page in data["pages"] for section in page["sections"]]


def test_a_half_typed_word_finds_the_heading_it_begins(url: str) -> None:
    data = instant(url, "kalm")
    found = sections(data)
    assert found, data
    page_url, best = found[0]
    assert page_url == "/docs/sensing/kalman-filter"
    assert best["url"].startswith(page_url)
    # Results come grouped: each page once, its sections under it.
    pages = [page["page_url"] for page in data["pages"]]
    assert len(pages) == len(set(pages))


def test_marks_point_at_the_matched_words_of_the_snippet_and_heading(url: str) -> None:
    data = instant(url, "windup")
    _, best = sections(data)[0]
    assert best["url"] == "/docs/control/pid-control#pid-pitfalls"
    assert best["anchor"] == "pid-pitfalls"
    marked = [best["heading"][s:e] for s, e in best["heading_marks"]]
    assert marked == ["Windup"]
    snippet_marked = {best["snippet"][s:e].lower() for s, e in best["snippet_marks"]}
    assert snippet_marked <= {"windup"}


def test_the_url_is_the_citation_url_of_the_same_section(url: str) -> None:
    searched = local_http.post(f"{url}/api/search", json={"query": "integral windup", "top_k": 1}, timeout=30)
    cited = searched.json()["sources"][0]["url"]
    assert cited in [section["url"] for _, section in sections(instant(url, "integral windup "))]


def test_an_unknown_version_falls_back_to_the_whole_book(url: str) -> None:
    assert sections(instant(url, "kalm", version="9.9"))


def test_an_empty_query_has_no_results(url: str) -> None:
    data = instant(url, "   ")
    assert data["pages"] == [] and data["count"] == 0


def test_the_dense_channel_joins_once_a_word_is_complete(url: str) -> None:
    assert instant(url, "kalm")["dense"] is False
    assert instant(url, "how do th")["dense"] is False  # stop words are no words of the query
    assert instant(url, "kalman filt")["dense"] is True


def test_keystroke_searches_have_their_own_budget(url: str) -> None:
    # The POST endpoints' budget (30 a minute by default) is not spent by typing...
    statuses = [
        local_http.get(f"{url}/api/search/instant", params={"q": f"k{'a' * n}"}, timeout=30).status_code
        for n in range(45)
    ]
    assert statuses.count(429) >= 1 and statuses[:30].count(429) == 0, statuses
    refused = local_http.get(f"{url}/api/search/instant", params={"q": "pid"}, timeout=30)
    assert refused.json()["error"]["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    searched = local_http.post(f"{url}/api/search", json={"query": "pid"}, timeout=30)
    assert searched.status_code == 200
