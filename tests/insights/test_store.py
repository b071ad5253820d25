"""The store on both engines: what is written reads back, filters, retention, salts, migrations."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from bookwise.errors import InsightsStoreError
from bookwise.insights.factory import open_insights_store
from bookwise.insights.records import CitedSection, FeedbackRecord, LogFilter, QuestionRecord
from bookwise.insights.sql import LATEST_VERSION, MIGRATIONS, SqlStore
from bookwise.insights.sqlite import SqliteStore
from pgserver import PostgresServer
from servers import closed_port_url


@pytest.fixture
def target(insights_target: str | Path) -> str | Path:
    """A SQLite file or a new database on the session's PostgreSQL (tests/conftest.py)."""
    return insights_target


@pytest.fixture
def store(insights_store: SqlStore) -> SqlStore:
    return insights_store


NOW = datetime.now(UTC).replace(microsecond=123456)


def question(text: str = "How do quokkas sleep?", *, at: datetime = NOW, **fields: object) -> QuestionRecord:
    values: dict[str, object] = {"request_id": f"r-{text[:8]}", "mode": "normal", "outcome": "answered"}
    return QuestionRecord(created_at=at, question=text, **(values | fields))  # type: ignore[arg-type]


def rating(request_id: str, *, at: datetime = NOW, **fields: object) -> FeedbackRecord:
    return FeedbackRecord(created_at=at, request_id=request_id, rating="down", **fields)  # type: ignore[arg-type]


def test_a_question_reads_back_as_it_was_written(store: SqlStore) -> None:
    written = question(
        "Wo schlafen Quokkas? 🦘",
        page_url="/docs/care/housing",
        version="2.0",
        locale="de",
        evidence=0.4375,
        cited=(
            CitedSection("/docs/care/housing", "burrows", "Burrows"),
            CitedSection("/docs/intro", None, ""),
        ),
        ms_to_sources=12.5,
        ms_to_first_token=40.0,
        ms_total=99.9,
        reader="0123456789abcdef",
        traffic="agent",
        outcome="not_covered",
        error_code=None,
    )
    new_id = store.add_question(written)
    [read] = store.questions(LogFilter())
    assert read == QuestionRecord(**{**written.__dict__, "id": new_id})
    assert read.created_at == NOW and read.created_at.tzinfo is not None


def test_a_rating_reads_back_with_its_reason_answer_and_sources(store: SqlStore) -> None:
    written = rating("r-1", reason="unclear", comment="too vague", question="q", answer="a", page_url="/p")
    written = FeedbackRecord(
        **{**written.__dict__, "sources": ({"n": 1, "url": "/p#x"},), "extra": {"k": [1]}}
    )
    new_id = store.add_feedback(written)
    assert store.feedback(LogFilter()) == [FeedbackRecord(**{**written.__dict__, "id": new_id})]


def test_the_filter_selects_by_range_version_and_locale(store: SqlStore) -> None:
    day = timedelta(days=1)
    store.add_question(question("old one", at=NOW - 3 * day, version="1.0", locale="en"))
    store.add_question(question("in range", at=NOW - day, version="2.0", locale="fr"))
    store.add_question(question("today", at=NOW, version="2.0", locale="en"))
    store.add_feedback(rating("r-in range", at=NOW - day))
    store.add_feedback(rating("r-old one", at=NOW - 3 * day))

    def asked(**wanted: object) -> list[str]:
        return [q.question for q in store.questions(LogFilter(**wanted))]  # type: ignore[arg-type]

    assert asked() == ["old one", "in range", "today"]  # oldest first
    assert asked(since=NOW - 2 * day, until=NOW) == ["in range"]  # since inclusive, until exclusive
    assert asked(since=NOW - day) == ["in range", "today"]
    assert asked(version="2.0", locale="en") == ["today"]
    # A rating has the version and locale of the answer it rates.
    assert [f.request_id for f in store.feedback(LogFilter(locale="fr"))] == ["r-in range"]
    assert [f.request_id for f in store.feedback(LogFilter(until=NOW - 2 * day))] == ["r-old one"]


