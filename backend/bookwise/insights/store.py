"""The store the question log is written to and the report reads from: one interface, two engines.

SQLite (one file in the data dir, zero setup) is the default; PostgreSQL, given by URL, lets several
API processes and replicas write one log. Both speak the same SQL, written once in
``bookwise.insights.sql``; ``bookwise.insights.factory.open_insights_store`` picks the engine.

Every method blocks (the API calls them in a worker thread) and raises ``InsightsStoreError`` when
the database cannot be reached, migrated, read or written: callers never see a driver's exception.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from bookwise.insights.records import FeedbackRecord, LogFilter, QuestionRecord


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
