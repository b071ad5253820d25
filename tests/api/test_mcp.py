"""The MCP server, driven by the SDK's own client as an agent would: over stdio (spawning
`bookwise mcp`) and over streamable HTTP at /mcp on a real uvicorn API, on a small ingested book."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import local_http
from apiserver import build_book, hash_settings, ingest_hashed, running_api
from bookwise.api.mcp import BookTools, build_mcp_server
from bookwise.api.services import IndexHandle
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from bookwise.validation import RequestLimits
from docusite import FIXTURE_SITE, read_built_pages, unresolved
from examplesite import EXAMPLE_SITE, build_example, index_example
from servers import away_from_a_minute_boundary

BACKEND = Path(__file__).resolve().parents[2] / "backend"
TITLE = "Quokka Care"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return build_book(tmp_path_factory.mktemp("mcp"), book_title=TITLE)


@pytest.fixture(scope="module")
def api(book: Settings) -> Iterator[str]:
    with running_api(book) as url:
        yield url


def stdio_server(settings: Settings) -> StdioServerParameters:
    env = {
        "PYTHONPATH": str(BACKEND),
        "BOOKWISE_DATA_DIR": str(settings.data_dir),
        "BOOKWISE_EMBEDDING_PROVIDER": "hash",
        "BOOKWISE_SUFFICIENCY_THRESHOLD": "0",
        "BOOKWISE_BOOK_TITLE": TITLE,
        "PATH": os.environ.get("PATH", ""),
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "bookwise.cli", "mcp"], env=env, cwd=str(settings.data_dir)
    )


def with_client(target: Any, session: Callable[[Client], Awaitable[None]]) -> None:
    async def run() -> None:
        async with Client(target) as client:
            await session(client)

    anyio.run(run)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0]
    return str(getattr(text, "text", ""))


async def every_tool(client: Client) -> None:
    """The three tools on the book, and their refusals: shared by both transports."""
    assert TITLE in (client.instructions or "") and "url#anchor" in (client.instructions or "")
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search", "read", "contents"}
    assert all(TITLE in (tool.description or "") for tool in tools.values())

    found = await call(client, "search", {"query": "peppermint leaves", "limit": 3})
    first = found["results"][0]
    assert "link" not in first  # the test book's site has no `url`: links stay site-relative
    assert first["url"] == "/docs/care/feeding#morning-feed"
    assert first["breadcrumb"] == ["Feeding quokkas"] and "peppermint" in first["snippet"]
    assert found["covered"] is True and len(found["results"]) <= 3

    section = await call(client, "read", {"url": first["url"]})
    assert section["kind"] == "section" and section["page_url"] == "/docs/care/feeding"
    assert section["heading_path"] == ["Feeding quokkas", "Morning feed"]
    assert section["markdown"].startswith("## Morning feed\n\nQuokkas eat leaves of the peppermint")
    assert section["previous"] is None
    assert section["next"] == {"heading": "Evening feed", "url": "/docs/care/feeding#evening-feed"}

    page = await call(client, "read", {"url": "http://docs.example/docs/care/feeding/"})
    assert page["kind"] == "page" and page["url"] == "/docs/care/feeding"
    assert page["markdown"].startswith("# Feeding quokkas\n\n## Morning feed")
    assert "## Evening feed\n\nIn the evening" in page["markdown"]
    assert [s["url"] for s in page["sections"]] == [
        "/docs/care/feeding#morning-feed",
        "/docs/care/feeding#evening-feed",
    ]

    toc = await call(client, "contents", {})
    care = next(m for m in toc["modules"] if m["module"] == "Care")
    pages = {p["url"]: p for chapter in care["chapters"] for p in chapter["pages"]}
    assert set(pages) == {"/docs/care/feeding", "/docs/care/housing"}
    assert [h["url"] for h in pages["/docs/care/housing"]["headings"]] == [
        "/docs/care/housing#burrows",
        "/docs/care/housing#injected-note",
    ]
    only = await call(client, "contents", {"module": "Care"})
    assert [m["module"] for m in only["modules"]] == ["Care"]

    # Bad arguments: tool errors naming the problem, and the server keeps serving.
    assert "query is empty" in await refused(client, "search", {"query": "   "})
    assert "limit: Input should be greater than or equal to 1" in await refused(
        client, "search", {"query": "quokka", "limit": 0}
    )
    assert "top_k must be between" in await refused(client, "search", {"query": "quokka", "limit": 99})
    assert "too long" in await refused(client, "search", {"query": "q" * 5000})
    assert "url" in await refused(client, "read", {"url": 5})
    assert "no page of this book" in await refused(client, "read", {"url": "/docs/nowhere"})
    assert "no section #nope" in await refused(client, "read", {"url": "/docs/care/feeding#nope"})
    assert "no module 'Cooking'" in await refused(client, "contents", {"module": "Cooking"})
    assert "Unknown tool" in await refused(client, "delete_book", {})
    assert (await call(client, "search", {"query": "burrow", "module": "Care"}))["results"]


def test_every_tool_over_stdio(book: Settings) -> None:
    with_client(stdio_server(book), every_tool)


def test_every_tool_over_streamable_http(api: str) -> None:
    with_client(f"{api}/mcp", every_tool)


def test_search_cites_what_the_api_cites(api: str) -> None:
    queries = ("peppermint leaves", "where do quokkas sleep", "evening grasses")
    seen: dict[str, list[str]] = {}

    async def search_all(client: Client) -> None:
        for query in queries:
            found = await call(client, "search", {"query": query, "limit": 5})
            seen[query] = [result["url"] for result in found["results"]]

    with_client(f"{api}/mcp", search_all)
    for query in queries:
        body = {"query": query, "top_k": 5}
        expected = [s["url"] for s in local_http.post(f"{api}/api/search", json=body).json()["sources"]]
        assert seen[query] == expected and expected


def test_mcp_refuses_a_host_not_allowed(api: str) -> None:
    response = local_http.post(
        f"{api}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example:8000"}
    )
    assert response.status_code == 421
    assert response.json()["error"]["code"] == "host_not_allowed"


def test_mcp_refuses_a_foreign_origin(api: str) -> None:
    response = local_http.post(
        f"{api}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"}
    )
    assert response.status_code == 403


def test_mcp_answers_a_plain_json_rpc_client(api: str) -> None:
    response = local_http.post(f"{api}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    events = [line for line in response.text.splitlines() if line.startswith("data:")]
    assert json.loads(events[0][5:])["result"]["serverInfo"]["name"].startswith(TITLE)


def test_mcp_is_rate_limited(tmp_path: Path) -> None:
    settings = build_book(tmp_path, rate_limit_per_minute=2)
    with running_api(settings) as url:
        away_from_a_minute_boundary()
        statuses = [
            local_http.post(f"{url}/mcp", json=INITIALIZE, headers=MCP_HEADERS).status_code for _ in range(3)
        ]
    assert statuses[:2] == [200, 200] and statuses[2] == 429


def test_mcp_body_size_is_capped(tmp_path: Path) -> None:
    settings = build_book(tmp_path, max_body_bytes=2048)
    big = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 4096}}
    body = json.dumps(big).encode()

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted while it is read
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    with running_api(settings) as url:
        declared = local_http.post(f"{url}/mcp", json=big, headers=MCP_HEADERS)
        streamed = local_http.post(f"{url}/mcp", content=chunked(), headers=MCP_HEADERS)
    assert declared.status_code == 413 and streamed.status_code == 413
    assert streamed.json()["error"]["code"] == "payload_too_large"


def test_contents_and_read_follow_a_reingest(tmp_path: Path) -> None:
    settings = build_book(tmp_path, book_title=TITLE)
    retriever = Retriever.open(settings)

    async def opened() -> Retriever:
        return retriever

    server = build_mcp_server(TITLE, BookTools(opened, RequestLimits.from_settings(settings)))

    async def pages(client: Client) -> set[str]:
        toc = await call(client, "contents", {})
        return {p["url"] for m in toc["modules"] for c in m["chapters"] for p in c["pages"]}

    async def session(client: Client) -> None:
        assert "/docs/care/grooming" not in await pages(client)
        page = tmp_path / "site" / "docs" / "care" / "grooming.md"
        page.write_text("# Grooming\n\n## Brushing\n\nBrush the quokka's fur weekly.\n", encoding="utf-8")
        await anyio.to_thread.run_sync(ingest_hashed, settings, tmp_path / "site")
        assert "/docs/care/grooming" in await pages(client)
        section = await call(client, "read", {"url": "/docs/care/grooming#brushing"})
        assert "Brush the quokka's fur weekly." in section["markdown"]

    try:
        with_client(server, session)
    finally:
        retriever.close()


def test_no_index_yet_is_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    settings = build_book(tmp_path).model_copy(update={"data_dir": tmp_path / "empty"})
    index = IndexHandle(opener=lambda: Retriever.open(settings))
    server = build_mcp_server(TITLE, BookTools(index.get, RequestLimits.from_settings(settings)))

    async def session(client: Client) -> None:
        for tool, arguments in (
            ("search", {"query": "quokka"}),
            ("read", {"url": "/docs/intro"}),
            ("contents", {}),
        ):
            assert "index_not_found" in await refused(client, tool, arguments)
        assert len((await client.list_tools()).tools) == 3  # still serving

    with_client(server, session)


def test_browser_clients_may_read_the_mcp_session_header(tmp_path: Path) -> None:
    site = "https://docs.example.org"
    settings = build_book(tmp_path, allowed_origins=[site])
    with running_api(settings) as url:
        response = local_http.post(f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": site})
        preflight = local_http.options(
            f"{url}/mcp",
            headers={
                "Origin": site,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, mcp-session-id, mcp-protocol-version",
            },
        )
    assert response.status_code == 200
    assert "mcp-session-id" in response.headers["access-control-expose-headers"].lower()
    assert preflight.status_code == 200, preflight.text


def fixture_site_server(tmp_path: Path) -> tuple[Any, Retriever]:
    """An in-process MCP server over the Docusaurus fixture site, and the retriever to close after."""
    settings = hash_settings(tmp_path / "data")
    ingest_hashed(settings, FIXTURE_SITE)
    retriever = Retriever.open(settings)

    async def opened() -> Retriever:
        return retriever

    server = build_mcp_server(TITLE, BookTools(opened, RequestLimits.from_settings(settings)))
    return server, retriever


def test_every_url_of_the_fixture_site_reads_back(tmp_path: Path) -> None:
    """The Docusaurus fixture (slugs, numbered folders, partials, tabs, an unlisted page): every page
    and heading the contents list, and every search result, reads back at its own URL."""
    server, retriever = fixture_site_server(tmp_path)

    async def session(client: Client) -> None:
        toc = await call(client, "contents", {})
        pages = [p for m in toc["modules"] for c in m["chapters"] for p in c["pages"]]
        assert len(pages) > 20 and all("unlisted" not in p["url"].lower() for p in pages)
        for page in pages:
            read = await call(client, "read", {"url": page["url"]})
            assert read["kind"] == "page" and read["url"] == page["url"] and read["markdown"]
            for heading in page["headings"]:
                section = await call(client, "read", {"url": heading["url"]})
                assert section["url"] == heading["url"] and section["page_url"] == page["url"]
        for query in ("install", "tabs", "client api", "lesson"):
            for result in (await call(client, "search", {"query": query}))["results"]:
                # Absolute links from the site's `url` (https://example.test); the path has its baseUrl.
                assert result["link"] == "https://example.test" + result["url"]
                read = await call(client, "read", {"url": result["link"]})
                assert read["url"] == result["url"] and read["link"] == result["link"]

    try:
        with_client(server, session)
    finally:
        retriever.close()


def test_read_finds_a_page_whose_url_has_a_space(tmp_path: Path) -> None:
    """Regression: pages were keyed by their percent-encoded URL but looked up decoded."""
    server, retriever = fixture_site_server(tmp_path)

    async def session(client: Client) -> None:
        for url in ("/mysite/docs/misc/doc%20with%20space", "/mysite/docs/misc/doc with space"):
            assert (await call(client, "read", {"url": url}))["url"] == "/mysite/docs/misc/doc%20with%20space"

    try:
        with_client(server, session)
    finally:
        retriever.close()


LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def test_read_links_to_site_pages_not_to_source_files(tmp_path: Path) -> None:
    """Regression: `read` gave the chunks' Markdown with the source's links between doc files
    (`../01-foundations/02-differential-drive.mdx#…`), which an agent cannot open. They are the
    pages' URLs now (absolute, from the site's `url`), anchors kept; code is left as written."""
    settings = hash_settings(tmp_path / "data")
    ingest_hashed(settings, EXAMPLE_SITE)
    retriever = Retriever.open(settings)

    async def opened() -> Retriever:
        return retriever

    server = build_mcp_server(TITLE, BookTools(opened, RequestLimits.from_settings(settings)))
    origin = "http://127.0.0.1:8000"  # the example's `url`

    async def session(client: Client) -> None:
        toc = await call(client, "contents", {})
        pages = [p["url"] for m in toc["modules"] for c in m["chapters"] for p in c["pages"]]
        targets: list[str] = []
        for url in pages:
            read = await call(client, "read", {"url": url})
            targets += [m["target"] for m in LINK.finditer(read["markdown"])]
        assert not [t for t in targets if re.search(r"\.mdx?(#|$)", t)]
        pid = (await call(client, "read", {"url": "/docs/control/pid-control"}))["markdown"]
        assert f"[differential drive]({origin}/docs/foundations/differential-drive)" in pid
        assert f"[tuning by hand]({origin}/docs/control/lab-tuning#manual-tuning)" in pid
        for target in targets:
            if target.startswith(origin):
                page, _, anchor = target[len(origin) :].partition("#")
                assert page in pages
                if anchor:
                    read = await call(client, "read", {"url": target})
                    assert read["kind"] == "section"

    try:
        with_client(server, session)
    finally:
        retriever.close()


@pytest.mark.docusaurus
def test_every_link_read_gives_opens_a_page_of_the_real_build(tmp_path: Path) -> None:
    """The relinked Markdown of every page names built pages and their elements."""
    build_dir = build_example()
    settings, report = index_example(tmp_path / "data", build_dir)
    assert report.errors == []
    retriever = Retriever.open(settings)

    async def opened() -> Retriever:
        return retriever

    server = build_mcp_server(TITLE, BookTools(opened, RequestLimits.from_settings(settings)))
    links: list[str] = []

    async def session(client: Client) -> None:
        toc = await call(client, "contents", {})
        for page in (p for m in toc["modules"] for c in m["chapters"] for p in c["pages"]):
            markdown = (await call(client, "read", {"url": page["url"]}))["markdown"]
            links.extend(match["target"] for match in LINK.finditer(markdown))

    try:
        with_client(server, session)
    finally:
        retriever.close()
    origin = "http://127.0.0.1:8000"  # the example's `url`
    internal = [link[len(origin) :] for link in links if link.startswith(origin + "/")]
    assert len(internal) >= 10
    assert unresolved(internal, read_built_pages(build_dir)) == []
