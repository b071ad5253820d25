"""Readers' ratings, kept in the insights store (SQLite in the data dir, or PostgreSQL by URL).

Bounded three ways, because anyone who can reach the API can post: a rating is accepted only for an
answer this process gave, once (its request id is remembered in a bounded in-memory set); the comment
has a length limit; and a SQLite store's used space is capped, the oldest rows deleted first.

Why a remembered set rather than signed request ids: request ids are what the widget already sends
(made by the server for every answer, never the client's ``X-Request-ID``), "once per answer" comes
for free, and there is no secret to create and keep in the data dir. The cost: a rating
for an answer given before a restart, or by another replica, is refused.

A store that cannot be opened or written (a corrupt file, a read-only or full disk, a PostgreSQL
down) turns feedback off with ``feedback_unavailable`` (503), logged once; answers and search go on.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Literal

from bookwise.api.logs import log_event
from bookwise.errors import FeedbackUnavailableError, InsightsStoreError, UnknownAnswerError
from bookwise.insights.log import StoreHandle
from bookwise.insights.records import FeedbackRecord
from bookwise.lru import Lru


class Feedback:
    """What the feedback endpoint needs: the answers that may be rated, and the store."""

    def __init__(self, store: StoreHandle, *, remembered: int) -> None:
        self.store = store
        self._answers: Lru[str, bool] = Lru(remembered)
        self._failing = False

    def open(self) -> None:
        """Open the store at start (blocking), so a broken one is reported before any reader posts."""
        try:
            self.store.get()
        except InsightsStoreError as error:
            self._report("feedback_unavailable", error)

    def remember(self, request_id: str) -> None:
        self._answers.put(request_id, True)

    def add(
        self,
        *,
        request_id: str,
        rating: Literal["up", "down"],
        reason: str | None = None,
        question: str = "",
        answer: str = "",
        sources: list[dict[str, Any]] | None = None,
        comment: str = "",
    ) -> int:
        """Store one rating for a remembered answer (blocking: run it in a worker thread)."""
        try:
            store = self.store.get()
        except InsightsStoreError as error:
            self._report("feedback_unavailable", error)
            raise FeedbackUnavailableError("feedback cannot be stored on this server right now") from error
        if self._answers.pop(request_id) is None:  # taken now: a concurrent twin is refused
            raise UnknownAnswerError(
                "no recent answer of this server has this request_id, or it was already rated"
            )
        record = FeedbackRecord(
            created_at=datetime.now(UTC),
            request_id=request_id,
            rating=rating,
            reason=reason,
            comment=comment,
            question=question,
            answer=answer,
            sources=tuple(sources or ()),
        )
        try:
            stored = store.add_feedback(record)
        except InsightsStoreError as error:
            self.remember(request_id)  # not stored: the reader may try again
            self._report("feedback_write_failed", error)
            raise FeedbackUnavailableError("feedback cannot be stored on this server right now") from error
        self._failing = False
        return stored

    def _report(self, event: str, error: InsightsStoreError) -> None:
        if not self._failing:  # once per failure spell, not once per post
            self._failing = True
            log_event(event, logging.WARNING, error=error.message)
