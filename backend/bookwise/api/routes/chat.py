"""``POST /api/chat``: one answer streamed as Server-Sent Events.

Everything that can refuse the request (validation, stream slots, retrieval) happens before the
stream opens, so a refusal is a plain JSON error with its status; after that, failures are the
stream's one ``error`` event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from bookwise.api.deps import Client, Reader, RequestId, ServicesDep
from bookwise.api.logs import log_event
from bookwise.api.schemas import ChatBody, chat_request
from bookwise.generation.answer import Answerer, checked
from bookwise.generation.events import AnswerEvent, AnswerSummary, AnswerTrace, Source, Sources
from bookwise.generation.models import ChatRequest, Prepared
from bookwise.insights.log import QuestionLog
from bookwise.insights.records import CitedSection, QuestionRecord

router = APIRouter()


class AnswerStream(EventSourceResponse):
    """An SSE response that frees its stream slot however it ends (even if never started)."""

    def __init__(self, *args: Any, on_close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


@router.post("/api/chat", response_model=None)
async def chat(
    body: ChatBody, shared: ServicesDep, request_id: RequestId, client: Client, reader: Reader
) -> AnswerStream:
    asked_at = datetime.now(UTC)
    request = chat_request(body, request_id)
    question = checked(request, shared.limits)
    shared.slots.acquire(client, reader)
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            shared.slots.release(client, reader)

    try:
        retriever = await shared.index.get()
        answerer = Answerer(shared.answering, retriever, shared.llm)
        prepared = await answerer.prepare(question)
    except BaseException:
        release()
        raise
    shared.feedback.remember(request_id)  # this answer, and only it, may now be rated
    return AnswerStream(
        answer_events(
            shared.metrics.watch(answerer.stream(prepared), started=prepared.started),
            prepared,
            question,
            Logged(shared.question_log, asked_at, client),
        ),
        on_close=release,
        ping=shared.stream.ping_s,
        send_timeout=shared.stream.send_timeout_s,
        headers={"Cache-Control": "no-cache"},
    )


class Logged:
    """Where an answer's question-log record goes, with what the route knew of its request."""

    def __init__(self, log: QuestionLog, asked_at: datetime, client: str) -> None:
        self.log = log
        self.asked_at = asked_at
        self.client = client  # hashed with the day's salt by the log's writer, never stored
        self.ms_to_sources: float | None = None


async def answer_events(
    stream: AsyncIterator[AnswerEvent],
    prepared: Prepared,
    question: ChatRequest,
    logged: Logged | None = None,
) -> AsyncIterator[ServerSentEvent]:
    sent = AnswerTrace()  # what the reader was sent: each event is added once its send returned
    try:
        async for event in stream:
            name, data = event.sse()
            yield ServerSentEvent(data=data, event=name)
            sent.add(event)
            if isinstance(event, Sources) and logged is not None:
                logged.ms_to_sources = _ms_since(prepared.started)
    finally:
        answer = sent.summary
        log_event("chat", **_chat_log(prepared, question, answer))
        if logged is not None and logged.log.enabled:
            _submit(prepared, question, answer, logged)


def _submit(prepared: Prepared, question: ChatRequest, answer: AnswerSummary, logged: Logged) -> None:
    """Only queued here: a slow or broken store never holds the stream open (see ``insights.log``)."""
    try:
        logged.log.submit(_question_record(prepared, question, answer, logged), logged.client)
    except Exception as error:  # a bug in the log must not fail an answer already sent
        log_event("question_log_failed", logging.ERROR, error=f"{type(error).__name__}: {error}")


def _chat_log(prepared: Prepared, question: ChatRequest, answer: AnswerSummary) -> dict[str, Any]:
    """The log line of one answer: what its reader was sent (a stream cut before its end says so)."""
    done = answer.done
    return {
        "request_id": question.request_id,
        "mode": question.mode,
        "action": question.action,
        "scope": "page" if prepared.page_use is not None else question.effective_scope,
        "plan": prepared.plan,
        "question_chars": len(question.question),
        "selection_chars": len(question.selected_text),
        "sources": len(prepared.sources),
        "sufficient": prepared.sufficient,
        "outcome": answer.ending,
        "answer_kind": answer.kind,
        "timings_ms": done.timings_ms.model_dump() if done is not None else None,
        "usage": done.usage.model_dump() if done is not None and done.usage is not None else None,
        "retrieval_ms": round(prepared.retrieval_ms, 1),
    }


def _question_record(
    prepared: Prepared, question: ChatRequest, answer: AnswerSummary, logged: Logged
) -> QuestionRecord:
    """The question log's row of one answer, from the events its reader was sent (as ``_chat_log``)."""
    timings = answer.timings
    page = question.page
    return QuestionRecord(
        created_at=logged.asked_at,
        request_id=question.request_id,
        question=question.question,
        mode=question.mode if question.action == "ask" else question.action,  # a study action by name
        outcome=answer.outcome,
        page_url=_without_query(page.url) if page else None,
        version=page.version if page else None,
        locale=page.locale if page else None,
        evidence=prepared.evidence,
        cited=tuple(_cited(source) for source in answer.cited),
        error_code=answer.error.code if answer.error is not None else None,
        ms_to_sources=logged.ms_to_sources,
        ms_to_first_token=timings.first_token if timings is not None else None,
        ms_total=(timings.total if timings is not None else None) or _ms_since(prepared.started),
    )


def _cited(source: Source) -> CitedSection:
    return CitedSection(
        url=source.page_url or source.url,
        heading_id=source.anchor or None,
        title=source.heading_text or source.title,
    )


def _without_query(url: str) -> str:
    """A page URL without its query string (which may carry a reader's tokens or tracking ids)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment))


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
