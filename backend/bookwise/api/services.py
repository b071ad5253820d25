"""What the routes share, built once per app: the index (opened lazily), the model, stream slots,
feedback and the question log (one store), and the settings each route uses (never the whole Settings object).

One Retriever (and so one embedded index reader and one loaded model) is shared by every request:
it is opened and warmed up at start, or, when the index is missing or the store down, retried on
later requests while ``/api/ready`` reports why.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from bookwise.api.feedback import Feedback
from bookwise.api.limits import StreamSlots
from bookwise.api.logs import log_event
from bookwise.api.metrics.hooks import Metrics
from bookwise.errors import BookwiseError
from bookwise.generation.coverage import book_phrases
from bookwise.insights.factory import open_insights_store
from bookwise.insights.log import QuestionLog, ReaderKey, StoreHandle
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.suggestions import SuggestionStore
from bookwise.settings import AnswererSettings, IndexUploadSettings, InsightsSettings, Settings
from bookwise.validation import RequestLimits

if TYPE_CHECKING:
    from bookwise.generation.llm import LLMClient  # its SDK loads only when a model is configured

REOPEN_EVERY_S = 5.0  # how often a missing index is looked for again
PREFILL_STOP_S = 30.0  # the longest shutdown waits for the passage prefill's current batch


@dataclass
class IndexHandle:
    """The shared Retriever, opened on first use and looked for again while it cannot be."""

    opener: Callable[[], Retriever]
    retriever: Retriever | None = None
    owns_retriever: bool = False
    prefill_passages: bool = False  # extractive answers rank the book's passages: embed them once
    open_error: BookwiseError | None = None
    opened_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    prefill: threading.Thread | None = None

    async def get(self) -> Retriever:
        if self.retriever is not None:
            return self.retriever
        return await anyio.to_thread.run_sync(self._open)

    def _open(self) -> Retriever:
        with self.lock:
            if self.retriever is not None:
                return self.retriever
            if self.open_error is not None and time.monotonic() - self.opened_at < REOPEN_EVERY_S:
                raise self.open_error
            self.opened_at = time.monotonic()
            try:
                retriever = self.opener()
                retriever.search("warm up")  # loads the model and the index pages before a reader waits
                if self.prefill_passages:
                    # Without a model every answer checks what the book names: its phrases are read
                    # once per generation (about 2 s of CPU on docusaurus-docs), not by the first readers.
                    book_phrases(retriever)
            except BookwiseError as error:
                self.open_error = error
                raise
            self.retriever, self.open_error, self.owns_retriever = retriever, None, True
            # Every worker process follows a re-ingest on its own, busy or idle.
            threading.Thread(target=retriever.watch_index, args=(self.closing,), daemon=True).start()
            if self.prefill_passages:
                self.prefill = threading.Thread(target=self._prefill, args=(retriever,), daemon=True)
                self.prefill.start()
            return retriever

    def _prefill(self, retriever: Retriever) -> None:
        started = time.monotonic()
        try:
            count = retriever.prefill_passages(stop=self.closing)
        except Exception as error:  # the index went away or the app is stopping: embedded on demand
            if not self.closing.is_set():
                log_event("passages_prefill_failed", logging.WARNING, error=type(error).__name__)
            return
        log_event("passages_prefilled", passages=count, seconds=round(time.monotonic() - started, 1))

    async def close(self) -> None:
        self.closing.set()
        if self.prefill is not None:  # let its current batch end before the model goes away
            await anyio.to_thread.run_sync(self.prefill.join, PREFILL_STOP_S)
        if self.owns_retriever and self.retriever is not None:
            self.retriever.close()


@dataclass(frozen=True)
class StreamOptions:
    ping_s: int
    send_timeout_s: float


@dataclass(frozen=True)
class FeedbackLimits:
    comment_chars: int
    question_chars: int


@dataclass
class Services:
    index: IndexHandle
    llm: LLMClient | None
    slots: StreamSlots
    feedback: Feedback
    limits: RequestLimits
    answering: AnswererSettings
    upload: IndexUploadSettings  # where an uploaded index generation goes, and what it must match
    stream: StreamOptions
    feedback_limits: FeedbackLimits
    retrieval_timeout_s: float
    instant_search_per_minute: int
    instant_search_dense_words: int
    widget_path: Path
    metrics: Metrics
    insights: StoreHandle  # feedback and the question log
    question_log: QuestionLog
    admin_token: str | None  # unset: /api/insights does not exist
    suggestions: SuggestionStore


def insights_store(settings: InsightsSettings) -> StoreHandle:
    """The store of feedback and the question log: PostgreSQL by URL, else the SQLite file."""
    target, max_bytes = settings.resolved_insights_db, settings.feedback_max_bytes
    return StoreHandle(lambda: open_insights_store(target, max_bytes=max_bytes))


def build_services(
    settings: Settings, *, retriever: Retriever | None, llm: LLMClient | None, widget: Path, metrics: Metrics
) -> Services:
    insights = insights_store(settings)
    token = settings.admin_token
    return Services(
        index=IndexHandle(
            opener=lambda: Retriever.open(settings), retriever=retriever, prefill_passages=llm is None
        ),
        llm=llm,
        slots=metrics.stream_slots(
            settings.max_streams_per_client, settings.max_streams, settings.max_streams_per_address
        ),
        feedback=Feedback(insights, remembered=settings.feedback_remembered_answers),
        limits=RequestLimits.from_settings(settings),
        answering=settings,
        upload=settings,
        stream=StreamOptions(settings.sse_ping_s, settings.sse_send_timeout_s),
        feedback_limits=FeedbackLimits(settings.feedback_max_comment_chars, settings.max_question_chars),
        retrieval_timeout_s=settings.retrieval_timeout_s,
        instant_search_per_minute=settings.instant_search_per_minute,
        instant_search_dense_words=settings.instant_search_dense_words,
        widget_path=settings.widget_path or widget,
        metrics=metrics,
        insights=insights,
        question_log=QuestionLog(
            insights,
            enabled=settings.question_log,
            retention_days=settings.question_log_retention_days,
            reader_key=ReaderKey.of(settings),
        ),
        admin_token=token.get_secret_value() if token is not None else None,
        suggestions=SuggestionStore(settings.data_dir),
    )
