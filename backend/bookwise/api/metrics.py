"""Prometheus metrics (prometheus-client), off unless ``BOOKWISE_METRICS`` is on.

Never public: served at ``/metrics`` on the API's port only with a bearer token
(``BOOKWISE_METRICS_TOKEN``, compared in constant time), or only on a separate listener
(``BOOKWISE_METRICS_PORT``, on ``BOOKWISE_METRICS_HOST``); enabled with neither is a config error.

What is counted, and from where: every HTTP answer by route, status and error code (an ASGI
middleware, outermost, so the Guard's refusals count too); each answer stream's plan, answer kind and
outcome, and its time to ``sources`` and to the first token, read from the events the stream yields
(``watch``); the model's failed calls and retries, through the ``LLMObserver`` hook generation defines;
the stream slots in use; the live index generation.

Several processes (``bookwise serve --workers N``) write to one directory in prometheus-client's
multiprocess mode, and any of them (or the separate listener) serves the sum. The mode is chosen when
``prometheus_client`` is first imported, so ``prepare_metrics_dir`` must run before that, in the
serving process, before workers start: hence the lazy imports here.
"""

from __future__ import annotations

import atexit
import functools
import io
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bookwise.api.bearer import bearer_matches
from bookwise.api.errors import error_response
from bookwise.api.limits import StreamSlots
from bookwise.errors import ConfigError, UnauthorizedError
from bookwise.generation.events import AnswerEvent, AnswerTrace, Sources, Token
from bookwise.settings import Settings

if TYPE_CHECKING:  # at run time these come later (prometheus_client) or are not needed
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

    from bookwise.generation.llm import Call

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PATH = "/metrics"
# Time to `sources` is retrieval (target: p95 ≤ 150 ms at 50 streams); to the first token, a model.
SOURCES_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
FIRST_TOKEN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_CODE = re.compile(r"[a-z][a-z0-9_]{0,47}")  # an error code of errors.py: labels stay a small set
_ERROR_BODY_MAX = 8192  # error bodies are a few hundred bytes; a larger one is not ours
_METHODS = frozenset({"GET", "HEAD", "POST", "OPTIONS"})
_PRIVATE_PREFIX = "bookwise-metrics-"
_LIVE_GAUGE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")


@dataclass(frozen=True)
class _Collectors:
    requests: Counter
    answers: Counter
    time_to_sources: Histogram
    time_to_first_token: Histogram
    llm_errors: Counter
    llm_retries: Counter
    slots_in_use: Gauge
    slots_max: Gauge
    index_generation: Gauge


@functools.cache
def _collectors() -> _Collectors:
    # Imported here, not at the top: see the module's docstring.
    from prometheus_client import Counter, Gauge, Histogram

    return _Collectors(
        requests=Counter(
            "bookwise_http_requests",
            "HTTP requests answered, by route template, method, status and error code (`ok` below 400).",
            ["route", "method", "status", "code"],
        ),
        answers=Counter(
            "bookwise_answers",
            "Answer streams, by plan (meta's answer_mode), answer kind (done's answer_kind, `none` "
            "without a done event) and outcome (`done`, the error event's code, or client_disconnected).",
            ["plan", "answer_kind", "outcome"],
        ),
        time_to_sources=Histogram(
            "bookwise_time_to_sources_seconds",
            "From the start of an answer's preparation to its `sources` event, by plan.",
            ["plan"],
            buckets=SOURCES_BUCKETS,
        ),
        time_to_first_token=Histogram(
            "bookwise_time_to_first_token_seconds",
            "From the start of an answer's preparation to its first `token` event, by plan.",
            ["plan"],
            buckets=FIRST_TOKEN_BUCKETS,
        ),
        llm_errors=Counter(
            "bookwise_llm_errors",
            "Failed calls to the language model (after retries), by call (answer, rewrite) and code.",
            ["call", "code"],
        ),
        llm_retries=Counter(
            "bookwise_llm_retries",
            "Attempts at an answer retried before its first token, by the failure's code.",
            ["code"],
        ),
        slots_in_use=Gauge(
            "bookwise_stream_slots_in_use",
            "Answer streams open (being prepared or streaming), all processes together.",
            multiprocess_mode="livesum",
        ),
        slots_max=Gauge(
            "bookwise_stream_slots_max",
            "Answer streams the processes accept at once (BOOKWISE_MAX_STREAMS per process).",
            multiprocess_mode="livesum",
        ),
        index_generation=Gauge(
            "bookwise_index_generation_info",
            "1 for each index generation a live process serves (two during a switch), else 0.",
            ["generation"],
            multiprocess_mode="livemax",
        ),
    )


