"""The ASGI guard in front of every route: request ids, and the cheap refusals that must come
before any body is parsed or any work done — Origin, content type, body size, request rate.

Order for ``POST /api/*``: Origin (403), content type (415), declared size (413), rate (429); the
body is then counted while it is read (413 even without a ``Content-Length``). Validation (422),
stream caps (429/503) and retrieval (503) follow in the routes, all before a stream opens. The GETs
that do work per request (``RATE_LIMITED_GETS``) count against the same rate; static files and
health checks do not.

The client address and scheme in the scope are already the proxy's view when the socket peer is one
of ``BOOKWISE_TRUSTED_PROXIES``: uvicorn's ProxyHeadersMiddleware rewrote them (``server.py``). The
address is written one way (``client_key``) before it keys a limit, and a forwarded one that is not
an IP address is refused (400): otherwise each spelling would be a fresh rate-limit bucket.

Every response's id (``X-Request-ID``, an error's ``request_id``, an answer's ``meta.request_id``)
is made here, never taken from the client: feedback is accepted once per answer by that id. A
client's own well-formed ``X-Request-ID`` is kept for correlation only: logged as
``client_request_id`` and sent back as ``X-Client-Request-ID``.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import uuid
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bookwise.api.errors import error_response
from bookwise.api.limits import RateLimiter, client_key, reader_id
from bookwise.api.logs import client_request_id_var, log_event, request_id_var
from bookwise.errors import (
    HostNotAllowedError,
    MalformedRequestError,
    OriginNotAllowedError,
    PayloadTooLargeError,
    RequestRejected,
    UnsupportedMediaTypeError,
)

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# GETs that cost an index lookup or a report: rate-limited like the POST routes.
RATE_LIMITED_GETS = frozenset({"/api/suggestions", "/api/insights"})
_LOGGED_ORIGINS_MAX = 64  # distinct refused origins named in the log, so a hostile caller cannot flood it
_logged_origins: set[str] = set()


def log_refused_origin(origin: str) -> None:
    """Tell the operator which setting lets a refused site in: the browser shows the page only a
    network error, so the server's log is where an owner trying `npm start` finds the cause."""
    if origin in _logged_origins or len(_logged_origins) >= _LOGGED_ORIGINS_MAX:
        return
    _logged_origins.add(origin)
    log_event(
        "origin_refused",
        logging.WARNING,
        origin=origin,
        hint=f"if this is your site, allow it: BOOKWISE_ALLOWED_ORIGINS={origin} (comma-separated list)",
    )


def host_allowed(scope: Scope, host: str, allowed_hosts: frozenset[str]) -> bool:
    """Whether ``host`` (a Host header) names this API. With no ``allowed_hosts``, an API reached on a
    loopback address answers to loopback names only (a DNS-rebinding page's name resolves to
    127.0.0.1 too), and one reached on another address to any name."""
    try:
        name = urlsplit(f"//{host}").hostname or ""  # lowercased; port and IPv6 brackets stripped
    except ValueError:  # an unclosed IPv6 bracket
        return False
    if allowed_hosts:
        return "*" in allowed_hosts or name in allowed_hosts
    server = scope.get("server") or ("", None)
    try:
        reached_on_loopback = ipaddress.ip_address(server[0]).is_loopback
    except ValueError:  # a Unix socket or a test transport: no address to judge by
        reached_on_loopback = False
    return not reached_on_loopback or name in LOOPBACK_HOSTS