def test_forget_before_deletes_older_questions_and_ratings_only(store: SqlStore) -> None:
    old, recent = NOW - timedelta(days=40), NOW - timedelta(days=1)
    store.add_question(question("old", at=old))
    store.add_question(question("recent", at=recent))
    store.add_feedback(rating("r-old", at=old))
    store.add_feedback(rating("r-recent", at=recent))
    assert store.forget_before(NOW - timedelta(days=30)) == 2
    assert [q.question for q in store.questions(LogFilter())] == ["recent"]
    assert [f.request_id for f in store.feedback(LogFilter())] == ["r-recent"]
    assert store.forget_before(NOW - timedelta(days=30)) == 0


def test_reader_hash_salt_is_not_in_the_store_an_earlier_versions_salts_are_deleted(
    target: str | Path,
) -> None:
    store = open_insights_store(target)
    try:
        assert isinstance(store, SqlStore)
        assert not hasattr(store, "reader_salt")  # the store cannot make or hand out a salt
        # A store of the version before: a day's salt in the table, the schema one step back.
        store._run("INSERT INTO reader_salts (day, salt) VALUES (?, ?)", ("2026-05-02", "ab" * 32))
        store._run("DELETE FROM schema_version WHERE version = ?", (LATEST_VERSION,))
    finally:
        store.close()
    reopened = open_insights_store(target)
    try:
        assert isinstance(reopened, SqlStore) and reopened.schema_version() == LATEST_VERSION
        assert list(reopened.rows("reader_salts")) == []
    finally:
        reopened.close()


def test_an_empty_store_is_migrated_to_the_latest_schema(store: SqlStore) -> None:
    assert store.schema_version() == LATEST_VERSION
    assert [row["version"] for row in store.rows("schema_version")] == [m.version for m in MIGRATIONS]
    for table in ("questions", "feedback", "reader_salts"):
        assert list(store.rows(table)) == []


LEGACY_FEEDBACK = """
CREATE TABLE feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    request_id TEXT NOT NULL,
    rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    sources TEXT NOT NULL,
    comment TEXT NOT NULL
);
CREATE INDEX feedback_request ON feedback (request_id);
INSERT INTO feedback (created_at, request_id, rating, question, answer, sources, comment) VALUES
    ('2026-01-05T10:00:07Z', 'old-1', 'up', 'q1', 'a1', '[{"n": 1}]', ''),
    ('2026-03-01T08:30:00Z', 'old-2', 'down', 'q2', 'a2', '[]', 'wrong');
"""


def test_a_feedback_db_of_the_previous_version_is_migrated_in_place_its_ratings_kept(tmp_path: Path) -> None:
    path = tmp_path / "feedback.sqlite3"
    with sqlite3.connect(path) as db:  # exactly what Bookwise wrote before the question log
        db.executescript(LEGACY_FEEDBACK)
    db.close()
    store = SqliteStore(path)
    try:
        assert store.schema_version() == LATEST_VERSION
        old = store.feedback(LogFilter())
        assert [(f.request_id, f.rating, f.comment, f.reason, f.sources) for f in old] == [
            ("old-1", "up", "", None, ({"n": 1},)),
            ("old-2", "down", "wrong", None, ()),
        ]
        assert old[0].created_at == datetime(2026, 1, 5, 10, 0, 7, tzinfo=UTC)
        # Legacy whole-second times order with new ones: nothing before March's but January's.
        assert [
            f.request_id for f in store.feedback(LogFilter(until=datetime(2026, 3, 1, 8, 30, tzinfo=UTC)))
        ] == ["old-1"]
        store.add_feedback(rating("new", reason="incorrect"))
        assert [f.request_id for f in store.feedback(LogFilter())] == ["old-1", "old-2", "new"]
    finally:
        store.close()


def test_a_postgres_store_at_the_first_version_is_migrated_forward(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    with psycopg.connect(url, autocommit=True) as conn:  # the schema as migration 1 left it
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT)")
        for statement in MIGRATIONS[0].statements:
            conn.execute(
                statement.format(**{"id": "BIGSERIAL PRIMARY KEY", "ts": "TIMESTAMPTZ", "float": "REAL"})
            )
        conn.execute("INSERT INTO schema_version VALUES (1, 'then')")
        conn.execute(
            "INSERT INTO feedback (created_at, request_id, rating, question, answer, sources, comment)"
            " VALUES (now(), 'kept', 'up', 'q', 'a', '[]', '')"
        )
    store = open_insights_store(url)
    try:
        assert store.schema_version() == LATEST_VERSION
        assert [(f.request_id, f.reason) for f in store.feedback(LogFilter())] == [("kept", None)]
    finally:
        store.close()


