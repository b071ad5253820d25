"""Run real ASGI apps on real sockets for tests.

Tests that exercise timeouts, disconnects and streaming need a real TCP server: in-process ASGI
transports never close a socket, so they cannot show what a browser or an upstream LLM does.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

HOST = "127.0.0.1"


def _bound_socket(port: int = 0) -> socket.socket:
    """Bind before starting uvicorn, so the port is ours and there is no pick-then-bind race."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.set_inheritable(True)
    return sock


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    port: int = 0,
    start_timeout: float = 60.0,  # the app opens its index at start: seconds on a busy 2-core machine
    stop_timeout: float = 35.0,
    **options: Any,
) -> Iterator[str]:
    """Serve `app` with uvicorn in a daemon thread; yield its base URL (no trailing slash).

    uvicorn 0.54 skips signal handlers by itself outside the main thread, so nothing to override.
    `timeout_graceful_shutdown` bounds the exit when a response is still hanging (a stalled stream).
    `stop_timeout` is above the API's own bound on its shutdown (`PREFILL_STOP_S`: the passage
    prefill's current batch ends first), which a busy machine can reach.
    `options` are more uvicorn.Config arguments (the API's: `bookwise.api.server.uvicorn_options`).
    """
    sock = _bound_socket(port)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        **{
            "host": HOST,
            "port": bound_port,
            "log_level": "warning",
            "lifespan": "on",
            "timeout_graceful_shutdown": 1,
            "proxy_headers": False,  # no proxy header is believed; the API's options trust its proxies
            **options,
        },
    )
    server = uvicorn.Server(config)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # SystemExit on a failed startup must reach the test
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-{bound_port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout
        while not server.started:
            if errors or not thread.is_alive():
                raise RuntimeError(f"uvicorn failed to start on port {bound_port}") from (
                    errors[0] if errors else None
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"uvicorn did not start within {start_timeout}s on port {bound_port}")
            time.sleep(0.01)
        yield f"http://{HOST}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(stop_timeout)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"uvicorn on port {bound_port} did not stop within {stop_timeout}s")


def closed_port_url() -> str:
    """A URL where nothing listens, so a client sees a refused connection straight away."""
    sock = _bound_socket()
    port = sock.getsockname()[1]
    sock.close()
    return f"http://{HOST}:{port}"


def away_from_a_minute_boundary(burst_s: float = 10.0) -> None:
    """Wait, if need be, until a burst of requests taking at most ``burst_s`` fits in one minute. The
    sliding window weighs the previous minute by how much of it is left and rounds down, so a burst that
    straddles a boundary is counted as one request less: "the third request is refused" failed at
    hh:mm:59."""
    into = time.time() % 60
    if into > 60 - burst_s:
        time.sleep(60.5 - into)
