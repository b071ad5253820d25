"""On the example textbook, every `url#anchor` the MCP tools give an agent
(search results, the table of contents, a section's neighbours) names a page and an element of the
real Docusaurus build, through the same link audit as the index's citations."""

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from bookwise.api.mcp import BookTools, build_mcp_server
from bookwise.retrieval.retriever import Retriever
from bookwise.validation import RequestLimits
from docusite import read_built_pages, unresolved
from examplesite import build_example, index_example

pytestmark = pytest.mark.docusaurus

QUERIES = ("Kalman gain", "differential drive odometry", "integral windup", "pure pursuit lookahead")


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def _agent_urls(retriever: Retriever, limits: RequestLimits) -> list[str]:
    """Every URL an agent is handed when it lists the book, searches it and reads what it found."""

    async def opened() -> Retriever:
        return retriever

    server = build_mcp_server("Robot Motion", BookTools(opened, limits))
    urls: list[str] = []

    async def session() -> None:
        async with Client(server) as client:
            cursor: str | None = None
            while True:  # the table of contents comes in parts
                toc = await _call(client, "contents", {"cursor": cursor} if cursor else {})
                for module in toc["modules"]:
                    for chapter in module["chapters"]:
                        for page in chapter["pages"]:
                            urls.append(page["url"])
                            urls.extend(heading["url"] for heading in page["headings"])
                cursor = toc["next_cursor"]
                if cursor is None:
                    break
            for query in QUERIES:
                for result in (await _call(client, "search", {"query": query}))["results"]:
                    urls.append(result["url"])
                    section = await _call(client, "read", {"url": result["url"]})
                    urls.extend(s["url"] for s in (section.get("previous"), section.get("next")) if s)

    anyio.run(session)
    return urls


def test_every_url_the_mcp_tools_give_resolves_in_the_real_build(tmp_path: Path) -> None:
    build_dir = build_example()
    settings, report = index_example(tmp_path / "data", build_dir)
    assert report.errors == []
    retriever = Retriever.open(settings)
    try:
        urls = _agent_urls(retriever, RequestLimits.from_settings(settings))
    finally:
        retriever.close()
    assert len({u for u in urls if "#" in u}) >= 40  # headings, not only pages
    assert unresolved(urls, read_built_pages(build_dir)) == []
