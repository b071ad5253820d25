"""The MCP surface held to the API's limits: no endless GET event stream on /mcp, a bounded and paged
`contents` built off the event loop, and `search` refusing what `POST /api/search` refuses."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from mcp import Client

import local_http
from apiserver import build_book, hash_settings, ingest_hashed, running_api
from bookwise.api.mcp import BookTools, ContentsLimits, Edition, build_mcp_server
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from bookwise.validation import RequestLimits

MODULES, CHAPTERS, PER_CHAPTER = 4, 5, 100  # 2,000 pages: enough to page through many answers
MAX_BYTES = 16_384  # the smallest bound the setting allows: many answers, each checked against it
LONG_PAGE_HEADINGS = 600  # one page whose headings alone pass the bound


def write_large_book(site: Path) -> list[str]:
    """A generated book of modules → chapters → pages; the pages' URLs in reading order."""
    urls = []
    for m in range(MODULES):
        module = site / "docs" / f"part-{m}"
        module.mkdir(parents=True)
        (module / "_category_.json").write_text(json.dumps({"label": f"Part {m}", "position": m + 1}))
        for c in range(CHAPTERS):
            chapter = module / f"chapter-{c}"
            chapter.mkdir()
            (chapter / "_category_.json").write_text(json.dumps({"label": f"Chapter {m}.{c}"}))
            for p in range(PER_CHAPTER):
                (chapter / f"page-{p:03d}.md").write_text(
                    f"---\ntitle: Page {m}.{c}.{p}\nsidebar_position: {m * 1000 + c * 100 + p}\n"
                    f"description: What page {m}.{c}.{p} says about wombat {p} burrows.\n---\n\n"
                    f"Wombats dig burrow number {p} in part {m}.\n\n"
                    f"## Digging {p}\n\nClaws and patience.\n\n## Resting {p}\n\nIn the shade.\n",
                    encoding="utf-8",
                )
                urls.append(f"/docs/part-{m}/chapter-{c}/page-{p:03d}")
    headings = "".join(f"## Tunnel {n}\n\nSoil {n}.\n\n" for n in range(LONG_PAGE_HEADINGS))
    (site / "docs" / "part-0" / "chapter-0" / "page-000.md").write_text(
        "---\ntitle: Page 0.0.0\nsidebar_position: 0\n---\n\nThe longest page.\n\n" + headings,
        encoding="utf-8",
    )
    return urls


@pytest.fixture(scope="module")
def large_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, list[str]]:
    root = tmp_path_factory.mktemp("large-book")
    settings = hash_settings(
        root / "data", mcp_contents_max_bytes=MAX_BYTES, mcp_contents_max_pages=150, book_title="Wombats"
    )
    urls = write_large_book(root / "site")
    ingest_hashed(settings, root / "site")
    return settings, urls


class RecordingTools(BookTools):
    """BookTools that note where and how often the book was built."""

    def __init__(self, retriever: Retriever, settings: Settings) -> None:
        async def opened() -> Retriever:
            return retriever

        super().__init__(
            opened, RequestLimits.from_settings(settings), contents=ContentsLimits.from_settings(settings)
        )
        self.built_on: list[threading.Thread] = []

    def _build(self, retriever: Retriever) -> Edition:
        self.built_on.append(threading.current_thread())
        return super()._build(retriever)


@pytest.fixture
def tools(large_book: tuple[Settings, list[str]]) -> Iterator[RecordingTools]:
    retriever = Retriever.open(large_book[0])
    try:
        yield RecordingTools(retriever, large_book[0])
    finally:
        retriever.close()


def run_session(tools: BookTools, session: Any) -> None:
    async def run() -> None:
        async with Client(build_mcp_server("Wombats", tools)) as client:
            await session(client)

    anyio.run(run)


