"""What the SQLite and PostgreSQL stores share: the schema's migrations, the SQL, and rows <-> records.

The SQL is written once with ``?`` parameters; an engine says how it spells a few column types
(``{id}``, ``{ts}``, ``{float}``), its parameter marker and its timestamps, and how it runs a
statement and a transaction.

Migrations are numbered; ``schema_version`` holds one row per migration applied. Migration 1 is the
``feedback`` table as Bookwise created it before the question log (``CREATE ... IF NOT EXISTS``), so
a ``feedback.sqlite3`` of an earlier version is migrated in place, its ratings kept.
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

from bookwise.errors import InsightsStoreError
from bookwise.insights.records import CitedSection, FeedbackRecord, LogFilter, QuestionRecord
from bookwise.insights.store import Store

Engine = Literal["sqlite", "postgres"]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    sqlite: tuple[str, ...] = ()  # run after ``statements`` on this engine only
    postgres: tuple[str, ...] = ()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "feedback (before the question log)",
        (
            """CREATE TABLE IF NOT EXISTS feedback (
                id {id},
                created_at {ts} NOT NULL,
                request_id TEXT NOT NULL,
                rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
                question TEXT NOT NULL,
                answer TEXT NOT NULL,
                sources TEXT NOT NULL,
                comment TEXT NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS feedback_request ON feedback (request_id)",
        ),
    ),
    Migration(
        2,
        "question log, reader salts, feedback reasons",
        (
            "ALTER TABLE feedback ADD COLUMN reason TEXT",
            "ALTER TABLE feedback ADD COLUMN page_url TEXT",
            "ALTER TABLE feedback ADD COLUMN extra TEXT NOT NULL DEFAULT '{{}}'",
            "CREATE INDEX feedback_created ON feedback (created_at)",
            """CREATE TABLE questions (
                id {id},
                created_at {ts} NOT NULL,
                request_id TEXT NOT NULL,
                question TEXT NOT NULL,
                mode TEXT NOT NULL,
                outcome TEXT NOT NULL,
                traffic TEXT NOT NULL,
                page_url TEXT,
                version TEXT,
                locale TEXT,
                evidence {float},
                cited TEXT NOT NULL,
                error_code TEXT,
                ms_to_sources {float},
                ms_to_first_token {float},
                ms_total {float},
                reader TEXT
            )""",
            "CREATE INDEX questions_created ON questions (created_at)",
            "CREATE INDEX questions_request ON questions (request_id)",
            "CREATE TABLE reader_salts (day TEXT PRIMARY KEY, salt TEXT NOT NULL)",
        ),
        # Earlier versions wrote whole seconds ("...:05Z"); one fixed width keeps text order = time order.
        sqlite=(
            "UPDATE feedback SET created_at = substr(created_at, 1, 19) || '.000000Z'"
            " WHERE length(created_at) = 20",
        ),
    ),
    # The salts now derive from a key outside the store (a store alone must not reverse a hash);
    # the table stays, empty, for earlier versions' readers of the schema.
    Migration(3, "reader salts leave the store", ("DELETE FROM reader_salts",)),
)
LATEST_VERSION = MIGRATIONS[-1].version

_QUESTION_COLUMNS = (
    "created_at, request_id, question, mode, outcome, traffic, page_url, version, locale, evidence,"
    " cited, error_code, ms_to_sources, ms_to_first_token, ms_total, reader"
)
_FEEDBACK_COLUMNS = (
    "created_at, request_id, rating, reason, comment, question, page_url, extra, answer, sources"
)


def _placeholders(columns: str) -> str:
    return ", ".join("?" for _ in columns.split(","))


