"""Who the client is and which hosts are the API's own: uvicorn's proxy headers as `bookwise serve`
configures them, and the Host allow-list that keeps a DNS-rebinding page from being same-origin."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

import local_http
from apiserver import build_book, hash_settings, running_api
from bookwise.api.guard import host_allowed
from bookwise.api.server import uvicorn_options

SEARCH = {"query": "quokka burrow"}


def seen_by_the_app(trusted: list[str], peer: str, headers: dict[str, str]) -> tuple[str, str]:
    """(client address, scheme) the app receives from uvicorn configured as `bookwise serve` is."""
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.update(client=scope["client"][0], scheme=scope["scheme"])

    config = uvicorn.Config(
        app, **uvicorn_options(hash_settings(Path("/nonexistent"), trusted_proxies=trusted))
    )
    config.load()
    scope = {
        "type": "http",
        "scheme": "http",
        "client": (peer, 50000),
        "server": ("127.0.0.1", 8000),
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
    }
    asyncio.run(config.loaded_app(scope, None, None))
    return seen["client"], seen["scheme"]


PROXIES = ["10.0.0.0/8", "192.168.1.1"]


@pytest.mark.parametrize(("peer", "forwarded", "client"), [
    ("203.0.113.5", "198.51.100.1", "203.0.113.5"),  # not a proxy: the header is ignored
    ("10.1.2.3", None, "10.1.2.3"),
    ("10.1.2.3", "198.51.100.1", "198.51.100.1"),
    ("10.1.2.3", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # prepended by the client: ignored
    ("10.1.2.3", "198.51.100.1, 192.168.1.1", "198.51.100.1"),  # two trusted hops
    ("10.1.2.3", "10.0.0.9, 10.0.0.8", "10.0.0.9"),  # all trusted: the farthest
    ("10.1.2.3", " , ", "10.1.2.3"),
])  # fmt: skip
def test_forwarded_for_is_walked_right_to_left_past_trusted_proxies(
    peer: str, forwarded: str | None, client: str
) -> None:
    headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
    assert seen_by_the_app(PROXIES, peer, headers)[0] == client


@pytest.mark.parametrize(("trusted", "peer", "scheme"), [
    (PROXIES, "10.1.2.3", "https"),
    (PROXIES, "203.0.113.5", "http"),  # a client's own X-Forwarded-Proto is not believed
    ([], "127.0.0.1", "http"),  # empty: not even loopback (uvicorn's own default trusts it)
])  # fmt: skip
def test_forwarded_proto_is_believed_only_from_trusted_proxies(
    trusted: list[str], peer: str, scheme: str
) -> None:
    assert seen_by_the_app(trusted, peer, {"X-Forwarded-Proto": "https"})[1] == scheme


def test_loopback_forwarded_for_is_not_believed_without_trusted_proxies() -> None:
    assert seen_by_the_app([], "127.0.0.1", {"X-Forwarded-For": "203.0.113.7"})[0] == "127.0.0.1"


def post_as(url: str, host: str) -> httpx.Response:
    """POST from a page at http://{host}: its Origin and Host are both {host}, as a browser sends them."""
    return local_http.post(
        f"{url}/api/search", json=SEARCH, headers={"Host": host, "Origin": f"http://{host}"}, timeout=10
    )


def test_dns_rebinding_page_whose_origin_equals_its_host_is_refused(tmp_path: Path) -> None:
    """evil.example resolved to 127.0.0.1 by its owner: the page's Origin is its own Host, so the API
    used to take it for its own origin and answer it."""
    with running_api(build_book(tmp_path)) as url:
        port = url.rsplit(":", 1)[1]
        rebound = post_as(url, f"evil.example:{port}")
        by_ip = post_as(url, f"127.0.0.1:{port}")
        by_name = post_as(url, f"localhost:{port}")
        by_ipv6 = post_as(url, f"[::1]:{port}")
        curl = local_http.post(f"{url}/api/search", json=SEARCH, headers={"Host": f"evil.example:{port}"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "origin_not_allowed"
    assert by_ip.status_code == by_name.status_code == by_ipv6.status_code == 200
    assert curl.status_code == 200  # no Origin: not a browser, nothing to rebind


def test_allowed_hosts_replace_the_loopback_names(tmp_path: Path) -> None:
    settings = build_book(tmp_path, allowed_hosts=["Docs.Example.org"])
    with running_api(settings) as url:
        site = post_as(url, "docs.example.org")
        local = post_as(url, f"localhost:{url.rsplit(':', 1)[1]}")
        other = post_as(url, "evil.example")
    assert site.status_code == 200
    assert local.status_code == other.status_code == 403


@pytest.mark.parametrize(("server", "host", "allowed", "expected"), [
    ("127.0.0.1", "evil.example:8000", [], False),
    ("::1", "[::1]:8000", [], True),
    ("192.0.2.10", "docs.example.org", [], True),  # reached on a public address: any name
    ("192.0.2.10", "evil.example", ["docs.example.org"], False),
    ("127.0.0.1", "evil.example", ["*"], True),
    ("127.0.0.1", "[::1", [], False),  # unparseable
])  # fmt: skip
def test_host_allowed(server: str, host: str, allowed: list[str], expected: bool) -> None:
    assert host_allowed({"server": (server, 8000)}, host, frozenset(allowed)) is expected
