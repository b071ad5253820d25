"""The counting ASGI middleware (outermost, so the Guard's refusals count too) and ``/metrics`` on the
API's port behind its bearer token."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any

from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bookwise.api.errors import error_response
from bookwise.api.metrics.access import PATH, authorized, unauthorized
from bookwise.api.metrics.collectors import Collectors, label_code
from bookwise.api.metrics.directory import MULTIPROC_ENV, forget_dead_processes, registry

_ERROR_BODY_MAX = 8192  # error bodies are a few hundred bytes; a larger one is not ours
_METHODS = frozenset({"GET", "HEAD", "POST", "OPTIONS"})


class Endpoint:
    """``GET /metrics`` on the API's port: the token, then prometheus-client's own ASGI app."""

    def __init__(self, token: bytes | None, before: Callable[[], None]) -> None:
        from prometheus_client import make_asgi_app

        self.token = token
        self.before = before
        self.app = make_asgi_app(registry())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not authorized(Headers(scope=scope).get("authorization", "").encode("latin-1"), self.token):
            request_id = uuid.uuid4().hex  # outside the Guard, which names the others
            refusal = error_response(unauthorized(), request_id)
            refusal.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
            refusal.headers["X-Request-ID"] = request_id
            await refusal(scope, receive, send)
            return
        forget_dead_processes()
        self.before()
        await self.app(scope, receive, send)


def _route(scope: Scope) -> str:
    """The route's template (bounded, unlike paths); for a refusal answered before routing, the route
    the request was for."""
    route = scope.get("route")
    if route is None:
        app = scope.get("app")
        route = _matching(getattr(getattr(app, "router", None), "routes", ()), {**scope, "type": "http"})
    return str(getattr(route, "path", "unmatched"))


def _matching(routes: Any, scope: Scope) -> Any:
    """The route among ``routes`` that ``scope`` is for, looking into included routers (FastAPI wraps
    each ``include_router`` in a router of its own, which has no path)."""
    for candidate in routes:
        match, _ = candidate.matches(scope)
        if match is Match.NONE:
            continue
        included = getattr(candidate, "original_router", None)
        if included is None:
            return candidate
        found = _matching(included.routes, scope)
        if found is not None:
            return found
    return None


class MetricsMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        collectors: Collectors,
        endpoint: Endpoint | None,
        generation: Callable[[], str | None],
        note_generation: Callable[[str | None], None],
    ) -> None:
        self.app = app
        self.collectors = collectors
        self.endpoint = endpoint
        self.generation = generation
        self.note_generation = note_generation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        app = self.app
        if self.endpoint is not None and scope["path"] == PATH and scope["method"] in ("GET", "HEAD"):
            app = self.endpoint
        answer = _Answer()

        async def observed(message: Message) -> None:
            answer.see(message)
            await send(message)

        try:
            await app(scope, receive, observed)
        except Exception:
            if answer.status is None:  # Starlette's outermost handler answers 500 after this
                answer.status, answer.code = 500, "internal_error"
            raise
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.collectors.requests.labels(
                route=_route(scope) if app is self.app else PATH,
                method=method,
                status=str(answer.status or 0),
                code=answer.error_code(),
            ).inc()
            self.note_generation(self.generation())

    def _lifespan_send(self, send: Send) -> Send:
        async def sent(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                self.note_generation(self.generation())
            elif message["type"] == "lifespan.shutdown.complete" and MULTIPROC_ENV in os.environ:
                from prometheus_client.multiprocess import mark_process_dead

                # Its live gauges leave the sums; its counters stay.
                mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

        return sent


class _Answer:
    """What a response said: its status, and for an error in the API's JSON shape, its code."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.code: str | None = None
        self._body: bytearray | None = None

    def see(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
            if self.status >= 400 and content_type.startswith("application/json"):
                self._body = bytearray()
        elif message["type"] == "http.response.body" and self._body is not None:
            self._body += message.get("body", b"")
            if len(self._body) > _ERROR_BODY_MAX:
                self._body = None

    def error_code(self) -> str:
        if self.code is not None:
            return self.code
        if self.status is None or self.status < 400:
            return "ok"
        if self._body is None:
            return "other"
        try:
            error = json.loads(self._body).get("error", {})
        except (ValueError, AttributeError):
            return "other"
        return label_code(error.get("code") if isinstance(error, dict) else None)


# The separate listener (BOOKWISE_METRICS_PORT): one per `bookwise serve`, in the process that starts
