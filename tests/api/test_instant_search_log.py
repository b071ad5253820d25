"""The search the reader settled on reaches the question log (POST /api/search/instant/log on a real
uvicorn with the log on), and `bookwise insights` lists the searches left with no result opened
among the coverage gaps; a search that ended on a result is no gap."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

import local_http
from apiserver import cli_env, hash_settings, ingest_hashed, running_api
from bookwise.insights.factory import open_insights_store
from bookwise.insights.records import LogFilter, QuestionRecord
from bookwise.settings import Settings
from examplesite import EXAMPLE_SITE


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = hash_settings(tmp_path_factory.mktemp("example") / "data", question_log=True)
    ingest_hashed(settings, EXAMPLE_SITE)
    return settings


@pytest.fixture(scope="module")
def url(example: Settings) -> Iterator[str]:
    with running_api(example) as url:
        yield url


def settle(url: str, **body: Any) -> dict[str, Any]:
    response = local_http.post(f"{url}/api/search/instant/log", json=body, timeout=30)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def logged(settings: Settings, count: int) -> list[QuestionRecord]:
    """The log's rows once the writer thread has written ``count`` of them."""
    deadline = time.monotonic() + 30
    while True:
        store = open_insights_store(settings.resolved_insights_db)
        try:
            rows = store.questions(LogFilter())
        finally:
            store.close()
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def test_settled_searches_reach_the_log_and_unopened_ones_the_gaps(example: Settings, url: str) -> None:
    first = local_http.get(f"{url}/api/search/instant", params={"q": "integral windup "}, timeout=30).json()
    opened = first["pages"][0]["sections"][0]["url"]
    page = "https://robots.example.org/docs/control/pid-control?utm=x#top"
    assert settle(url, query="integral windup ", opened=opened, page_url=page)["logged"] is True
    settle(url, query="kalman filt")  # results, none opened
    settle(url, query="zzqx vorpal")  # nothing found
    settle(url, query="pid gains", asked=True)  # asked to the chat instead
    settle(url, query="kalman gain", opened="/docs/not-a-page#nowhere")  # not a result of the book

    rows = {row.question: row for row in logged(example, 5)}
    assert set(rows) == {"integral windup", "kalman filt", "zzqx vorpal", "pid gains", "kalman gain"}
    clicked = rows["integral windup"]
    assert clicked.mode == "instant_search" and clicked.outcome == "answered"
    assert [c.url + "#" + (c.heading_id or "") for c in clicked.cited] == [opened]
    assert clicked.page_url == "/docs/control/pid-control"  # the path only, as for a question
    assert rows["kalman filt"].cited == () and rows["kalman filt"].outcome == "answered"
    assert rows["zzqx vorpal"].outcome == "not_covered"
    assert rows["pid gains"].mode == "instant_search_asked"
    assert rows["kalman gain"].cited == ()

    done = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "insights", "--json"],
        capture_output=True,
        text=True,
        env=cli_env(example.data_dir, BOOKWISE_SUFFICIENCY_THRESHOLD="0"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    reasons: dict[str, set[str]] = {}
    for gap in report["gaps"]:
        for phrasing in gap["phrasings"]:
            reasons.setdefault(phrasing, set()).update(gap["reasons"])
    assert {"kalman filt", "zzqx vorpal", "kalman gain"} <= set(reasons)
    assert "integral windup" not in reasons and "pid gains" not in reasons
    assert "search_no_results" in reasons["zzqx vorpal"]
    # The searches are counted apart from the answers.
    assert report["summary"]["questions"] == 0
    searches = report["searches"]
    assert (searches["searches"], searches["opened"], searches["asked"], searches["no_results"]) == (
        5,
        1,
        1,
        1,
    )


def test_an_empty_query_is_not_logged(url: str) -> None:
    assert settle(url, query="   ")["logged"] is False
