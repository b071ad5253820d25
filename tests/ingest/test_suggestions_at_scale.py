"""A 20,000-page site's ingest ran on for over 15 minutes after switching its index: the suggested
questions step searched every proposed question of every page, each search dearer as the book grows.
It is now bounded by ``BOOKWISE_SUGGESTED_QUESTIONS_MAX_SEARCHES`` (searches counted here, no timings)
and checks pages breadth first; below the cap it keeps exactly what the page-by-page check kept."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apiserver import cli_env, hash_settings, ingest_hashed
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.suggestions import SuggestionsReport, build_suggestions, checked_suggestions
from bookwise.settings import Settings

PAGES = 12
TOPICS = ["odometry", "lidar", "kalman", "planner", "servo", "battery", "gripper", "camera", "imu", "wheel"]


def write_site(root: Path) -> Path:
    """Pages with a title and three headings each: four proposals to check per page."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for n in range(PAGES):
        a, b, c = (TOPICS[(n + k) % len(TOPICS)] for k in range(3))
        (docs / f"page-{n:02d}.md").write_text(
            f"---\ntitle: The {a} {b} guide {n}\n---\n\nThis page {n} explains the {a} and the {b}.\n\n"
            f"## Calibrating the {a} unit{n}\n\nThe {a} unit{n} is calibrated with a {c} target{n}.\n\n"
            f"## Mounting the {b} bracket{n}\n\nThe {b} bracket{n} holds the {c} sensor{n} in place.\n\n"
            f"## Testing the {c} loop{n}\n\nRun the {c} loop{n} against recorded {a} data.\n",
            encoding="utf-8",
        )
    return root


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("scale")
    settings = hash_settings(root / "data")
    ingest_hashed(settings, write_site(root / "site"))
    return settings


@pytest.fixture
def retriever(book: Settings) -> Iterator[tuple[Retriever, list[str]]]:
    """The live index as a reader, with every search's question recorded."""
    opened = Retriever.open(book)
    asked: list[str] = []
    search = opened.search

    def counting(question: str, **kwargs: Any) -> Any:
        asked.append(question)
        return search(question, **kwargs)

    opened.search = counting  # type: ignore[method-assign]
    try:
        yield opened, asked
    finally:
        opened.close()


def page_by_page(retriever: Retriever, per_page: int) -> dict[str, list[str]]:
    """The check as it was before the cap: each page's proposals in order until its slots are full."""
    kept: dict[str, list[str]] = {}
    for url, outline in retriever.outlines().items():
        raw = outline.sections[0].first.suggestions or ()
        proposed = [(p.question, p.check) for p in raw]
        fixed = [q for q, check in proposed if not check][:per_page]
        searched: list[str] = []
        for question, check in proposed:
            if len(searched) >= per_page - len(fixed):
                break
            found = retriever.search(question, top_k=1).sections if check else []
            if found and found[0].page_url == url:
                searched.append(question)
        chosen = set(fixed) | set(searched)
        if chosen:
            kept[url] = [q for q, _ in proposed if q in chosen]
    return kept


def test_suggestions_searches_are_capped_by_max_searches_breadth_first(
    retriever: tuple[Retriever, list[str]],
) -> None:
    opened, asked = retriever
    report = SuggestionsReport()
    kept = checked_suggestions(opened, 3, max_searches=PAGES - 2, report=report)
    assert len(asked) == report.searches == PAGES - 2 and report.capped
    # Breadth first: the searches went to different pages, each page's first proposal.
    firsts = {outline.sections[0].first.suggestions[0].question for outline in opened.outlines().values()}
    assert set(asked) <= firsts and len(set(asked)) == len(asked)
    assert report.kept == sum(len(q) for q in kept.values()) and set(sum(kept.values(), [])) <= set(asked)


def test_suggestions_under_the_cap_keep_what_the_page_by_page_check_kept(
    retriever: tuple[Retriever, list[str]],
) -> None:
    opened, asked = retriever
    expected = page_by_page(opened, 3)
    searched_before = len(asked)
    report = SuggestionsReport()
    assert checked_suggestions(opened, 3, max_searches=10_000, report=report) == expected
    assert not report.capped and report.searches == len(asked) - searched_before
    assert report.searches <= 4 * PAGES  # at most the proposals, never more
    assert sum(len(q) for q in expected.values()) >= PAGES  # the check keeps something on most pages


def test_suggestions_max_searches_zero_searches_nothing(
    retriever: tuple[Retriever, list[str]], book: Settings, tmp_path: Path
) -> None:
    opened, asked = retriever
    settings = hash_settings(tmp_path, suggested_questions_max_searches=0)
    _, report = build_suggestions(opened, settings.data_dir, 3, settings.suggested_questions_max_searches)
    assert asked == [] and report.capped and report.kept == 0


def test_bookwise_ingest_reports_its_capped_suggestions_step(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site")
    env = cli_env(tmp_path / "d") | {"BOOKWISE_SUGGESTED_QUESTIONS_MAX_SEARCHES": "5"}
    done = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "ingest", str(site), "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    step = json.loads(done.stdout)["suggestions_step"]
    assert step["searches"] == 5 and step["capped"] is True
    text = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "ingest", str(site)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert "stopped at BOOKWISE_SUGGESTED_QUESTIONS_MAX_SEARCHES" in text.stdout, text.stdout
