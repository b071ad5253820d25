"""``POST /api/chat``: one answer streamed as Server-Sent Events.

Everything that can refuse the request (validation, stream slots, retrieval) happens before the
stream opens, so a refusal is a plain JSON error with its status; after that, failures are the
stream's one ``error`` event.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from bookwise.api.deps import Client, RequestId, ServicesDep
from bookwise.api.logs import log_event
from bookwise.api.schemas import ChatBody, chat_request
from bookwise.generation.answer import Answerer, ChatRequest, Prepared

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
async def chat(body: ChatBody, shared: ServicesDep, request_id: RequestId, client: Client) -> AnswerStream:
    question = chat_request(body, shared.limits, request_id)
    shared.slots.acquire(client)
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            shared.slots.release(client)

    try:
        retriever = await shared.index.get()
        answerer = Answerer(shared.answering, retriever, shared.llm)
        prepared = await answerer.prepare(question)
    except BaseException:
        release()
        raise
    shared.feedback.remember(request_id)  # this answer, and only it, may now be rated
    return AnswerStream(
        _events(answerer, prepared, question),
        on_close=release,
        ping=shared.stream.ping_s,
        send_timeout=shared.stream.send_timeout_s,
        headers={"Cache-Control": "no-cache"},
    )


async def _events(
    answerer: Answerer, prepared: Prepared, question: ChatRequest
) -> AsyncIterator[ServerSentEvent]:
    try:
        async for event in answerer.stream(prepared):
            yield ServerSentEvent(data=json.dumps(event.data, ensure_ascii=False), event=event.name)
    finally:
        outcome = prepared.outcome
        log_event(
            "chat",
            request_id=question.request_id,
            mode=question.mode,
            scope=question.effective_scope,
            plan=prepared.plan,
            question_chars=len(question.question),
            selection_chars=len(question.selected_text),
            sources=len(prepared.sources),
            sufficient=prepared.sufficient,
            outcome=outcome.get("outcome"),
            answer_kind=outcome.get("answer_kind"),
            timings_ms=outcome.get("timings_ms"),
            usage=outcome.get("usage"),
            retrieval_ms=round(prepared.retrieval_ms, 1),
        )
