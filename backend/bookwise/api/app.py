"""The FastAPI app: answers streamed as Server-Sent Events, search, feedback, health and the widget.

One Retriever (and so one embedded index reader and one loaded model) is shared by every request:
it is opened and warmed up at start, or, when the index is missing or the store down, retried on
later requests while ``/api/ready`` reports why.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from bookwise.api.feedback import Feedback
from bookwise.api.guard import Guard, JsonCORSMiddleware, error_response
from bookwise.api.limits import RateLimiter, StreamSlots, parse_networks
from bookwise.api.logs import log_event, mark_logged
from bookwise.api.schemas import ChatBody, FeedbackBody, SearchBody, chat_request, check_question
from bookwise.api.site import site_endpoint
from bookwise.errors import BookwiseError, InvalidRequestError, NotFoundError, RequestRejected
from bookwise.generation.answer import Answerer
from bookwise.generation.llm import LLMClient
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings

PLACEHOLDER_WIDGET = Path(__file__).with_name("static") / "widget.js"
REOPEN_EVERY_S = 5.0  # how often a missing index is looked for again
PREFILL_STOP_S = 30.0  # the longest shutdown waits for the passage prefill's current batch


@dataclass
class _State:
    settings: Settings
    retriever: Retriever | None
    llm: LLMClient | None
    owns_retriever: bool
    slots: StreamSlots
    feedback: Feedback
    open_error: BookwiseError | None = None
    opened_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    prefill: threading.Thread | None = None

    def _open(self) -> Retriever:
        with self.lock:
            if self.retriever is not None:
                return self.retriever
            if self.open_error is not None and time.monotonic() - self.opened_at < REOPEN_EVERY_S:
                raise self.open_error
            self.opened_at = time.monotonic()
            try:
                retriever = Retriever.open(self.settings)
                retriever.search("warm up")  # loads the model and the index pages before a reader waits
            except BookwiseError as error:
                self.open_error = error
                raise
            self.retriever, self.open_error, self.owns_retriever = retriever, None, True
            # Every worker process follows a re-ingest on its own, busy or idle.
            threading.Thread(target=retriever.watch_index, args=(self.closing,), daemon=True).start()
            if self.llm is None:  # extractive answers rank the book's passages: embed them once, now
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

    async def get_retriever(self) -> Retriever:
        if self.retriever is not None:
            return self.retriever
        return await anyio.to_thread.run_sync(self._open)


class _AnswerStream(EventSourceResponse):
    """An SSE response that frees its stream slot however it ends (even if never started)."""

    def __init__(self, *args: Any, on_close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def create_app(
    settings: Settings, *, retriever: Retriever | None = None, llm: LLMClient | None = None
) -> FastAPI:
    """``retriever``/``llm`` are injected by tests and ``bookwise ask``; otherwise built from settings."""
    if llm is None and settings.llm_base_url:
        llm = LLMClient(settings)
    state = _State(
        settings=settings,
        retriever=retriever,
        llm=llm,
        owns_retriever=False,
        slots=StreamSlots(settings.max_streams_per_client, settings.max_streams),
        feedback=Feedback(
            settings.resolved_feedback_db,
            max_bytes=settings.feedback_max_bytes,
            remembered=settings.feedback_remembered_answers,
        ),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(state.feedback.open)  # a broken store turns feedback off, only
        try:
            await state.get_retriever()
        except BookwiseError as error:
            log_event("index_unavailable", logging.WARNING, code=error.code, message=error.message)
        log_event("started", llm=state.llm.model if state.llm else None, index=settings.qdrant_url or "edge")
        try:
            yield
        finally:
            state.closing.set()
            if state.prefill is not None:  # let its current batch end before the model goes away
                await anyio.to_thread.run_sync(state.prefill.join, PREFILL_STOP_S)
            state.feedback.close()
            if state.llm is not None:
                await state.llm.aclose()
            if state.owns_retriever and state.retriever is not None:
                state.retriever.close()

    app = FastAPI(
        title="Bookwise",
        version="0.1.0",
        lifespan=lifespan,
        openapi_url="/api/openapi.json" if settings.api_docs else None,
        docs_url="/api/docs" if settings.api_docs else None,
        redoc_url=None,
        redirect_slashes=False,  # a redirect's absolute URL would be built from the client's Host header
    )
    app.state.bookwise = state

    @app.exception_handler(BookwiseError)
    async def bookwise_error(request: Request, error: BookwiseError) -> JSONResponse:
        if error.status_code >= 500 and not isinstance(error, RequestRejected):
            log_event("request_failed", logging.WARNING, code=error.code, message=error.message)
        return error_response(error, _request_id(request))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        if first.get("type") == "json_invalid":
            at = first.get("loc", ("body", 0))[-1]
            message = f"the body is not valid JSON: {first.get('ctx', {}).get('error', 'invalid')} (at {at})"
            return error_response(InvalidRequestError(message), _request_id(request))
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = (
            f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid body"))
        )
        return error_response(InvalidRequestError(message), _request_id(request))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        if isinstance(error.__cause__, BookwiseError):  # e.g. the body counter's 413 while reading
            return error_response(error.__cause__, _request_id(request))
        if isinstance(error.__cause__, ValueError):  # FastAPI's 400 for a body that is not UTF-8
            invalid = InvalidRequestError("the body is not valid JSON: it is not UTF-8 text")
            return error_response(invalid, _request_id(request))
        rejected: RequestRejected = (
            NotFoundError("no such endpoint")
            if error.status_code == 404
            else InvalidRequestError(str(error.detail))
        )
        rejected.status_code = error.status_code
        return error_response(rejected, _request_id(request))

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, error: Exception) -> JSONResponse:
        # Outside the Guard (Starlette answers it outermost), so the request id is passed by hand.
        logging.getLogger("bookwise.api").error(
            "unexpected_error", exc_info=error, extra={"request_id": _request_id(request)}
        )
        mark_logged(error)  # Starlette re-raises it to uvicorn, whose report would repeat this one
        return error_response(BookwiseError("internal error"), _request_id(request))

    @app.post("/api/chat", response_model=None)
    async def chat(body: ChatBody, request: Request) -> _AnswerStream:
        request_id, client = _request_id(request), str(request.state.client_ip)
        question = chat_request(body, settings, request_id)
        state.slots.acquire(client)
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                state.slots.release(client)

        try:
            retriever = await state.get_retriever()
            answerer = Answerer(settings, retriever, state.llm)
            prepared = await answerer.prepare(question)
        except BaseException:
            release()
            raise
        state.feedback.remember(request_id)  # this answer, and only it, may now be rated

        async def events() -> AsyncIterator[ServerSentEvent]:
            try:
                async for event in answerer.stream(prepared):
                    yield ServerSentEvent(data=json.dumps(event.data, ensure_ascii=False), event=event.name)
            finally:
                outcome = prepared.outcome
                log_event(
                    "chat",
                    request_id=request_id,
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

        return _AnswerStream(
            events(),
            on_close=release,
            ping=settings.sse_ping_s,
            send_timeout=settings.sse_send_timeout_s,
            headers={"Cache-Control": "no-cache"},
        )

    @app.post("/api/search")
    async def search(body: SearchBody, request: Request) -> dict[str, Any]:
        check_question(body.query, settings)
        retriever = await state.get_retriever()
        result = await retriever.asearch(body.query, top_k=body.top_k, filters=body.filters)
        data = result.to_dict()
        sources = [{"n": n, **s} for n, s in enumerate(data.pop("sections"), start=1)]
        return {"request_id": _request_id(request), **data, "sources": sources}

    @app.post("/api/feedback", status_code=201)
    async def feedback(body: FeedbackBody) -> dict[str, Any]:
        for name, text, most in [
            ("comment", body.comment, settings.feedback_max_comment_chars),
            ("question", body.question, settings.max_question_chars),
        ]:
            if len(text) > most:
                raise InvalidRequestError(f"{name} is too long: {len(text)} characters, at most {most}")
        store = state.feedback
        stored = await anyio.to_thread.run_sync(
            lambda: store.add(
                request_id=body.request_id,
                rating=body.rating,
                question=body.question,
                answer=body.answer,
                sources=body.sources,
                comment=body.comment,
            )
        )
        return {"id": stored, "stored": True}

    @app.get("/api/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "active_streams": state.slots.active}

    @app.get("/api/ready")
    async def ready() -> dict[str, Any]:
        retriever = await state.get_retriever()
        with anyio.fail_after(settings.retrieval_timeout_s):
            index = await anyio.to_thread.run_sync(retriever.status, abandon_on_cancel=True)
        return {"status": "ready", **index, "llm": state.llm.model if state.llm else None}

    @app.get("/widget.js", response_model=None)
    async def widget() -> FileResponse:
        path = settings.widget_path or PLACEHOLDER_WIDGET
        if not path.is_file():
            raise NotFoundError(f"the widget bundle {path.name} is missing")
        return FileResponse(
            path, media_type="text/javascript", headers={"Cache-Control": "public, max-age=300"}
        )

    if settings.site_dir is not None:
        # Last: every API route above wins over a page of the same path.
        app.add_route("/{path:path}", site_endpoint(settings.site_dir), methods=["GET", "HEAD"])

    # The guard runs first (outermost but CORS, which must also decorate its refusals).
    app.add_middleware(
        Guard,
        allowed_origins=settings.allowed_origins,
        trusted_proxies=parse_networks(settings.trusted_proxies),
        max_body_bytes=settings.max_body_bytes,
        rate_limiter=RateLimiter(settings.rate_limit_per_minute),
    )
    app.add_middleware(
        JsonCORSMiddleware,
        allow_origins=settings.allowed_origins,
        allow_methods=["GET", "POST"],
        allow_headers=["content-type", "x-request-id"],
        expose_headers=["x-request-id", "retry-after"],
        allow_credentials=False,
        max_age=600,
    )
    return app
