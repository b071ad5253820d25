"""The store the question log is written to and the report reads from: one interface, two engines.

SQLite (one file in the data dir, zero setup) is the default; PostgreSQL, given by URL, lets several
API processes and replicas write one log. Both speak the same SQL, written once in
``bookwise.insights.sql``; ``open_store`` picks the engine from its argument.

Every method blocks (the API calls them in a worker thread) and raises ``InsightsStoreError`` when
the database cannot be reached, migrated, read or written: callers never see a driver's exception.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from bookwise.insights.records import FeedbackRecord, LogFilter, QuestionRecord

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_CONNECT_TIMEOUT_S = 5.0


class Store(ABC):
    """The question log and readers' feedback, durable, newest rows last."""

    @abstractmethod
    def questions(self, filter: LogFilter) -> list[QuestionRecord]:
        """The logged questions in the filter's range, oldest first."""

    @abstractmethod
    def feedback(self, filter: LogFilter) -> list[FeedbackRecord]:
        """The ratings in the filter's range, oldest first (version/locale: those of the rated answer)."""

    @abstractmethod
    def add_question(self, record: QuestionRecord) -> int:
        """Store one logged answer; returns its id."""

    def add_questions(self, records: Sequence[QuestionRecord]) -> list[int]:
        """Store several logged answers (an engine may write them at once); their ids."""
        return [self.add_question(record) for record in records]

    @abstractmethod
    def add_feedback(self, record: FeedbackRecord) -> int:
        """Store one rating; returns its id."""

    @abstractmethod
    def forget_before(self, when: datetime) -> int:
        """Delete the questions and ratings created before ``when``; returns how many rows went."""

    @abstractmethod
    def schema_version(self) -> int:
        """The version of the schema the store is migrated to."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; further calls fail."""


def is_postgres_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_store(
    target: str | Path,
    *,
    max_bytes: int | None = None,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> Store:
    """Open (creating and migrating if needed) the store at ``target``.

    ``target`` is a ``postgresql://`` URL, or the path of a SQLite file (created with its folder).
    ``max_bytes`` caps a SQLite file's used space (the oldest rows are deleted first); PostgreSQL's
    space is its operator's to manage, with the retention setting.
    """
    if is_postgres_url(target):
        from bookwise.insights.postgres import PostgresStore  # psycopg is loaded only when used

        return PostgresStore(str(target), connect_timeout_s=connect_timeout_s)
    from bookwise.insights.sqlite import SqliteStore

    return SqliteStore(Path(target), max_bytes=max_bytes, busy_timeout_s=connect_timeout_s)
