"""The book's solutions to its exercises, hidden on the page behind "Show solution", stay held back
in what an agent or a source list is given: MCP ``read`` and ``search``, the API's source snippets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import local_http
from apiserver import build_book, ingest_hashed, running_api
from bookwise.api.mcp import BookTools, build_mcp_server
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import HELD_BACK
from bookwise.validation import RequestLimits

EXERCISES = """# Gains

## Exercises

1. A prediction has `P = 0.04` and a measurement `R = 0.01`. What is the quokka gain?
2. Why does the quokka variance not depend on the measurement?

<details>
<summary>Show solution</summary>

1. The quokka gain is `K = 0.04 / 0.05 = 0.8`, since the measurement is four times more certain.
2. The quokka variance depends only on the variances, never on the data.

</details>
"""
SOLUTION_WORDS = ("0.04 / 0.05", "four times more certain", "only on the variances")


def book_with_exercises(tmp_path: Path) -> Any:
    settings = build_book(tmp_path, book_title="Quokkas")
    (tmp_path / "site" / "docs" / "care" / "gains.md").write_text(EXERCISES, encoding="utf-8")
    ingest_hashed(settings, tmp_path / "site")
    return settings


def test_quiz_solution_is_held_back_in_mcp_read_and_search(tmp_path: Path) -> None:
    settings = book_with_exercises(tmp_path)
    retriever = Retriever.open(settings)

    async def opened() -> Retriever:
        return retriever

    server = build_mcp_server("Quokkas", BookTools(opened, RequestLimits.from_settings(settings)))
    read: dict[str, dict[str, Any]] = {}
    found: list[dict[str, Any]] = []

    async def session() -> None:
        async with Client(server) as client:
            for url in ("/docs/care/gains", "/docs/care/gains#exercises"):
                result = await client.call_tool("read", {"url": url})
                assert not result.is_error and result.structured_content is not None, result.content
                read[url] = result.structured_content
            result = await client.call_tool("search", {"query": "quokka gain four times more certain"})
            assert not result.is_error and result.structured_content is not None, result.content
            found.extend(result.structured_content["results"])

    try:
        anyio.run(session)
    finally:
        retriever.close()
    for url, answer in read.items():
        assert "What is the quokka gain?" in answer["markdown"] and HELD_BACK in answer["markdown"], url
        assert not any(words in answer["markdown"] for words in SOLUTION_WORDS), answer["markdown"]
    snippets = " ".join(r["snippet"] for r in found)
    assert not any(words in snippets for words in SOLUTION_WORDS), snippets


def test_quiz_solution_is_held_back_in_sources_snippets(tmp_path: Path) -> None:
    settings = book_with_exercises(tmp_path)
    with running_api(settings) as url:
        answer = local_http.post(f"{url}/api/search", json={"query": "quokka gain four times more certain"})
    assert answer.status_code == 200, answer.text
    sources = answer.json()["sources"]
    assert any(s["page_url"] == "/docs/care/gains" for s in sources)
    snippets = " ".join(s["snippet"] for s in sources)
    assert not any(words in snippets for words in SOLUTION_WORDS), snippets
