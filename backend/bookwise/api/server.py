"""How `bookwise serve` runs uvicorn: its connection limits as settings, and the one it lacks.

uvicorn's own limits are used as they are: ``timeout_keep_alive`` (idle time between requests),
``limit_concurrency`` (open connections or running requests; beyond it uvicorn answers every new
request with its own plain-text 503 before the app sees it) and, with the h11 parser,
``h11_max_incomplete_event_size`` (request line + headers; beyond it, a 400). httptools is not used:
its header buffer cannot be bounded (four unfinished 25 MB headers held 100 MB; h11 refused them at
16 KiB with memory flat).

uvicorn has no deadline for *receiving* a request (uvicorn issue #157: no ``timeout-request-start``
or ``-complete``; the keep-alive timer is cancelled by the first byte), so one byte every few seconds
holds a connection for ever, and ASGI middleware cannot help: the app is called only once headers
are complete. ``_DeadlineH11Protocol`` adds it: from the moment the server waits for a request (a
new connection, or the end of the previous response) the whole request, headers and body, must
arrive within ``http_request_timeout_s``, or the connection is closed. A request fully received is
never cut, however long its answer streams. It also answers h11's parse errors (bad
``Content-Length``, no ``Host``, headers too large) in the API's JSON error shape.

``limit_concurrency`` counts every client's connections together, so one address holding idle
connections would make everyone's requests 503 until the deadline frees them: the protocol also
caps connections per client address (``http_max_connections_per_client``; closed at once beyond it),
except from trusted proxies, where per-client limits are the proxy's job. It counts the socket peer:
it runs before uvicorn's proxy-headers middleware has read any header.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import resource
import uuid
from collections import Counter
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from bookwise.api.limits import Network, client_key, is_trusted, parse_networks
from bookwise.api.logs import log_event
from bookwise.api.routes.admin import INDEX_UPLOAD_PATH
from bookwise.errors import MalformedRequestError
from bookwise.settings import ServerSettings

_WAITING = (h11.IDLE, h11.SEND_BODY)  # the client's states while its request is incomplete
_FD_MARGIN = 64  # files the process needs besides client sockets (index, models, logs)


class _GuardedH11Protocol(H11Protocol):
    # Set per server by protocol_class(); the counter is shared by one server's connections.
    request_timeout_s: ClassVar[float] = 15.0
    per_client: ClassVar[int] = 64
    trusted: ClassVar[list[Network]] = []
    open_per_client: ClassVar[Counter[str]] = Counter()
    max_head_bytes: ClassVar[int] = 16_384
    upload_authorization: ClassVar[bytes | None] = None  # b"Bearer <admin token>", when uploads exist

    _deadline: asyncio.TimerHandle | None = None
    _counted: str | None = None
    _head_bytes = 0  # of the request head being received

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = (client_key(self.client[0]) or self.client[0]) if self.client else ""  # one spelling
        if peer and not is_trusted(peer, self.trusted):
            if self.open_per_client[peer] >= self.per_client:
                transport.close()  # nothing was asked yet, so there is nothing to answer
                return
            self.open_per_client[peer] += 1
            self._counted = peer
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_too_large(data):
            self.send_400_response("request head too large")
            return
        super().data_received(data)
        if self.conn.their_state not in _WAITING:  # the request is complete: its answer may take long
            self._disarm()
        elif self.conn.their_state is h11.SEND_BODY and self._is_authorized_upload():
            # An index generation can take longer than the deadline to arrive: for the admin token's
            # holder it is a deadline for silence, re-armed by every read, not for the whole body.
            self._arm()

    def _is_authorized_upload(self) -> bool:
        expected = self.upload_authorization
        if expected is None or self.scope.get("path") != INDEX_UPLOAD_PATH:
            return False
        given = next((value for name, value in self.headers if name == b"authorization"), b"")
        return hmac.compare_digest(given, expected)

    def _head_too_large(self, data: bytes) -> bool:
        """h11 bounds only an incomplete head: 3,000 headers arriving in one read passed whole. So the
        head's bytes are counted here, across reads, up to its blank line."""
        if self.conn.their_state is not h11.IDLE:
            self._head_bytes = 0
            return False
        end = data.find(b"\r\n\r\n")
        self._head_bytes += len(data) if end < 0 else end + 4
        too_large = self._head_bytes > self.max_head_bytes
        if end >= 0:
            self._head_bytes = 0  # the next request's head starts after this one
        return too_large

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state in _WAITING:
            self._arm()  # the next request (or the rest of an unread body) is on the clock

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._counted is not None:
            self.open_per_client[self._counted] -= 1
            if self.open_per_client[self._counted] <= 0:
                del self.open_per_client[self._counted]
            self._counted = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._deadline_passed)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in _WAITING:
            return
        # Closing is the whole answer: nothing of the request may be trusted, and a route waiting on the
        # body sees a disconnect. A request that never started is not worth a log line.
        if self.conn.their_state is h11.SEND_BODY:
            log_event("request_timeout", logging.INFO, client=self.client[0] if self.client else None)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot parse, in the API's JSON shape."""
        request_id = uuid.uuid4().hex
        error = MalformedRequestError(
            "the HTTP request is malformed: bad request line or header, no Host header, an invalid "
            "Content-Length or Transfer-Encoding, or headers larger than the server accepts"
        )
        body = json.dumps({"error": {**error.to_dict(), "request_id": request_id}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-request-id", request_id.encode()),
            (b"connection", b"close"),
        ]
        try:
            for event in (
                h11.Response(status_code=error.status_code, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:  # a response had already started: only closing is left
            pass
        self.transport.close()


def protocol_class(settings: ServerSettings) -> type[H11Protocol]:
    token = settings.admin_token
    limits = {
        "request_timeout_s": settings.http_request_timeout_s,
        "per_client": settings.http_max_connections_per_client,
        "trusted": parse_networks(settings.trusted_proxies),
        "open_per_client": Counter(),
        "max_head_bytes": settings.http_max_header_bytes,
        "upload_authorization": None if token is None else b"Bearer " + token.get_secret_value().encode(),
    }
    return type("GuardedH11Protocol", (_GuardedH11Protocol,), limits)


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """uvicorn.Config keyword arguments for the API (host and port aside), from the settings."""
    return {
        "http": protocol_class(settings),
        "ws": "none",  # no WebSocket routes: an upgrade is an ordinary request
        "timeout_keep_alive": settings.http_keep_alive_s,
        "limit_concurrency": settings.http_max_connections,
        "h11_max_incomplete_event_size": settings.http_max_header_bytes,
        # uvicorn's ProxyHeadersMiddleware takes the client address (X-Forwarded-For, walked right to
        # left past trusted hops) and scheme (X-Forwarded-Proto) from these peers only. An explicit
        # list, even empty, because its default trusts 127.0.0.1 (or $FORWARDED_ALLOW_IPS).
        "proxy_headers": True,
        "forwarded_allow_ips": [str(network) for network in parse_networks(settings.trusted_proxies)],
        "server_header": False,
        "log_config": None,  # uvicorn's loggers go through ours: one JSON line per record
    }


def ensure_file_limit(settings: ServerSettings) -> None:
    """Each connection is a file descriptor: past the process's limit accept() fails and nothing,
    not even ``/api/health``, is answered. Raise the soft limit when the hard one allows, else warn."""
    needed = settings.http_max_connections + _FD_MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard == resource.RLIM_INFINITY or hard >= needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return
    log_event(
        "file_limit_low",
        logging.WARNING,
        limit=soft,
        needed=needed,
        hint="raise `ulimit -n` or lower BOOKWISE_HTTP_MAX_CONNECTIONS",
    )