@functools.cache
def _registry() -> CollectorRegistry:
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    path = os.environ.get(MULTIPROC_ENV)
    if path is None:
        return REGISTRY  # one process: the default registry, with its process and GC collectors
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    return registry


def _forget_dead_processes() -> None:
    """A worker that crashed never said goodbye: its live gauges (slots in use) would count for ever."""
    path = os.environ.get(MULTIPROC_ENV)
    if path is None:
        return
    from prometheus_client.multiprocess import mark_process_dead

    for file in Path(path).glob("gauge_live*.db"):
        match = _LIVE_GAUGE_FILE.fullmatch(file.name)
        if match and not _alive(int(match.group(1))):
            mark_process_dead(int(match.group(1)), path)  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def check_metrics_config(settings: Settings) -> None:
    if settings.metrics and settings.metrics_port is None and settings.metrics_token is None:
        raise ConfigError(
            "BOOKWISE_METRICS is on but /metrics would be public: set BOOKWISE_METRICS_TOKEN (scrapers "
            "send it as a bearer token) or BOOKWISE_METRICS_PORT (a separate listener)"
        )


def prepare_metrics_dir(settings: Settings) -> Path | None:
    """Called by ``bookwise serve`` before the app (and its workers) start: the directory every process
    writes its metrics to, or None when metrics are off.

    ``PROMETHEUS_MULTIPROC_DIR`` set by the operator is used as it is (several ``bookwise serve`` on one
    machine may share it; emptying it between runs is theirs to do). Otherwise a private directory is
    made, handed to the workers through the environment, and removed at exit (or by the next start).
    """
    check_metrics_config(settings)
    if not settings.metrics:
        return None
    given = os.environ.get(MULTIPROC_ENV)
    if "prometheus_client" in sys.modules and given is None:
        raise RuntimeError("prepare_metrics_dir must run before prometheus_client is imported")
    if given is not None:
        if not Path(given).is_dir():
            raise ConfigError(f"{MULTIPROC_ENV} is not a directory: {given}")
        return Path(given)
    path = _private_dir()
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def _private_dir() -> Path:
    """A new directory, removed at exit; one left by a server that died without exiting (uvicorn ends
    on SIGTERM by raising it again, so atexit does not run) is removed by the next start."""
    root = Path(tempfile.gettempdir())
    for stale in root.glob(f"{_PRIVATE_PREFIX}*-*"):
        pid = stale.name.removeprefix(_PRIVATE_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)) or stale.is_symlink() or not stale.is_dir():
            continue
        if stale.stat().st_uid == os.getuid():
            shutil.rmtree(stale, ignore_errors=True)
    path = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _authorized(header: bytes | None, token: bytes | None) -> bool:
    return token is None or bearer_matches(header or b"", token)


def _unauthorized() -> UnauthorizedError:
    return UnauthorizedError("/metrics needs the bearer token (Authorization: Bearer <token>)")


