"""Feedback cannot fill the disk, and a broken feedback store does not stop the API.

A red-team pass: any `request_id` was accepted (even ""), with no retention: 10,923 posts of 57 KB grew
the database from 86 KB to 631 MB in 20 s. A corrupt `feedback.sqlite3`, or a data dir where it
cannot be written, stopped the API from starting.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

import local_http
from apiserver import build_book, chat, running_api
from bookwise.api.feedback import Feedback
from bookwise.errors import UnknownAnswerError
from bookwise.insights.log import StoreHandle
from bookwise.insights.records import FeedbackRecord, LogFilter
from bookwise.insights.sqlite import SqliteStore
from bookwise.settings import Settings

QUESTION = {"question": "What do quokkas eat in the morning?"}


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return build_book(tmp_path_factory.mktemp("feedback"), feedback_max_comment_chars=100)


@pytest.fixture(scope="module")
def url(book: Settings) -> Iterator[str]:
    with running_api(book) as running:
        yield running


def rating(request_id: str, **extra: Any) -> dict[str, Any]:
    return {"request_id": request_id, "rating": "up", "question": "q", "answer": "a", **extra}


def answer_id(url: str) -> str:
    stream = chat(url, QUESTION)
    assert stream.names()[-1] == "done"
    return str(stream.first("meta")["request_id"])


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return local_http.post(f"{url}/api/feedback", json=body, timeout=10)


@pytest.mark.parametrize("request_id", ["", "made-up-id-123", "0123456789abcdef0123456789abcdef"])
def test_feedback_for_an_answer_this_server_did_not_give_is_refused(url: str, request_id: str) -> None:
    refused = post(url, rating(request_id))
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "feedback_unknown_answer"
    assert post(url, rating(answer_id(url))).status_code == 201  # a real answer's id is accepted


def test_feedback_is_accepted_once_per_answer(url: str, book: Settings) -> None:
    request_id = answer_id(url)
    assert post(url, rating(request_id, comment="helpful")).status_code == 201
    again = post(url, rating(request_id, rating="down"))
    assert again.status_code == 404 and again.json()["error"]["code"] == "feedback_unknown_answer"
    with sqlite3.connect(book.resolved_feedback_db) as db:
        rows = db.execute("SELECT rating FROM feedback WHERE request_id = ?", (request_id,)).fetchall()
    assert rows == [("up",)]


def test_feedback_comment_longer_than_the_setting_is_refused(url: str) -> None:
    request_id = answer_id(url)
    refused = post(url, rating(request_id, comment="x" * 101))
    assert refused.status_code == 422 and "comment is too long" in refused.json()["error"]["message"]
    assert post(url, rating(request_id, comment="x" * 100)).status_code == 201  # the id was not used up


def test_feedback_store_stays_under_its_size_cap_oldest_ratings_deleted_first(tmp_path: Path) -> None:
    cap = 512 * 1024
    store = SqliteStore(tmp_path / "feedback.sqlite3", max_bytes=cap)
    try:
        for n in range(300):  # 300 × 20 KB: 6 MB offered to a 512 KB store
            rated = FeedbackRecord(datetime.now(UTC), f"r{n}", "down", question="q", answer="a" * 20_000)
            store.add_feedback(rated)
            assert store.used_bytes() <= cap
        kept = [row.request_id for row in store.feedback(LogFilter())]
    finally:
        store.close()
    assert kept[-1] == "r299" and "r0" not in kept and 10 < len(kept) < 300
    on_disk = sum(p.stat().st_size for p in tmp_path.iterdir())  # database, WAL and its index
    assert on_disk < cap + 5_000_000  # the WAL is truncated to 4 MB after a checkpoint


def test_only_the_most_recent_answers_may_be_rated(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "feedback.sqlite3", max_bytes=1_000_000)
    feedback = Feedback(StoreHandle(lambda: store), remembered=2)
    try:
        for request_id in ("a", "b", "c"):
            feedback.remember(request_id)
        feedback.remember("b")  # remembered again: the most recent now, "c" the oldest
        feedback.remember("d")
        with pytest.raises(UnknownAnswerError):
            feedback.add(request_id="c", rating="up")  # forgotten past the bound
        assert feedback.add(request_id="b", rating="up") and feedback.add(request_id="d", rating="down")
        with pytest.raises(UnknownAnswerError):
            feedback.add(request_id="b", rating="down")  # taken by its rating
    finally:
        store.close()


@pytest.fixture(scope="module")
def spare_book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A second copy of the book: one process cannot open the first one's Edge shard twice."""
    return build_book(tmp_path_factory.mktemp("spare"))


def serves_all_but_feedback(settings: Settings) -> None:
    with running_api(settings) as url:
        assert local_http.post(f"{url}/api/search", json={"query": "quokka"}).status_code == 200
        request_id = answer_id(url)
        for _ in range(2):
            refused = post(url, rating(request_id))
            assert refused.status_code == 503
            assert refused.json()["error"]["code"] == "feedback_unavailable"


def logged(caplog: pytest.LogCaptureFixture, event: str) -> int:
    return sum(record.getMessage() == event for record in caplog.records)


def test_corrupt_feedback_db_turns_feedback_off_and_the_api_still_serves(
    spare_book: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corrupt = tmp_path / "feedback.sqlite3"
    corrupt.write_bytes(b"this is not a database\x00" * 500)
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        serves_all_but_feedback(spare_book.model_copy(update={"feedback_db": corrupt}))
    assert logged(caplog, "feedback_unavailable") == 1


def test_unwritable_feedback_location_turns_feedback_off_and_the_api_still_serves(
    spare_book: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Root ignores permissions, so a location that cannot hold a file: a path under a plain file.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        serves_all_but_feedback(spare_book.model_copy(update={"feedback_db": blocker / "feedback.sqlite3"}))
    assert logged(caplog, "feedback_unavailable") == 1


def test_read_only_feedback_dir_turns_feedback_off_and_the_api_still_serves(
    spare_book: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # An existing folder in which no file can be created, for root too (CI runs as root, which a
    # chmod 0o555 folder does not stop): procfs takes no new files. Unlike a path under a plain
    # file, the folder is there, so it is SQLite's open of the new file that fails.
    read_only = Path("/proc/self")
    assert read_only.is_dir() and not os.access(read_only / "feedback.sqlite3", os.F_OK)
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        serves_all_but_feedback(spare_book.model_copy(update={"feedback_db": read_only / "feedback.sqlite3"}))
    assert logged(caplog, "feedback_unavailable") == 1
    reported = [r for r in caplog.records if r.getMessage() == "feedback_unavailable"]
    assert "unable to open database file" in str(reported[0].__dict__["fields"]["error"])
