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


def client(**options: Any) -> httpx.Client:
    """An ``httpx.Client`` with the shared TLS context."""
    return httpx.Client(verify=TLS, **options)


def request(method: str, url: str, **options: Any) -> httpx.Response:
    return httpx.request(method, url, verify=TLS, **options)


def get(url: str, **options: Any) -> httpx.Response:
    return httpx.get(url, verify=TLS, **options)


def post(url: str, **options: Any) -> httpx.Response:
    return httpx.post(url, verify=TLS, **options)


def put(url: str, **options: Any) -> httpx.Response:
    return httpx.put(url, verify=TLS, **options)


def options(url: str, **options: Any) -> httpx.Response:
    return httpx.options(url, verify=TLS, **options)


@contextmanager
def stream(method: str, url: str, **options: Any) -> Iterator[httpx.Response]:
    with httpx.stream(method, url, verify=TLS, **options) as response:
        yield response