def test_a_store_from_a_newer_version_is_refused_not_downgraded(target: str | Path) -> None:
    store = open_insights_store(target)
    assert isinstance(store, SqlStore)
    with store._transaction():
        store._run(
            "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (LATEST_VERSION + 1, "later")
        )
    store.close()
    with pytest.raises(InsightsStoreError, match="newer Bookwise"):
        open_insights_store(target)


def test_processes_starting_together_migrate_once(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    opened: list[SqlStore] = []
    failures: list[BaseException] = []

    def start() -> None:
        try:
            store = open_insights_store(url)
            assert isinstance(store, SqlStore)
            opened.append(store)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    try:
        assert [row["version"] for row in opened[0].rows("schema_version")] == [m.version for m in MIGRATIONS]
    finally:
        for store in opened:
            store.close()


def test_an_unreachable_postgres_is_a_store_error_that_never_shows_the_password() -> None:
    port = closed_port_url().rsplit(":", 1)[1]
    with pytest.raises(InsightsStoreError) as raised:
        open_insights_store(f"postgresql://bookwise:s3cret-pw@127.0.0.1:{port}/bookwise", connect_timeout_s=1)
    assert "s3cret-pw" not in raised.value.message and raised.value.code == "insights_store_unavailable"
    assert f"127.0.0.1:{port}" in raised.value.message


def test_a_corrupt_sqlite_file_is_a_store_error(tmp_path: Path) -> None:
    corrupt = tmp_path / "feedback.sqlite3"
    corrupt.write_bytes(b"this is not a database\x00" * 500)
    with pytest.raises(InsightsStoreError, match="feedback.sqlite3"):
        open_insights_store(corrupt)


def test_a_sqlite_store_over_its_cap_deletes_its_oldest_questions_too(tmp_path: Path) -> None:
    cap = 256 * 1024
    store = SqliteStore(tmp_path / "insights.sqlite3", max_bytes=cap)
    try:
        for n in range(200):
            store.add_question(question(f"{n:03d} " + "x" * 5000, request_id=f"r{n}"))
            assert store.used_bytes() <= cap
        kept = [q.request_id for q in store.questions(LogFilter())]
    finally:
        store.close()
    assert kept[-1] == "r199" and "r0" not in kept and 10 < len(kept) < 200


def test_a_postgres_connection_cut_fails_one_call_and_the_next_reconnects(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    store = open_insights_store(url)
    try:
        store.add_question(question("before"))
        with psycopg.connect(url, autocommit=True) as admin:  # as a server restart or a proxy would
            admin.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"  # waits for it to end
                " WHERE application_name = 'bookwise' AND pid <> pg_backend_pid()"
            )
        with pytest.raises(InsightsStoreError):
            store.add_question(question("lost"))
        store.add_question(question("after"))
        assert [q.question for q in store.questions(LogFilter())] == ["before", "after"]
    finally:
        store.close()


def test_many_questions_are_written_at_once_in_order(store: SqlStore) -> None:
    ids = store.add_questions([question(f"q{n}", request_id=f"r{n}") for n in range(5)])
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [(q.id, q.request_id) for q in store.questions(LogFilter())] == list(
        zip(ids, [f"r{n}" for n in range(5)], strict=True)
    )


@pytest.mark.parametrize(
    "url", ["postgresql://bookwise:s3cret-pw@[::1", "postgresql://bookwise:s3cret-pw@h/db?bogus=1"]
)
def test_a_malformed_postgres_url_is_a_store_error_that_never_shows_the_password(url: str) -> None:
    with pytest.raises(InsightsStoreError) as raised:
        open_insights_store(url)
    assert "s3cret-pw" not in raised.value.message and "not a valid PostgreSQL URL" in raised.value.message
