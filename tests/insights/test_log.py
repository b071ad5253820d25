"""The question log's writer: off means nothing, on writes in the background, never fails its caller."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from bookwise.cli import main
from bookwise.errors import InsightsStoreError
from bookwise.insights.factory import open_insights_store
from bookwise.insights.log import KEY_FILE, QuestionLog, ReaderKey, StoreHandle, reader_hash
from bookwise.insights.records import LogFilter, QuestionRecord
from bookwise.insights.sql import SqlStore
from bookwise.insights.store import Store
from bookwise.settings import Settings


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
    opened = StoreHandle(lambda: open_insights_store(target))
    yield opened
    opened.close()


def test_log_off_writes_nothing_and_starts_no_thread(handle: StoreHandle) -> None:
    log = QuestionLog(handle, enabled=False, retention_days=30)
    log.start()
    log.submit(record(), ADDRESS)
    log.close()
    assert handle.get().questions(LogFilter()) == []


def test_log_on_writes_each_record_with_a_hashed_reader_and_no_address(
    handle: StoreHandle, tmp_path: Path
) -> None:
    key = ReaderKey(key_file=tmp_path / KEY_FILE)
    log = QuestionLog(handle, enabled=True, retention_days=30, reader_key=key)
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
    salt = key.day_salt(datetime.now(UTC).date())
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
    store = open_insights_store(path)
    store.add_question(record(1, at=datetime(2026, 3, 31, 23, 59, tzinfo=UTC)))
    store.add_question(record(2, at=datetime(2026, 4, 1, 0, 0, tzinfo=UTC)))
    store.close()
    monkeypatch.setenv("BOOKWISE_FEEDBACK_DB", str(path))
    assert main(["insights", "--forget-before", "2026-04-01"]) == 0
    assert "deleted 1 " in capsys.readouterr().out
    store = open_insights_store(path)
    try:
        assert [q.request_id for q in store.questions(LogFilter())] == ["r2"]
    finally:
        store.close()


def test_cli_forget_before_refuses_a_date_it_cannot_read(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["insights", "--forget-before", "1 April"])
    assert exited.value.code == 2 and "YYYY-MM-DD" in capsys.readouterr().err


def written_alone(handle: StoreHandle, records: list[QuestionRecord], **log_args: object) -> QuestionLog:
    """Queue ``records`` before the writer starts, so that it takes them as one batch; then stop it."""
    log = QuestionLog(handle, enabled=True, retention_days=30, **log_args)  # type: ignore[arg-type]
    for n, one in enumerate(records):
        log.submit(one, f"198.51.100.{n % 250}")
    log.start()
    log.close()
    return log


def test_a_question_with_nul_or_a_lone_surrogate_costs_no_other_readers_rows(handle: StoreHandle) -> None:
    clean = [record(n) for n in range(30)]
    poisoned = [
        replace(record(100), question="kalman \u0000 gain", page_url="/docs/a\u0000b", locale="fr\u0000"),
        replace(record(101), question="kalman \ud800 gain", version="2\udfff"),
    ]
    written_alone(handle, clean[:15] + poisoned + clean[15:])
    stored = {q.request_id: q for q in handle.get().questions(LogFilter())}
    assert len(stored) == 32, sorted(stored)  # every clean row, and the odd ones made storable
    assert stored["r100"].question == "kalman \ufffd gain" and stored["r100"].locale == "fr\ufffd"
    assert stored["r101"].question == "kalman \ufffd gain" and stored["r101"].version == "2\ufffd"


def test_a_record_the_store_refuses_is_dropped_alone_and_logged_with_its_id(
    handle: StoreHandle, caplog: pytest.LogCaptureFixture
) -> None:
    refused = replace(record(100), evidence=object())  # type: ignore[arg-type]  # no driver can bind it
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        written_alone(handle, [record(n) for n in range(15)] + [refused] + [record(n) for n in range(15, 30)])
    stored = sorted(q.request_id for q in handle.get().questions(LogFilter()))
    assert stored == sorted(f"r{n}" for n in range(30))
    dropped = [r for r in caplog.records if r.getMessage() == "question_log_record_dropped"]
    assert len(dropped) == 1 and dropped[0].fields["request_id"] == "r100"  # type: ignore[attr-defined]
    assert "question_log_write_failed" not in [r.getMessage() for r in caplog.records]


SECRET_PAGE = (
    "https://user:pa55word@book.example/docs/intro;jsessionid=s3ssion?token=qtoken#access_token=ftoken"
)


def test_the_log_keeps_a_page_url_as_its_site_path_only(handle: StoreHandle) -> None:
    pages = [SECRET_PAGE, "https://evil.example/phish", "//evil.example/x", "/\\evil.example/y", "docs/z"]
    written_alone(handle, [replace(record(n), page_url=page) for n, page in enumerate(pages)])
    store = handle.get()
    stored = [q.page_url for q in store.questions(LogFilter())]
    assert stored == ["/docs/intro", "/phish", "/x", "/evil.example/y", "/docs/z"]
    assert isinstance(store, SqlStore)
    secrets = ("pa55word", "user:", "s3ssion", "qtoken", "ftoken", "evil.example/x")
    for row in store.rows("questions"):  # nothing of the secrets, in any column
        assert not any(s in str(row) for s in secrets)


def test_reader_hash_cannot_be_reversed_from_the_store_alone(handle: StoreHandle, tmp_path: Path) -> None:
    key = ReaderKey(key_file=tmp_path / "data" / KEY_FILE)
    written_alone(handle, [record(0)], reader_key=key)
    (stored,) = handle.get().questions(LogFilter())
    store = handle.get()
    assert isinstance(store, SqlStore)
    dumped = [str(row) for table in ("questions", "feedback", "reader_salts") for row in store.rows(table)]
    today = datetime.now(UTC).date()
    assert not any(key.day_salt(today) in row for row in dumped)  # the salt is not in the store
    assert stored.reader != reader_hash("00" * 32, "198.51.100.0")
    assert stored.reader == reader_hash(key.day_salt(today), "198.51.100.0")  # only with the key file
    key_file = tmp_path / "data" / KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    again = ReaderKey(key_file=key_file)  # another process, or after a restart: the same key
    assert again.day_salt(today) == key.day_salt(today)
    assert again.day_salt(today) != again.day_salt(date(2026, 1, 1))  # a salt per day


def test_reader_hash_key_from_a_setting_is_shared_by_replicas(tmp_path: Path) -> None:
    secret = "k" * 40
    first = ReaderKey.of(Settings(data_dir=tmp_path / "a", reader_hash_key=secret))
    second = ReaderKey.of(Settings(data_dir=tmp_path / "b", reader_hash_key=secret))
    assert first.day_salt(date(2026, 5, 2)) == second.day_salt(date(2026, 5, 2))
    assert not (tmp_path / "a" / KEY_FILE).exists()  # no file when the setting gives the key
    with pytest.raises(ValidationError):
        Settings(reader_hash_key="short")


def test_reader_hash_key_file_that_cannot_be_made_falls_back_to_memory_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "not-a-dir").write_text("x")
    key = ReaderKey(key_file=tmp_path / "not-a-dir" / KEY_FILE)
    with caplog.at_level(logging.WARNING, logger="bookwise"):
        salt = key.day_salt(date(2026, 5, 2))
    assert len(salt) == 64 and key.day_salt(date(2026, 5, 2)) == salt  # one key for the process
    assert [r.getMessage() for r in caplog.records] == ["reader_key_unavailable"]
