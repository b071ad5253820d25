"""HTTP calls from the tests to the servers they start on loopback.

httpx's module functions (``httpx.get``, ``httpx.post``...) build a TLS context for every call, which
loads the CA bundle: about 20 ms of CPU each, although every call here goes to a plain-HTTP server on
127.0.0.1. These are the same calls with one TLS context, made once. Each call still gets a client of
its own, as with httpx's functions: no cookies or pooled connections carry from one call to the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

TLS = httpx.create_ssl_context()


def client(**arguments: Any) -> httpx.Client:
    """An ``httpx.Client`` with the shared TLS context."""
    return httpx.Client(verify=TLS, **arguments)


def request(method: str, url: str, **arguments: Any) -> httpx.Response:
    return httpx.request(method, url, verify=TLS, **arguments)


def get(url: str, **arguments: Any) -> httpx.Response:
    return httpx.get(url, verify=TLS, **arguments)


def post(url: str, **arguments: Any) -> httpx.Response:
    return httpx.post(url, verify=TLS, **arguments)


def put(url: str, **arguments: Any) -> httpx.Response:
    return httpx.put(url, verify=TLS, **arguments)


def options(url: str, **arguments: Any) -> httpx.Response:
    return httpx.options(url, verify=TLS, **arguments)


@contextmanager
def stream(method: str, url: str, **arguments: Any) -> Iterator[httpx.Response]:
    with httpx.stream(method, url, verify=TLS, **arguments) as response:
        yield response