async def answer(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refusal(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return str(getattr(result.content[0], "text", ""))


def listed(toc: dict[str, Any]) -> list[dict[str, Any]]:
    return [page for m in toc["modules"] for c in m["chapters"] for page in c["pages"]]


async def every_part(client: Client, **arguments: Any) -> list[dict[str, Any]]:
    """Every answer of a listing, following `next_cursor` to the end."""
    parts = [await answer(client, "contents", arguments)]
    while parts[-1]["next_cursor"] is not None:
        assert len(parts) < 500, "the cursor does not advance"
        parts.append(await answer(client, "contents", {**arguments, "cursor": parts[-1]["next_cursor"]}))
    return parts


def test_contents_of_a_large_book_is_paged_and_bounded(
    tools: RecordingTools, large_book: tuple[Settings, list[str]]
) -> None:
    """Regression: `contents` answered the whole table at once (27 MB for 20,000 pages)."""
    _, urls = large_book

    async def session(client: Client) -> None:
        parts = await every_part(client)
        assert len(parts) > 10
        for part in parts:
            assert len(json.dumps(part, ensure_ascii=False, separators=(",", ":")).encode()) <= MAX_BYTES
            assert 1 <= len(listed(part)) <= 150 and part["total_pages"] == len(urls)
        pages = [page for part in parts for page in listed(part)]
        assert [page["url"] for page in pages] == urls  # all of them, once, in reading order
        longest = pages[0]
        assert longest["headings_truncated"] is True and 0 < len(longest["headings"]) < LONG_PAGE_HEADINGS
        assert pages[1]["headings"] and "headings_truncated" not in pages[1]

        seven = await answer(client, "contents", {"limit": 7, "module": "Part 2"})
        assert [p["url"] for p in listed(seven)] == [u for u in urls if "/part-2/" in u][:7]
        chapter = await every_part(client, module="Part 3", chapter="Chapter 3.4")
        assert [p["url"] for part in chapter for p in listed(part)] == [
            u for u in urls if "/part-3/chapter-4/" in u
        ]

    run_session(tools, session)
    assert len(tools.built_on) == 1  # once for the generation, however many calls


def test_contents_bad_cursor_or_limit_is_refused(tools: RecordingTools) -> None:
    async def session(client: Client) -> None:
        for limit in (0, 151, "5", True, 2.5):
            assert "invalid_request: limit must be an integer between 1 and 150" in await refusal(
                client, "contents", {"limit": limit}
            )
        for cursor in ("nonsense", "12", "-3@x", "12@another-generation"):
            assert "invalid_request" in await refusal(client, "contents", {"cursor": cursor})

    run_session(tools, session)


def test_contents_cursor_of_an_earlier_generation_is_refused(tmp_path: Path) -> None:
    """A cursor counts pages of one generation: after a re-ingest it would skip or repeat pages."""
    settings = build_book(tmp_path, mcp_contents_max_pages=1)
    retriever = Retriever.open(settings)
    tools = RecordingTools(retriever, settings)

    async def session(client: Client) -> None:
        first = await answer(client, "contents", {})
        assert first["next_cursor"] is not None
        page = tmp_path / "site" / "docs" / "care" / "grooming.md"
        page.write_text("# Grooming\n\nBrush the quokka's fur weekly.\n", encoding="utf-8")
        await anyio.to_thread.run_sync(ingest_hashed, settings, tmp_path / "site")
        text = await refusal(client, "contents", {"cursor": first["next_cursor"]})
        assert "re-indexed" in text
        assert (await answer(client, "contents", {}))["total_pages"] == first["total_pages"] + 1

    try:
        run_session(tools, session)
    finally:
        retriever.close()


def test_concurrent_contents_share_one_build_off_the_event_loop(tools: RecordingTools) -> None:
    """Regression: five concurrent first calls on a large book stalled every other request."""
    loop_thread: list[threading.Thread] = []
    totals: list[int] = []

    async def one(client: Client) -> None:
        totals.append((await answer(client, "contents", {}))["total_pages"])

    async def session(client: Client) -> None:
        loop_thread.append(threading.current_thread())
        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(one, client)

    run_session(tools, session)
    assert len(totals) == 5 and len(set(totals)) == 1
    assert len(tools.built_on) == 1 and tools.built_on[0] is not loop_thread[0]


def test_health_answers_while_large_contents_calls_run(large_book: tuple[Settings, list[str]]) -> None:
    """Over HTTP on a real uvicorn: five first `contents` calls at once, and /api/health still answers."""
    settings, urls = large_book
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "contents", "arguments": {}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with running_api(settings) as url:

        def contents(_: int) -> dict[str, Any]:
            response = local_http.post(f"{url}/mcp", json=body, headers=headers, timeout=120)
            assert response.status_code == 200, response.text
            data = next(line for line in response.text.splitlines() if line.startswith("data:"))
            return dict(json.loads(data[5:])["result"]["structuredContent"])

        with ThreadPoolExecutor(6) as pool:
            calls = [pool.submit(contents, n) for n in range(5)]
            health = [local_http.get(f"{url}/api/health", timeout=30).status_code for _ in range(5)]
            parts = [call.result() for call in calls]
    assert health == [200] * 5
    assert all(part["total_pages"] == len(urls) and listed(part) for part in parts)
    assert all(len(json.dumps(part).encode()) <= 2 * MAX_BYTES for part in parts)


@pytest.fixture(scope="module")
def small_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_api(build_book(tmp_path_factory.mktemp("mcp-limits"))) as url:
        yield url


def test_get_mcp_event_stream_is_refused_at_once(small_api: str) -> None:
    """Regression: `GET /mcp` opened an event stream that never ended, outside every limit."""
    with local_http.stream(
        "GET", f"{small_api}/mcp", headers={"Accept": "text/event-stream"}, timeout=10
    ) as response:
        body = json.loads(response.read())
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert body["error"]["code"] == "method_not_allowed"
    assert body["error"]["request_id"] == response.headers["x-request-id"]
    for method in ("HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"):
        other = local_http.request(method, f"{small_api}/mcp", timeout=10)
        assert other.status_code == 405 and other.headers["allow"] == "POST", method


def test_health_answers_while_many_get_mcp_are_attempted(small_api: str) -> None:
    """Many `GET /mcp` from several loopback addresses: each refused, and the API keeps answering."""
    addresses = [f"127.0.0.{n}" for n in range(1, 9)]
    clients = [
        httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10)
        for address in addresses
    ]

    def attempt(n: int) -> int:
        client = clients[n % len(clients)]
        # A connection of its own each time: a kept-alive one that sat idle past the server's
        # keep-alive timeout (a thread held up on a loaded machine) may be closed by the server just as
        # it is reused, a reset any HTTP client can meet, and no refusal of the server's.
        headers = {"Accept": "text/event-stream", "Connection": "close"}
        return client.get(f"{small_api}/mcp", headers=headers).status_code

    try:
        with ThreadPoolExecutor(16) as pool:
            statuses = pool.map(attempt, range(400))
            health = [local_http.get(f"{small_api}/api/health", timeout=10).status_code for _ in range(10)]
            refused = list(statuses)
    finally:
        for client in clients:
            client.close()
    assert refused == [405] * 400
    assert health == [200] * 10


def test_mcp_search_refuses_control_characters_like_the_api(small_api: str) -> None:
    """Regression: MCP `search` accepted "kalman \\u0000 gain", which `POST /api/search` refuses (422)."""
    rest = local_http.post(f"{small_api}/api/search", json={"query": "kalman \u0000 gain"}, timeout=10)
    assert rest.status_code == 422
    expected = rest.json()["error"]["message"]
    refusals: list[str] = []

    async def session(client: Client) -> None:
        refusals.append(await refusal(client, "search", {"query": "kalman \u0000 gain"}))
        refusals.append(await refusal(client, "search", {"query": "quokka", "module": "care\u0007"}))

    async def run() -> None:
        async with Client(f"{small_api}/mcp") as client:
            await session(client)

    anyio.run(run)
    assert f"invalid_request: {expected}" in refusals[0]
    assert "module contains a control character (U+0007)" in refusals[1]


def test_mcp_search_limit_is_not_coerced(small_api: str) -> None:
    """Regression: MCP coerced `limit` (true → 1, "5" → 5) where the API refuses `top_k`."""
    for top_k in (True, "5"):
        rest = local_http.post(
            f"{small_api}/api/search", json={"query": "quokka", "top_k": top_k}, timeout=10
        )
        assert rest.status_code == 422
    refusals: list[str] = []

    async def run() -> None:
        async with Client(f"{small_api}/mcp") as client:
            for limit in (True, "5", 2.0, [3]):
                refusals.append(await refusal(client, "search", {"query": "quokka", "limit": limit}))
            found = await answer(client, "search", {"query": "quokka", "limit": 2})
            assert 1 <= len(found["results"]) <= 2

    anyio.run(run)
    assert all("invalid_request: limit: Input should be a valid integer" in text for text in refusals), (
        refusals
    )