class _Endpoint:
    """``GET /metrics`` on the API's port: the token, then prometheus-client's own ASGI app."""

    def __init__(self, token: bytes | None, before: Callable[[], None]) -> None:
        from prometheus_client import make_asgi_app

        self.token = token
        self.before = before
        self.app = make_asgi_app(_registry())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _authorized(Headers(scope=scope).get("authorization", "").encode("latin-1"), self.token):
            request_id = uuid.uuid4().hex  # outside the Guard, which names the others
            refusal = error_response(_unauthorized(), request_id)
            refusal.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
            refusal.headers["X-Request-ID"] = request_id
            await refusal(scope, receive, send)
            return
        _forget_dead_processes()
        self.before()
        await self.app(scope, receive, send)


class MeteredStreamSlots(StreamSlots):
    """Stream slots whose count is also a gauge (each process adds its own: ``livesum``)."""

    def __init__(self, per_client: int, total: int, per_address: int | None, gauge: Gauge) -> None:
        super().__init__(per_client, total, per_address)
        self._gauge = gauge

    def acquire(self, client: str, reader: str = "") -> None:
        super().acquire(client, reader)
        self._gauge.inc()

    def release(self, client: str, reader: str = "") -> None:
        before = self.active
        super().release(client, reader)
        if self.active < before:
            self._gauge.dec()


class _LLMCounter:
    """The ``LLMObserver`` generation calls: its failures and retries as counters."""

    def __init__(self, collectors: _Collectors) -> None:
        self._collectors = collectors

    def retried(self, code: str) -> None:
        self._collectors.llm_retries.labels(code=code).inc()

    def failed(self, call: Call, code: str) -> None:
        self._collectors.llm_errors.labels(call=call, code=code).inc()


class Metrics:
    """The API's metrics. When off, every hook is a no-op and prometheus-client is never imported."""

    def __init__(self, settings: Settings) -> None:
        check_metrics_config(settings)
        self.enabled = settings.metrics
        token = settings.metrics_token
        self._token = token.get_secret_value().encode() if token is not None else None
        self._on_api_port = settings.metrics and settings.metrics_port is None
        self._collectors = _collectors() if self.enabled else None
        self._generation: str | None = None
        self._generation_lock = threading.Lock()
        if self._collectors is not None:
            self._collectors.slots_max.set(settings.max_streams)

    @property
    def llm_observer(self) -> _LLMCounter | None:
        return _LLMCounter(self._collectors) if self._collectors is not None else None

    def stream_slots(self, per_client: int, total: int, per_address: int | None = None) -> StreamSlots:
        if self._collectors is None:
            return StreamSlots(per_client, total, per_address)
        return MeteredStreamSlots(per_client, total, per_address, self._collectors.slots_in_use)

    def watch(self, events: AsyncIterator[AnswerEvent], *, started: float) -> AsyncIterator[AnswerEvent]:
        """``events`` (an answer stream) unchanged, counted and timed from ``started`` (monotonic)."""
        if self._collectors is None:
            return events
        return self._watched(self._collectors, events, started)

    @staticmethod
    async def _watched(
        collectors: _Collectors, events: AsyncIterator[AnswerEvent], started: float
    ) -> AsyncIterator[AnswerEvent]:
        seen, plan = AnswerTrace(), "unknown"
        try:
            async for event in events:
                seen.add(event)
                plan = seen.meta.answer_mode if seen.meta is not None else "unknown"
                if isinstance(event, Sources):
                    collectors.time_to_sources.labels(plan=plan).observe(time.monotonic() - started)
                elif isinstance(event, Token) and len(seen.tokens) == 1:
                    collectors.time_to_first_token.labels(plan=plan).observe(time.monotonic() - started)
                yield event
        finally:
            answer = seen.summary
            kind, outcome = answer.kind or "none", _code(answer.ending)
            collectors.answers.labels(plan=plan, answer_kind=kind, outcome=outcome).inc()

    def install(self, app: Any, *, generation: Callable[[], str | None]) -> None:
        """Add the counting middleware (and ``/metrics`` on the API's port): call it last, so that it is
        outermost and sees every answer. ``generation`` names the index generation this process serves."""
        if self._collectors is None:
            return
        endpoint = None
        if self._on_api_port:
            endpoint = _Endpoint(self._token, lambda: self.note_generation(generation()))
        app.add_middleware(
            _MetricsMiddleware,
            collectors=self._collectors,
            endpoint=endpoint,
            generation=generation,
            metrics=self,
        )

    def note_generation(self, generation: str | None) -> None:
        if self._collectors is None or generation == self._generation:
            return
        with self._generation_lock:
            gauge = self._collectors.index_generation
            if self._generation is not None:
                gauge.labels(generation=self._generation).set(0)
            if generation is not None:
                gauge.labels(generation=generation).set(1)
            self._generation = generation


