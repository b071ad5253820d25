"""GET /api/suggestions on a real uvicorn: up to three questions per page, built at ingest
and checked by retrieval, each one the book answers from that page; and the CLI side of suggested questions
(`bookwise ingest` builds them, `bookwise ask --action` runs a study action)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import local_http
from apiserver import chat, cli_env, hash_settings, ingest_hashed, running_api
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.suggestions import SuggestionStore, suggest_for_live_index
from bookwise.settings import Settings
from examplesite import EXAMPLE_SITE

KALMAN = "/docs/sensing/kalman-filter"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = hash_settings(tmp_path_factory.mktemp("example") / "data")
    ingest_hashed(settings, EXAMPLE_SITE)
    suggest_for_live_index(settings)
    return settings


@pytest.fixture(scope="module")
def url(example: Settings) -> Iterator[str]:
    with running_api(example) as url:
        yield url


def suggestions(url: str, page: str) -> list[str]:
    response = local_http.get(f"{url}/api/suggestions", params={"url": page}, timeout=10)
    assert response.status_code == 200, response.text
    questions: list[str] = response.json()["questions"]
    return questions


def all_pages(example: Settings) -> list[str]:
    retriever = Retriever.open(example)
    try:
        return sorted(retriever.outlines())
    finally:
        retriever.close()


def test_every_page_gets_at_most_three_suggestions_and_most_get_some(url: str, example: Settings) -> None:
    pages = all_pages(example)
    counts = {page: len(suggestions(url, page)) for page in pages}
    assert all(count <= 3 for count in counts.values()), counts
    assert sum(1 for count in counts.values() if count) >= len(pages) - 1, counts


def test_each_suggestion_is_answered_from_its_own_page(url: str, example: Settings) -> None:
    """Searched suggestions rank their page first; page questions are answered from the page."""
    checked = 0
    for page in all_pages(example):
        for question in suggestions(url, page):
            stream = chat(url, {"question": question, "page": {"url": f"http://localhost:3000{page}"}})
            sources = stream.first("sources")["sources"]
            assert sources and sources[0]["page_url"] == page, (page, question, sources[:1])
            assert stream.names()[-1] == "done", (page, question)
            checked += 1
    assert checked >= 10


def test_kalman_suggestions_come_from_its_title_and_headings(url: str) -> None:
    found = suggestions(url, f"http://localhost:3000{KALMAN}/?utm=x#kalman-1d")  # browser URL forms
    assert found and found == suggestions(url, KALMAN)
    assert any("Kalman" in q or "sensor" in q for q in found), found
    assert found[-1] == "What are the exercises on this page?"  # the page's exercises keep a slot


def test_unknown_pages_and_indexes_without_suggestions_get_an_empty_list(
    url: str, example: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert suggestions(url, "/blog/hello") == []
    assert suggestions(url, "") == []
    bare = hash_settings(tmp_path_factory.mktemp("bare") / "data")
    ingest_hashed(bare, EXAMPLE_SITE)  # no suggestions built: an index from before suggested questions
    with running_api(bare) as other:
        assert suggestions(other, KALMAN) == []


def test_the_store_keeps_one_file_per_generation(tmp_path_factory: pytest.TempPathFactory) -> None:
    store = SuggestionStore(tmp_path_factory.mktemp("store"))
    store.write("g1", {"/a": ["Q1?"]})
    store.write("g2", {"/a": ["Q2?"]})
    assert store.for_page("g1", "/a/") == ["Q1?"] and store.for_page("g2", "/a") == ["Q2?"]
    assert store.for_page("g3", "/a") == []


def test_bookwise_ingest_builds_the_suggestions_of_its_generation(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docs" / "kalman.md").write_text(
        "---\ntitle: The Kalman Filter\n---\n\nThe Kalman filter fuses odometry with range readings.\n\n"
        "## Why not trust one sensor?\n\nOdometry drifts and range readings are noisy.\n",
        encoding="utf-8",
    )
    env = cli_env(tmp_path / "d")
    done = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "ingest", str(site), "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["suggestions"] >= 1
    stored = SuggestionStore(tmp_path / "d").for_page(report["generation"], "/docs/kalman")
    assert "Why not trust one sensor?" in stored


def test_bookwise_ask_runs_a_study_action(example: Settings) -> None:
    env = cli_env(example.data_dir)
    done = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "ask", "", "--action", "summarize_page", "--page-url", KALMAN],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Choosing the noise parameters Q and R" in done.stdout
    refused = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "ask", "", "--action", "summarize_page"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0 and "needs page.url" in refused.stderr