class SqlStore(Store):
    """The ``Store`` in SQL; an engine subclass supplies the connection."""

    engine: Engine
    column_types: dict[str, str]

    # --- what an engine provides ---

    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (``?`` parameters); its rows, if any. Driver errors -> InsightsStoreError."""

    @abstractmethod
    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[None]:
        """All ``_run`` calls inside happen at once or not at all, one process at a time."""

    @abstractmethod
    def _db_time(self, when: datetime) -> object:
        """A UTC time as the engine stores it."""

    def _after_write(self) -> None:
        """Called in the transaction that added rows (SQLite keeps its size cap here)."""

    # --- migrations ---

    def migrate(self) -> int:
        """Bring the schema to ``LATEST_VERSION``; returns the version it was at."""
        with self._transaction():
            self._run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT)")
            found = self.schema_version()
            if found > LATEST_VERSION:
                raise InsightsStoreError(
                    f"the insights store is at schema version {found}, written by a newer Bookwise "
                    f"(this one knows up to {LATEST_VERSION})"
                )
            for migration in MIGRATIONS[found:]:
                for statement in (*migration.statements, *getattr(migration, self.engine)):
                    self._run(statement.format(**self.column_types))
                self._run(
                    "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
                    (migration.version, _utc(datetime.now(UTC)).isoformat()),
                )
        return found

    def schema_version(self) -> int:
        return int(self._run("SELECT coalesce(max(version), 0) FROM schema_version")[0][0])

    # --- writing ---

    def add_question(self, record: QuestionRecord) -> int:
        return self._insert("questions", _QUESTION_COLUMNS, [self._question_values(record)])[0]

    def add_questions(self, records: Sequence[QuestionRecord]) -> list[int]:
        """One transaction for many rows: one disk sync instead of one per answer."""
        return self._insert("questions", _QUESTION_COLUMNS, [self._question_values(r) for r in records])

    def _question_values(self, record: QuestionRecord) -> tuple[Any, ...]:
        cited = json.dumps([[c.url, c.heading_id, c.title] for c in record.cited], ensure_ascii=False)
        return _storable(
            (
                self._db_time(_utc(record.created_at)),
                record.request_id,
                record.question,
                record.mode,
                record.outcome,
                record.traffic,
                record.page_url,
                record.version,
                record.locale,
                record.evidence,
                cited,
                record.error_code,
                record.ms_to_sources,
                record.ms_to_first_token,
                record.ms_total,
                record.reader,
            )
        )

    def add_feedback(self, record: FeedbackRecord) -> int:
        values = _storable(
            (
                self._db_time(_utc(record.created_at)),
                record.request_id,
                record.rating,
                record.reason,
                record.comment,
                record.question,
                record.page_url,
                json.dumps(record.extra, ensure_ascii=False),
                record.answer,
                json.dumps(list(record.sources), ensure_ascii=False),
            )
        )
        return self._insert("feedback", _FEEDBACK_COLUMNS, [values])[0]

    def _insert(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> list[int]:
        sql = f"INSERT INTO {table} ({columns}) VALUES ({_placeholders(columns)}) RETURNING id"
        with self._transaction():
            stored = [int(self._run(sql, values)[0][0]) for values in rows]
            self._after_write()
        return stored

    def forget_before(self, when: datetime) -> int:
        cutoff = self._db_time(_utc(when))
        with self._transaction():
            gone = self._count("DELETE FROM questions WHERE created_at < ?", (cutoff,))
            gone += self._count("DELETE FROM feedback WHERE created_at < ?", (cutoff,))
        return gone

    # --- reading ---

    def questions(self, filter: LogFilter) -> list[QuestionRecord]:
        where, params = self._where(filter, version_column="version", locale_column="locale")
        rows = self._run(f"SELECT id, {_QUESTION_COLUMNS} FROM questions{where} ORDER BY id", params)
        return [self._question(row) for row in rows]

    def feedback(self, filter: LogFilter) -> list[FeedbackRecord]:
        # A rating has the version and locale of the answer it rates (when that answer was logged).
        where, params = self._where(filter, version_column=None, locale_column=None)
        rows = self._run(f"SELECT id, {_FEEDBACK_COLUMNS} FROM feedback{where} ORDER BY id", params)
        return [self._feedback(row) for row in rows]

    def _where(
        self, filter: LogFilter, *, version_column: str | None, locale_column: str | None
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if filter.since is not None:
            clauses.append("created_at >= ?")
            params.append(self._db_time(_utc(filter.since)))
        if filter.until is not None:
            clauses.append("created_at < ?")
            params.append(self._db_time(_utc(filter.until)))
        for column, wanted, name in (
            (version_column, filter.version, "version"),
            (locale_column, filter.locale, "locale"),
        ):
            if wanted is None:
                continue
            if column is not None:
                clauses.append(f"{column} = ?")
            else:
                clauses.append(f"request_id IN (SELECT request_id FROM questions WHERE {name} = ?)")
            params.append(wanted)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _question(self, row: Sequence[Any]) -> QuestionRecord:
        (id_, created, request_id, question, mode, outcome, traffic, page_url, version, locale,
         evidence, cited, error_code, ms_sources, ms_first, ms_total, reader) = row  # fmt: skip
        return QuestionRecord(
            created_at=_from_db_time(created),
            request_id=request_id,
            question=question,
            mode=mode,
            outcome=outcome,
            traffic=traffic,
            page_url=page_url,
            version=version,
            locale=locale,
            evidence=_float(evidence),
            cited=tuple(CitedSection(url, heading, title) for url, heading, title in json.loads(cited)),
            error_code=error_code,
            ms_to_sources=_float(ms_sources),
            ms_to_first_token=_float(ms_first),
            ms_total=_float(ms_total),
            reader=reader,
            id=int(id_),
        )

    def _feedback(self, row: Sequence[Any]) -> FeedbackRecord:
        id_, created, request_id, rating, reason, comment, question, page_url, extra, answer, sources = row
        return FeedbackRecord(
            created_at=_from_db_time(created),
            request_id=request_id,
            rating=rating,
            reason=reason,
            comment=comment,
            question=question,
            page_url=page_url,
            extra=cast(dict[str, object], json.loads(extra)),
            answer=answer,
            sources=tuple(json.loads(sources)),
            id=int(id_),
        )

    def rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every column of every row of ``table`` (for operators and tests: what is really stored)."""
        if table not in ("questions", "feedback", "reader_salts", "schema_version"):
            raise ValueError(f"no table {table!r} in the insights store")
        names = self._columns(table)
        for row in self._run(f"SELECT * FROM {table}"):
            yield dict(zip(names, row, strict=True))

    @abstractmethod
    def _columns(self, table: str) -> list[str]:
        """The names of ``table``'s columns, in ``SELECT *`` order."""


# SQLite keeps times as text of one fixed width, so that text order is time order.
SQLITE_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


# What a text column cannot hold: NUL (PostgreSQL refuses it) and lone surrogates (not UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` with what neither engine can store replaced by U+FFFD, so one reader's odd
    character cannot make a write fail (and, in a batch, cost other readers their rows)."""
    return _UNSTORABLE.sub("\ufffd", text)


def _storable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(storable_text(v) if isinstance(v, str) else v for v in values)


def _utc(when: datetime) -> datetime:
    """A naive time is taken as UTC (the records' convention)."""
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _from_db_time(value: object) -> datetime:
    if isinstance(value, datetime):
        return _utc(value)
    return datetime.strptime(str(value), SQLITE_TIME).replace(tzinfo=UTC)


def _float(value: object) -> float | None:
    return None if value is None else float(cast(float, value))
