"""The FastAPI app: answers streamed as Server-Sent Events, search, feedback, health and the widget.

The routes live in ``bookwise.api.routes`` (one router per concern) and reach the shared services
(index, model, stream slots, feedback, their settings) through ``bookwise.api.deps``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from fastapi import FastAPI
from starlette.routing import Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from bookwise import __version__
from bookwise.api.guard import Guard, JsonCORSMiddleware
from bookwise.api.handlers import install_error_handlers
from bookwise.api.limits import RateLimiter
from bookwise.api.logs import log_event
from bookwise.api.metrics.hooks import Metrics
from bookwise.api.routes import (
    admin,
    chat,
    feedback,
    health,
    insights,
    instant_search,
    search,
    suggestions,
    widget,
)
from bookwise.api.services import Services, build_services
from bookwise.api.site import site_endpoint
from bookwise.errors import BookwiseError
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import RateLimitSettings, ServerSettings, Settings

if TYPE_CHECKING:
    from bookwise.generation.llm import LLMClient

PLACEHOLDER_WIDGET = Path(__file__).with_name("static") / "widget.js"

Sessions = Callable[[], AbstractAsyncContextManager[None]]  # an MCP server's session manager, run


class _LazyBook:
    """``/mcp``, the book's MCP server built on its first request rather than at start: the MCP SDK
    takes about a second to import, which every ``bookwise serve`` (and each of its workers) paid before
    answering ``/api/health``. Its sessions run in a task of the app's lifespan from then on, and end
    with it, as they would have from the start."""

    def __init__(self, build: Callable[[], tuple[ASGIApp, Sessions]]) -> None:
        self._build = build
        self._app: ASGIApp | None = None
        self._lock: anyio.Lock | None = None
        self._tasks: TaskGroup | None = None
        self._closing: anyio.Event | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Held by the lifespan: the server's sessions, once it is built, run until the app stops."""
        self._lock, self._closing = anyio.Lock(), anyio.Event()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self._closing.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app or await self._start()
        await app(scope, receive, send)

    async def _start(self) -> ASGIApp:
        if self._lock is None or self._tasks is None:
            raise RuntimeError("/mcp is served only while the app's lifespan runs")
        async with self._lock:
            if self._app is None:
                app, sessions = await anyio.to_thread.run_sync(self._build)
                await self._tasks.start(self._serve, sessions)
                self._app = app
            return self._app

    async def _serve(self, sessions: Sessions, *, task_status: TaskStatus[None]) -> None:
        assert self._closing is not None
        async with sessions():
            task_status.started()
            await self._closing.wait()


