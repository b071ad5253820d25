"""The question log's writer: off means nothing, on writes in the background, never fails its caller."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bookwise.cli import main
from bookwise.errors import InsightsStoreError
from bookwise.insights.log import QuestionLog, StoreHandle, reader_hash
from bookwise.insights.records import LogFilter, QuestionRecord
from bookwise.insights.sql import SqlStore
from bookwise.insights.store import Store, open_store


@pytest.fixture
def target(insights_target: str | Path) -> str | Path:
    """A SQLite file or a new database on the session's PostgreSQL (tests/conftest.py)."""
    return insights_target


ADDRESS = "203.0.113.77"


def record(n: int = 0, *, at: datetime | None = None) -> QuestionRecord:
    return QuestionRecord(
        created_at=at or datetime.now(UTC),
        request_id=f"r{n}",
        question=f"q{n}",
        mode="normal",
        outcome="answered",
    )


def rows_of(store: Store, count: int, timeout: float = 10.0) -> list[QuestionRecord]:
    deadline = time.monotonic() + timeout
    while len(found := store.questions(LogFilter())) < count:
        assert time.monotonic() < deadline, f"{len(found)} of {count} rows written"
        time.sleep(0.01)
    return found


@pytest.fixture
def handle(target: str | Path) -> Iterator[StoreHandle]:
    opened = StoreHandle(lambda: open_store(target))
    yield opened
    opened.close()


def test_log_off_writes_nothing_and_starts_no_thread(handle: StoreHandle) -> None:
    log = QuestionLog(handle, enabled=False, retention_days=30)
    log.start()
    log.submit(record(), ADDRESS)
    log.close()
    assert handle.get().questions(LogFilter()) == []


def test_log_on_writes_each_record_with_a_hashed_reader_and_no_address(handle: StoreHandle) -> None:
    log = QuestionLog(handle, enabled=True, retention_days=30)
    log.start()
    try:
        for n in range(3):
            log.submit(record(n), ADDRESS if n < 2 else "198.51.100.5")
        written = rows_of(handle.get(), 3)
    finally:
        log.close()
    readers = [q.reader for q in written]
    assert readers[0] == readers[1] != readers[2]  # one reader counted once, another apart
    store = handle.get()
    salt = store.reader_salt(datetime.now(UTC).date())
    assert readers[0] == reader_hash(salt, ADDRESS) and len(readers[0] or "") == 16
    assert isinstance(store, SqlStore)
    for table in ("questions", "feedback", "reader_salts", "schema_version"):  # no address, anywhere
        for row in store.rows(table):
            assert not any(ADDRESS in str(value) or "198.51.100.5" in str(value) for value in row.values())


def test_rows_past_the_retention_are_purged_when_the_log_starts(handle: StoreHandle) -> None:
    store = handle.get()
    store.add_question(record(1, at=datetime.now(UTC) - timedelta(days=31)))
    store.add_question(record(2, at=datetime.now(UTC) - timedelta(days=29)))
    log = QuestionLog(handle, enabled=True, retention_days=30)
    log.start()
    try:
        deadline = time.monotonic() + 10
        while [q.request_id for q in store.questions(LogFilter())] != ["r2"]:
            assert time.monotonic() < deadline, "not purged"
            time.sleep(0.01)
    finally:
        log.close()


def test_rows_past_the_retention_are_purged_while_serving(handle: StoreHandle) -> None:
    log = QuestionLog(handle, enabled=True, retention_days=1, purge_every_s=0.05)
    log.start()
    try:
        time.sleep(0.1)  # the purge at start has run
        handle.get().add_question(record(1, at=datetime.now(UTC) - timedelta(days=2)))  # e.g. a clock jump
        deadline = time.monotonic() + 10
        while handle.get().questions(LogFilter()):
            assert time.monotonic() < deadline, "not purged"
            time.sleep(0.01)
    finally:
        log.close()


def test_a_failing_store_never_raises_to_the_caller_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> Store:
        raise InsightsStoreError("insights store postgresql://bookwise@db:5432/x: connection refused")

    log = QuestionLog(StoreHandle(broken), enabled=True, retention_days=30)
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        log.start()
        started = time.monotonic()
        for n in range(50):
            log.submit(record(n), ADDRESS)
        assert time.monotonic() - started < 1  # queued, not written: no wait on the database
        log.close()
    failures = [r for r in caplog.records if r.getMessage() == "question_log_write_failed"]
    assert len(failures) == 1


def test_a_full_queue_drops_records_instead_of_blocking(
    handle: StoreHandle, caplog: pytest.LogCaptureFixture
) -> None:
    log = QuestionLog(handle, enabled=True, retention_days=30, queue_size=2)  # not started: nothing drains
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        for n in range(5):
            log.submit(record(n))
    assert [r.getMessage() for r in caplog.records] == ["question_log_full"]


def test_cli_forget_before_deletes_older_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "feedback.sqlite3"
    store = open_store(path)
    store.add_question(record(1, at=datetime(2026, 3, 31, 23, 59, tzinfo=UTC)))
    store.add_question(record(2, at=datetime(2026, 4, 1, 0, 0, tzinfo=UTC)))
    store.close()
    monkeypatch.setenv("BOOKWISE_FEEDBACK_DB", str(path))
    assert main(["insights", "--forget-before", "2026-04-01"]) == 0
    assert "deleted 1 " in capsys.readouterr().out
    store = open_store(path)
    try:
        assert [q.request_id for q in store.questions(LogFilter())] == ["r2"]
    finally:
        store.close()


def test_cli_forget_before_refuses_a_date_it_cannot_read(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["insights", "--forget-before", "1 April"])
    assert exited.value.code == 2 and "YYYY-MM-DD" in capsys.readouterr().err
