"""The API behind a real nginx terminating TLS, configured with the manual's recipe (tests/nginx.py).

The browser is an httpx client connecting from another loopback address (127.0.0.2, .3, …) than
nginx's own (127.0.0.1), so the client address the API sees tells who named it: nginx (trusted) or
the socket peer. The rate limit of one request a minute makes that visible from outside.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiserver import build_book, parse_sse, running_api
from bookwise.settings import Settings
from fakellm import FakeLLM
from nginx import free_port, make_certificate, recipe_for_test, running_nginx, site_served_by_bookwise
from servers import away_from_a_minute_boundary

QUESTION = {"question": "What do quokkas eat in the morning?"}
SEARCH = {"query": "quokka burrow"}
PAGE = "<!doctype html><title>Quokka care</title><p>The built site.</p>"


@dataclass
class Proxied:
    site: str  # https://127.0.0.1:PORT: the page's origin, through nginx
    api: str  # the API's own http://127.0.0.1:PORT, behind nginx
    cert: Path

    def client(self, local: str = "127.0.0.2") -> httpx.Client:
        """A browser on `local` (a loopback address other than nginx's)."""
        tls = ssl.create_default_context(cafile=str(self.cert))
        return httpx.Client(transport=httpx.HTTPTransport(local_address=local, verify=tls), timeout=10)


def built_site(root: Path) -> Path:
    site = root / "build"
    (site / "docs" / "care").mkdir(parents=True)
    (site / "index.html").write_text(PAGE, encoding="utf-8")
    (site / "docs" / "care" / "index.html").write_text("<title>Care</title>", encoding="utf-8")
    (site / "404.html").write_text("<title>Not found</title>", encoding="utf-8")
    return site


@contextmanager
def behind_nginx(root: Path, settings: Settings, *, site_by_bookwise: bool = False) -> Iterator[Proxied]:
    cert, key = make_certificate(root / "tls")
    site = built_site(root)
    if site_by_bookwise:  # `bookwise serve --site`
        settings = settings.model_copy(update={"site_dir": site})
    with running_api(settings) as api:
        port = free_port()
        config = recipe_for_test(port=port, cert=cert, key=key, site_dir=site, api_url=api)
        if site_by_bookwise:
            config = site_served_by_bookwise(config, api)
        with running_nginx(root / "nginx", config, port) as url:
            yield Proxied(url, api, cert)


def book(root: Path, **overrides: Any) -> Settings:
    return build_book(root / "book", **({"allowed_hosts": ["127.0.0.1"]} | overrides))


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[Proxied]:
    """nginx trusted, as the manual says to run it."""
    root = tmp_path_factory.mktemp("nginx")
    settings = book(root, llm_base_url=llm_server[1], trusted_proxies=["127.0.0.1"])
    with behind_nginx(root, settings) as running:
        yield running


def chat_through(proxied: Proxied, client: httpx.Client) -> tuple[int, list[str]]:
    with client.stream(
        "POST", f"{proxied.site}/api/chat", json=QUESTION, headers={"Origin": proxied.site}
    ) as r:
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            return r.status_code, [name for name, _ in parse_sse(r.iter_lines())]
        r.read()
        return r.status_code, [r.json()["error"]["code"]]


def test_recipe_serves_the_built_site_and_passes_the_widget_to_the_api(proxied: Proxied) -> None:
    with proxied.client() as client:
        page = client.get(f"{proxied.site}/")
        nested = client.get(f"{proxied.site}/docs/care")
        missing = client.get(f"{proxied.site}/docs/nothing-here")
        widget = client.get(f"{proxied.site}/widget.js")
        renderer = client.get(f"{proxied.site}/widget-markdown.js")
        health = client.get(f"{proxied.site}/api/health")
    assert page.status_code == 200 and page.text == PAGE and "x-request-id" not in page.headers  # nginx's
    assert nested.status_code == 200 and "Care" in nested.text
    assert missing.status_code == 404 and "Not found" in missing.text
    assert widget.status_code == 200 and widget.headers["content-type"].startswith("text/javascript")
    assert renderer.status_code == 200 and "__bookwiseMarkdown" in renderer.text  # the API's, not the site's
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_bookwise_serve_site_behind_nginx_with_https_accepts_same_origin_chat(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    """The bug: the API built its own origin from the ASGI scheme (http) with proxy headers off, so
    behind nginx with HTTPS the page's `Origin: https://…` was foreign and every question got 403."""
    settings = book(tmp_path, llm_base_url=llm_server[1], trusted_proxies=["127.0.0.1"])
    with behind_nginx(tmp_path, settings, site_by_bookwise=True) as proxied, proxied.client() as client:
        page = client.get(f"{proxied.site}/docs/care")
        status, names = chat_through(proxied, client)
    assert page.status_code == 200 and "Care" in page.text and "x-request-id" in page.headers  # bookwise's
    assert status == 200, names
    assert names[:2] == ["meta", "sources"] and names[-1] == "done"


def test_same_origin_chat_from_the_https_site_served_by_nginx_is_accepted(
    proxied: Proxied, fake: FakeLLM
) -> None:
    with proxied.client() as client:
        status, names = chat_through(proxied, client)
        search = client.post(f"{proxied.site}/api/search", json=SEARCH, headers={"Origin": proxied.site})
    assert status == 200, names
    assert names[:2] == ["meta", "sources"] and names[-1] == "done"
    assert search.status_code == 200 and search.json()["sources"]


def test_answer_streams_through_nginx_unbuffered(proxied: Proxied, fake: FakeLLM) -> None:
    """`sources` and the first token reach the browser while the LLM is still stalled on the
    second: a buffering proxy would hold them until the answer ends (the read would time out)."""
    fake.mode, fake.stall_after = "stall", 1
    with proxied.client() as client:
        with client.stream(
            "POST", f"{proxied.site}/api/chat", json=QUESTION, headers={"Origin": proxied.site}
        ) as response:
            assert response.status_code == 200
            events = parse_sse(response.iter_lines())
            seen = []
            for name, _ in events:
                seen.append(name)
                if name == "token":
                    break
            assert seen == ["meta", "sources", "token"]
            assert not fake.finished.is_set()  # the answer is still being written upstream
            fake.release_stalls()
            seen += [name for name, _ in events]
    assert seen[-1] in ("done", "error") and "sources" not in seen[3:]


def test_client_address_comes_from_trusted_nginx_and_spoofed_hops_are_skipped(
    tmp_path: Path,
) -> None:
    settings = book(tmp_path, trusted_proxies=["127.0.0.1"], rate_limit_per_minute=1)
    with behind_nginx(tmp_path, settings) as proxied:
        with proxied.client("127.0.0.2") as one, proxied.client("127.0.0.3") as other:
            away_from_a_minute_boundary()
            first = one.post(f"{proxied.site}/api/search", json=SEARCH)
            # Two readers behind one nginx are two clients: each has its own limit.
            second = other.post(f"{proxied.site}/api/search", json=SEARCH)
            # A hop the reader prepends is not believed: nginx appended the real one (127.0.0.2).
            spoofed = one.post(
                f"{proxied.site}/api/search", json=SEARCH, headers={"X-Forwarded-For": "203.0.113.9"}
            )
    assert first.status_code == second.status_code == 200
    assert spoofed.status_code == 429 and spoofed.json()["error"]["code"] == "rate_limited"


def test_nginx_not_in_trusted_proxies_is_one_client_on_http(tmp_path: Path) -> None:
    """Without BOOKWISE_TRUSTED_PROXIES nginx's headers are ignored: every reader is nginx's address
    (one rate limit for all) and the scheme stays http, so the HTTPS page is a foreign origin."""
    settings = book(tmp_path, rate_limit_per_minute=1)
    with behind_nginx(tmp_path, settings) as proxied:
        with proxied.client("127.0.0.2") as one, proxied.client("127.0.0.3") as other:
            away_from_a_minute_boundary()
            refused = one.post(f"{proxied.site}/api/search", json=SEARCH, headers={"Origin": proxied.site})
            first = one.post(f"{proxied.site}/api/search", json=SEARCH)
            second = other.post(f"{proxied.site}/api/search", json=SEARCH)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "origin_not_allowed"
    assert first.status_code == 200
    assert second.status_code == 429 and second.json()["error"]["code"] == "rate_limited"


def test_spoofed_forwarded_headers_from_an_untrusted_direct_peer_are_ignored(tmp_path: Path) -> None:
    """nginx (127.0.0.1) is trusted; a reader reaching the API directly from 127.0.0.4 is not, so its
    X-Forwarded-For and X-Forwarded-Proto change neither its address nor its scheme."""
    settings = book(tmp_path, trusted_proxies=["127.0.0.1"], rate_limit_per_minute=1)
    with behind_nginx(tmp_path, settings) as proxied:
        https_self = proxied.api.replace("http://", "https://")
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.4"), timeout=10) as direct:
            away_from_a_minute_boundary()
            spoofed_scheme = direct.post(
                f"{proxied.api}/api/search",
                json=SEARCH,
                headers={"Origin": https_self, "X-Forwarded-Proto": "https"},
            )
            first = direct.post(
                f"{proxied.api}/api/search", json=SEARCH, headers={"X-Forwarded-For": "203.0.113.1"}
            )
            second = direct.post(
                f"{proxied.api}/api/search", json=SEARCH, headers={"X-Forwarded-For": "203.0.113.2"}
            )
        with proxied.client("127.0.0.4") as through_nginx:  # the same reader, through nginx: its own limit
            proxied_first = through_nginx.post(f"{proxied.site}/api/search", json=SEARCH)
    assert (
        spoofed_scheme.status_code == 403 and spoofed_scheme.json()["error"]["code"] == "origin_not_allowed"
    )
    assert first.status_code == 200
    assert second.status_code == 429 and second.json()["error"]["code"] == "rate_limited"
    assert proxied_first.status_code == 429  # nginx named 127.0.0.4, already limited: the same client