def _lifespan(
    shared: Services,
    rate_limiter: RateLimiter,
    index_name: str,
    mcp_sessions: Sessions,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open feedback and the index at start; close them (and the model's and Redis' clients) at the end."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(shared.feedback.open)  # a broken store turns feedback off, only
        shared.question_log.start()  # off unless BOOKWISE_QUESTION_LOG; purges past the retention
        try:
            await shared.index.get()
        except BookwiseError as error:
            log_event("index_unavailable", logging.WARNING, code=error.code, detail=error.message)
        log_event("started", llm=shared.llm.model if shared.llm else None, index=index_name)
        try:
            async with mcp_sessions():  # a route's app has no lifespan of its own: the API's runs /mcp's
                yield
        finally:
            await shared.index.close()
            await anyio.to_thread.run_sync(shared.question_log.close)  # writes what is queued
            shared.insights.close()
            if shared.llm is not None:
                await shared.llm.aclose()
            await rate_limiter.aclose()

    return lifespan


def create_app(
    settings: Settings, *, retriever: Retriever | None = None, llm: LLMClient | None = None
) -> FastAPI:
    """``retriever``/``llm`` are injected by tests and ``bookwise ask``; otherwise built from settings."""
    metrics = Metrics(settings)  # off unless BOOKWISE_METRICS: then its hooks do nothing
    if llm is None and settings.llm_base_url:
        from bookwise.generation.llm import LLMClient  # the model's SDK: loaded only when one is configured

        llm = LLMClient(settings, observer=metrics.llm_observer)
    shared = build_services(
        settings, retriever=retriever, llm=llm, widget=PLACEHOLDER_WIDGET, metrics=metrics
    )
    rate_limiter = _rate_limiter(settings)
    book = _LazyBook(lambda: _book_server(settings, shared))
    app = FastAPI(
        title="Bookwise",
        version=__version__,
        lifespan=_lifespan(shared, rate_limiter, settings.qdrant_url or "edge", book.running),
        openapi_url="/api/openapi.json" if settings.api_docs else None,
        docs_url="/api/docs" if settings.api_docs else None,
        redoc_url=None,
        redirect_slashes=False,  # a redirect's absolute URL would be built from the client's Host header
    )
    app.state.services = shared
    install_error_handlers(app)
    _add_routes(app, settings, shared, book)
    _add_middleware(app, settings, rate_limiter, max_body_bytes=settings.max_body_bytes)
    index = shared.index
    metrics.install(app, generation=lambda: index.retriever.index_version if index.retriever else None)
    return app


def _rate_limiter(settings: RateLimitSettings) -> RateLimiter:
    return RateLimiter(
        settings.rate_limit_per_minute,
        per_address_per_minute=settings.rate_limit_per_address_per_minute,
        max_clients=settings.rate_limit_max_clients,
        redis_url=settings.redis_url,
        redis_timeout_s=settings.redis_timeout_s,
    )


def _book_server(settings: Settings, shared: Services) -> tuple[ASGIApp, Sessions]:
    """The book's MCP server, whose tools read the same index as the API: ``/mcp``'s app and its
    sessions."""
    from bookwise.api.mcp import BookTools, ContentsLimits, build_mcp_server, http_routes

    log = shared.question_log
    agent_log = log.submit if log.enabled else None  # MCP search = agent traffic
    contents = ContentsLimits.from_settings(settings)
    tools = BookTools(shared.index.get, shared.limits, agent_log, contents=contents)
    server = build_mcp_server(settings.book_title, tools)
    routes = http_routes(server, max_body_bytes=settings.max_body_bytes)
    return Router(routes=routes), server.session_manager.run


def _add_routes(app: FastAPI, settings: ServerSettings, shared: Services, book: _LazyBook) -> None:
    for routes in (chat, search, instant_search, feedback, health, suggestions, widget):
        app.include_router(routes.router)
    if shared.admin_token is not None:  # the authors' report and index uploads exist only with its token
        app.include_router(insights.router)
        app.include_router(admin.router)
    app.router.routes.append(Route("/mcp", endpoint=book))  # any method: its app answers POST only
    if settings.site_dir is not None:
        # Last: every API route above wins over a page of the same path.
        app.add_route("/{path:path}", site_endpoint(settings.site_dir), methods=["GET", "HEAD"])


def _add_middleware(
    app: FastAPI, settings: ServerSettings, rate_limiter: RateLimiter, *, max_body_bytes: int
) -> None:
    # The guard runs first (outermost but CORS, which must also decorate its refusals).
    app.add_middleware(
        Guard,
        allowed_origins=settings.allowed_origins,
        allowed_hosts=settings.allowed_hosts,
        max_body_bytes=max_body_bytes,
        rate_limiter=rate_limiter,
    )
    app.add_middleware(
        JsonCORSMiddleware,
        allow_origins=settings.allowed_origins,
        allow_methods=["GET", "POST"],  # /mcp is stateless: no session for a DELETE to end
        allow_headers=[
            "content-type",
            "x-request-id",
            "x-bookwise-reader",
            "mcp-session-id",
            "mcp-protocol-version",
        ],
        expose_headers=["x-request-id", "x-client-request-id", "retry-after", "mcp-session-id"],
        allow_credentials=False,
        max_age=600,
    )