def _code(value: object) -> str:
    return value if isinstance(value, str) and _CODE.fullmatch(value) else "other"


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


class _MetricsMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        collectors: _Collectors,
        endpoint: _Endpoint | None,
        generation: Callable[[], str | None],
        metrics: Metrics,
    ) -> None:
        self.app = app
        self.collectors = collectors
        self.endpoint = endpoint
        self.generation = generation
        self.metrics = metrics

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
            self.metrics.note_generation(self.generation())

    def _lifespan_send(self, send: Send) -> Send:
        async def sent(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                self.metrics.note_generation(self.generation())
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
        return _code(error.get("code") if isinstance(error, dict) else None)


# The separate listener (BOOKWISE_METRICS_PORT): one per `bookwise serve`, in the process that starts
# the workers, reading what all of them wrote. A small WSGI server in a thread, off the event loop.
# A thread per connection, so it has the API's request deadline (``http_request_timeout_s``) and a
# cap of its own (``metrics_max_connections``): half-sent requests cannot pile up threads.


class _DeadlineReader(io.RawIOBase):
    """The socket read against one deadline for the whole request, however the bytes trickle in."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class _QuietHandler(WSGIRequestHandler):
    server: MetricsListener

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not worth a log line each."""

    def setup(self) -> None:
        super().setup()
        deadline = time.monotonic() + self.server.request_timeout_s
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline))

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # TimeoutError too: the deadline passed, or the scraper went away
            self.close_connection = True


class MetricsListener(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_timeout_s = 15.0
    max_connections = 32

    def server_activate(self) -> None:
        super().server_activate()
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self.refused = 0  # connections closed at once because the cap was reached

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)  # nothing was read: closing is the whole answer
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def _wsgi_app(token: bytes | None) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    from prometheus_client import make_wsgi_app

    metrics_app = make_wsgi_app(_registry())

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: metrics are at /metrics\n"]
        header = str(environ.get("HTTP_AUTHORIZATION", "")).encode("latin-1")
        if not _authorized(header, token):
            response = error_response(_unauthorized(), uuid.uuid4().hex)
            start_response(
                "401 Unauthorized",
                [("Content-Type", "application/json"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
            )
            return [bytes(response.body)]
        _forget_dead_processes()
        result: Iterable[bytes] = metrics_app(environ, start_response)
        return result

    return app


def start_metrics_listener(settings: Settings) -> MetricsListener | None:
    """Serve ``/metrics`` on ``metrics_host:metrics_port`` in a daemon thread; None when not configured."""
    if not settings.metrics or settings.metrics_port is None:
        return None
    token = settings.metrics_token.get_secret_value().encode() if settings.metrics_token else None
    host, port = settings.metrics_host, settings.metrics_port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    limits = {
        "address_family": family,
        "request_timeout_s": settings.http_request_timeout_s,
        "max_connections": settings.metrics_max_connections,
    }
    server_class = type("MetricsListener", (MetricsListener,), limits)
    try:
        server: WSGIServer = make_server(host, port, _wsgi_app(token), server_class, _QuietHandler)
    except OSError as error:
        raise ConfigError(
            f"BOOKWISE_METRICS_PORT: cannot listen on {host}:{port} ({error.strerror or 'bind failed'})"
        ) from error
    assert isinstance(server, MetricsListener)
    threading.Thread(target=server.serve_forever, name="bookwise-metrics", daemon=True).start()
    return server
