"""The separate listener (``BOOKWISE_METRICS_PORT``): one per ``bookwise serve``, in the process that
starts the workers, reading what all of them wrote. A small WSGI server in a thread, off the event
loop; a thread per connection, so it has the API's request deadline (``http_request_timeout_s``) and
a cap of its own (``metrics_max_connections``): half-sent requests cannot pile up threads."""

from __future__ import annotations

import io
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from bookwise.api.errors import error_response
from bookwise.api.metrics.access import PATH, authorized, unauthorized
from bookwise.api.metrics.directory import forget_dead_processes, registry
from bookwise.errors import ConfigError
from bookwise.settings import ServedMetricsSettings


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

    metrics_app = make_wsgi_app(registry())

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: metrics are at /metrics\n"]
        header = str(environ.get("HTTP_AUTHORIZATION", "")).encode("latin-1")
        if not authorized(header, token):
            response = error_response(unauthorized(), uuid.uuid4().hex)
            start_response(
                "401 Unauthorized",
                [("Content-Type", "application/json"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
            )
            return [bytes(response.body)]
        forget_dead_processes()
        result: Iterable[bytes] = metrics_app(environ, start_response)
        return result

    return app


def start_metrics_listener(settings: ServedMetricsSettings) -> MetricsListener | None:
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