def own_origin(scope: Scope, headers: Headers, allowed_hosts: frozenset[str]) -> str | None:
    """The API's own origin as the browser sees it, or None when the Host is not one of the API's.

    The scheme is the proxy's (X-Forwarded-Proto) when a trusted proxy sent the request, so a page
    served over HTTPS by the proxy is same-origin. The Host is checked because a DNS-rebinding page
    (http://evil.example:8000 resolving to 127.0.0.1) sends an Origin equal to its own Host.
    """
    host = headers.get("host", "")
    if not host_allowed(scope, host, allowed_hosts):
        return None
    return f"{scope.get('scheme', 'http')}://{host}"


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS, with its refused preflight (a plain-text 400) in the API's JSON error shape."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        refused = bytes(response.body).decode(errors="replace").removeprefix("Disallowed CORS ")
        if "origin" in refused:
            log_refused_origin(str(request_headers.get("origin")))
        error: RequestRejected = (
            OriginNotAllowedError(f"requests from {request_headers.get('origin')} are not allowed")
            if "origin" in refused
            else RequestRejected(f"CORS preflight refused: its {refused} is not allowed")
        )
        error.status_code = response.status_code
        request_id = uuid.uuid4().hex  # a preflight never reaches the Guard, which names the others
        refusal = error_response(error, request_id)
        for name, value in response.headers.items():
            if name not in ("content-type", "content-length"):
                refusal.headers[name] = value
        refusal.headers["X-Request-ID"] = request_id
        return refusal


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_origins: Sequence[str],
        allowed_hosts: Sequence[str],
        max_body_bytes: int,
        rate_limiter: RateLimiter,
    ) -> None:
        self.app = app
        self.allowed_origins = {o.rstrip("/") for o in allowed_origins}
        self.allowed_hosts = frozenset(host.strip().lower().strip("[]") for host in allowed_hosts)
        self.max_body_bytes = max_body_bytes
        self.rate_limiter = rate_limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        request_id = uuid.uuid4().hex  # the answer's identity: never the client's choice
        inbound = headers.get("x-request-id", "")
        client_request_id = inbound if _REQUEST_ID.match(inbound) else ""
        # The socket peer, or the client a trusted proxy named (uvicorn's proxy-headers middleware).
        address = scope["client"][0] if scope.get("client") else "unknown"
        client = client_key(address)
        state = scope.setdefault("state", {})
        state["request_id"], state["client_ip"] = request_id, client or address
        state["client_request_id"] = client_request_id
        state["reader"] = reader = reader_id(headers.get("x-bookwise-reader"))
        token = request_id_var.set(request_id)
        client_token = client_request_id_var.set(client_request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = MutableHeaders(scope=message)
                response_headers["X-Request-ID"] = request_id
                if client_request_id:
                    response_headers["X-Client-Request-ID"] = client_request_id
            await send(message)

        try:
            path, method = scope["path"], scope["method"]
            # MCP (streamable HTTP) gets the API's checks on POST, and a Host check on every method
            # (the transport's DNS-rebinding guard, with the API's own host rule).
            is_mcp = path == "/mcp" or path.startswith("/mcp/")
            checked = method == "POST" and (path.startswith("/api/") or is_mcp)
            rated = checked or (method in ("GET", "HEAD") and path in RATE_LIMITED_GETS)
            try:
                if client is None and scope.get("client") and "x-forwarded-for" in headers:
                    # Only a trusted proxy's header can name a client that is not an address (a socket
                    # peer always is one): refused rather than counted under a name of its own.
                    raise MalformedRequestError(
                        "the client address the proxy forwarded (X-Forwarded-For) is not an IP address"
                    )
                if is_mcp and not host_allowed(scope, headers.get("host", ""), self.allowed_hosts):
                    raise HostNotAllowedError("this host name is not one of the API's (allowed_hosts)")
                if checked:
                    self._check_request(scope, headers)
                if rated:
                    await self.rate_limiter.check(client or address, reader)
            except RequestRejected as error:
                await error_response(error, request_id)(scope, receive, send_with_id)
                return
            if checked:
                receive = self._counted(receive)
            await self.app(scope, receive, send_with_id)
        finally:
            client_request_id_var.reset(client_token)
            request_id_var.reset(token)

    def _check_request(self, scope: Scope, headers: Headers) -> None:
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.allowed_origins:
            if origin.rstrip("/") != own_origin(scope, headers, self.allowed_hosts):
                log_refused_origin(origin)
                raise OriginNotAllowedError(f"requests from {origin} are not allowed")
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise UnsupportedMediaTypeError("the body must be JSON (Content-Type: application/json)")
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            raise PayloadTooLargeError(f"the body is larger than {self.max_body_bytes} bytes")

    def _counted(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    raise PayloadTooLargeError(f"the body is larger than {self.max_body_bytes} bytes")
            return message

        return counted
