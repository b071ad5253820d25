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
from bookwise.generation.answer import Answerer, ChatRequest, Event, Prepared

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
        answer_events(
            shared.metrics.watch(answerer.stream(prepared), started=prepared.started), prepared, question
        ),
        on_close=release,
        ping=shared.stream.ping_s,
        send_timeout=shared.stream.send_timeout_s,
        headers={"Cache-Control": "no-cache"},
    )


async def answer_events(
    stream: AsyncIterator[Event], prepared: Prepared, question: ChatRequest
) -> AsyncIterator[ServerSentEvent]:
    ended: Event | None = None  # the done or error event, once the server has sent it
    try:
        async for event in stream:
            yield ServerSentEvent(data=json.dumps(event.data, ensure_ascii=False), event=event.name)
            if event.name in ("done", "error"):
                ended = event  # resumed after the send: the reader was sent it
    finally:
        log_event("chat", **_chat_log(prepared, question, ended))


def _chat_log(prepared: Prepared, question: ChatRequest, ended: Event | None) -> dict[str, Any]:
    """The log line of one answer: what its reader was sent (a stream cut before its end says so)."""
    done = ended.data if ended is not None and ended.name == "done" else {}
    if ended is None:
        outcome = "client_disconnected"
    else:
        outcome = "done" if ended.name == "done" else str(ended.data.get("code"))
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
        "outcome": outcome,
        "answer_kind": done.get("answer_kind"),
        "timings_ms": done.get("timings_ms"),
        "usage": done.get("usage"),
        "retrieval_ms": round(prepared.retrieval_ms, 1),
    }
