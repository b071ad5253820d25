"""Hostile requests on a real server: one reader's bad input is refused or fails alone, and every
other reader is served as if nothing happened."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import local_http
from apiserver import BOOK, chat, hash_settings, ingest_hashed
from bookwise.api.app import create_app
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.retrieval.retriever import Retriever
from servers import serve_in_thread

QUERY = "What do quokkas eat in the morning?"
# Author content that is markup, not text, and links that leave the site (docs served at `/`).
HOSTILE_SITE = {
    "docusaurus.config.js": "module.exports = {url: 'https://docs.example.org', baseUrl: '/', "
    "presets: [['classic', {docs: {routeBasePath: '/'}}]]};\n",
    "docs/wombats/_category_.json": '{"label": "<script>alert(1)</script>Wombat <b>care</b> &amp; co"}',
    "docs/wombats/digging/_category_.json": '{"label": "<img src=x onerror=alert(1)>Digging"}',
    "docs/wombats/digging/burrows.md": (
        '---\ntitle: "<img src=x onerror=alert(1)>Wombat &amp; burrows"\nslug: "/\\\\evil.example/x"\n---\n\n'
        '## <b>Bold</b> wombat claws &amp; more {#"><svg onload=alert(1)>}\n\n'
        "Wombats dig burrows with strong claws.\n\n"
        "## The `<select>` wombat element\n\nWombats select their burrows with care.\n"
    ),
    "docs/wombats/diet.md": (
        '---\nslug: "//evil.example/y"\n---\n\n## Wombat diet\n\nWombats dig for grass roots.\n'
    ),
}


class _PoisonableEmbedder(HashEmbedder):
    """Fails any batch that holds the poison word, as the tokenizer failed any batch holding a lone
    surrogate; a little slow, so concurrent searches queue up and share rounds."""

    POISON = "zyzzogeton"

    def __init__(self) -> None:
        super().__init__()
        self.rounds: list[tuple[int, bool]] = []  # (size, poisoned) of every call
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        poisoned = any(self.POISON in text for text in texts)
        with self._lock:
            self.rounds.append((len(texts), poisoned))
        time.sleep(0.01)
        if poisoned:
            raise ValueError("the model cannot take this text")
        return super().embed_documents(texts)


@pytest.fixture(scope="module")
def embedder() -> _PoisonableEmbedder:
    return _PoisonableEmbedder()


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, embedder: _PoisonableEmbedder) -> Iterator[str]:
    """The book served by the real app, its retriever on the poisonable embedder."""
    root = tmp_path_factory.mktemp("hostile")
    settings = hash_settings(root / "data")
    for relative, content in {**BOOK, **HOSTILE_SITE}.items():
        (root / "site" / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / "site" / relative).write_text(content, encoding="utf-8")
    ingest_hashed(settings, root / "site")
    store = open_store(settings)
    retriever = Retriever(settings, store.open_reader(), embedder)
    try:
        with serve_in_thread(create_app(settings, retriever=retriever)) as running:
            yield running
    finally:
        retriever.close()
        store.close()


def assert_invalid(response: httpx.Response, field: str) -> str:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["request_id"] == response.headers["x-request-id"]
    assert error["message"].startswith(f"{field} contains "), error["message"]
    return str(error["message"])


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/search", {"query": "odometry \ud800"}, "query"),
        (
            "/api/search",
            {"query": "odometry", "filters": {"module": ["Care", "x\udfff"]}},
            "filters.module[1]",
        ),
        ("/api/chat", {"question": "odometry \ud800"}, "question"),
        (
            "/api/chat",
            {"question": "What is this?", "mode": "selected_text", "selected_text": "quokka \ud800"},
            "selected_text",
        ),
        (
            "/api/chat",
            {
                "question": "and then?",
                "history": [{"role": "user", "content": "fine"}, {"role": "user", "content": "\ud800"}],
            },
            "history[1].content",
        ),
        ("/api/chat", {"question": "odometry", "page": {"url": "/docs/\ud800"}}, "page.url"),
        ("/api/feedback", {"request_id": "abc", "rating": "up", "comment": "\udc00"}, "comment"),
    ],
)
def test_lone_surrogate_anywhere_in_a_request_is_refused_naming_the_field(
    url: str, path: str, body: dict[str, Any], field: str
) -> None:
    # json.dumps escapes the surrogate as `\ud800`, as a hostile client would send it.
    response = local_http.post(
        f"{url}{path}", content=json.dumps(body), headers={"content-type": "application/json"}
    )
    assert "lone surrogate" in assert_invalid(response, field)
    assert local_http.post(f"{url}/api/search", json={"query": QUERY}).status_code == 200  # serving goes on


def test_raw_surrogate_bytes_in_the_body_are_refused_like_the_escaped_form(url: str) -> None:
    # ED A0 80 is U+D800 "encoded" as UTF-8 (CESU-8); Python's JSON parser lets it through as '\ud800'.
    raw = b'{"query": "odometry \xed\xa0\x80"}'
    response = local_http.post(f"{url}/api/search", content=raw, headers={"content-type": "application/json"})
    assert "U+D800" in assert_invalid(response, "query")
    assert local_http.post(f"{url}/api/search", json={"query": QUERY}).status_code == 200


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x08"])
def test_control_characters_in_a_question_are_refused(url: str, char: str) -> None:
    response = local_http.post(f"{url}/api/chat", json={"question": f"quokka{char}food"})
    assert "control character" in assert_invalid(response, "question")


def test_tabs_and_line_breaks_are_text(url: str) -> None:
    response = local_http.post(f"{url}/api/search", json={"query": "quokkas\teat\r\nin the morning"})
    assert response.status_code == 200 and response.json()["sources"]


def test_lone_surrogate_in_one_search_does_not_fail_its_batch_neighbours(
    url: str, embedder: _PoisonableEmbedder
) -> None:
    """Was: 154 of 200 normal searches failed beside 3 bad ones (one failed round failed all its
    queries). Now surrogates are refused before any work, and a query that still breaks the model
    fails alone: its round is retried query by query."""
    embedder.rounds.clear()
    # Which queries share a round depends on timing: bursts are repeated (with fresh queries, never
    # cached) until a poisoned round held normal queries, the case the retry exists for.
    for burst in range(8):
        search_beside_poison(url, burst)
        if any(size > 1 and poisoned for size, poisoned in embedder.rounds):
            break
    assert any(size > 1 and poisoned for size, poisoned in embedder.rounds)


def search_beside_poison(url: str, burst: int) -> None:
    normal = [{"query": f"{QUERY} {burst}.{n}"} for n in range(30)]
    surrogates = [{"query": f"odometry {burst}.{n} \ud800"} for n in range(3)]
    poisons = [{"query": f"{_PoisonableEmbedder.POISON} {burst}.{n}"} for n in range(3)]
    bodies = normal[:10] + surrogates + poisons[:1] + normal[10:20] + poisons[1:] + normal[20:]
    with local_http.client(timeout=30) as client:

        def post(body: dict[str, Any]) -> httpx.Response:
            return client.post(
                f"{url}/api/search", content=json.dumps(body), headers={"content-type": "application/json"}
            )

        with ThreadPoolExecutor(max_workers=16) as pool:
            responses = list(pool.map(post, bodies))
        by_query = {body["query"]: response for body, response in zip(bodies, responses, strict=True)}
        assert [by_query[b["query"]].status_code for b in normal] == [200] * len(normal)
        for body in surrogates:
            assert_invalid(by_query[body["query"]], "query")
        for body in poisons:
            failed = by_query[body["query"]]
            assert failed.status_code == 503 and failed.json()["error"]["code"] == "embedding_failed"
        assert post({"query": QUERY}).status_code == 200  # serving goes on


CLEAN_URL = re.compile(r"^/(?![/\\\\])[A-Za-z0-9\-._~!$&*+,;=:@/%]*(#[A-Za-z0-9\-._~!$&*+,;=:@/%?]+)?$")
TEXT_FIELDS = ("title", "heading", "heading_text", "module", "chapter")


def assert_clean_source(source: dict[str, Any]) -> None:
    for name in ("url", "page_url"):
        assert CLEAN_URL.match(source[name]), (name, source[name])
    assert source["url"].split("#")[0] == source["page_url"]
    texts = [str(source[name] or "") for name in TEXT_FIELDS] + source["breadcrumb"]
    for text in texts:
        assert not re.search(r"<(script|img|svg|b)\b|onerror|onload|&amp;", text, re.I), text


def test_raw_author_html_and_off_site_urls_never_reach_search_results(url: str) -> None:
    """Was: titles, headings, modules and chapters carried raw HTML, a URL was `/\\evil.example/x`
    (another site, to a browser) and an anchor `"><svg onload=…>`."""
    response = local_http.post(
        f"{url}/api/search", json={"query": "wombat burrows claws diet select", "top_k": 10}
    )
    assert response.status_code == 200
    sources = response.json()["sources"]
    by_heading = {source["heading_text"]: source for source in sources}
    for source in sources:
        assert_clean_source(source)
    claws = by_heading["Bold wombat claws & more"]
    assert claws["title"] == "Wombat & burrows" and claws["breadcrumb"][0] == "Wombat & burrows"
    assert claws["module"] == "Wombat care & co" and claws["chapter"] == "Digging"
    assert claws["page_url"] == "/evil.example/x"  # a path of this site, not a host
    assert claws["url"] == "/evil.example/x#%22%3E%3Csvg%20onload=alert%281%29%3E"
    assert claws["anchor"] == "%22%3E%3Csvg%20onload=alert%281%29%3E"
    select = by_heading["The <select> wombat element"]  # inline code is text, kept as written
    assert select["heading"] == "The `<select>` wombat element"
    assert by_heading["Wombat diet"]["page_url"] == "/evil.example/y"


def test_raw_author_html_never_reaches_the_sources_of_an_answer(url: str) -> None:
    stream = chat(url, {"question": "How do wombats dig burrows with claws?"})
    assert stream.names()[-1] == "done"
    for source in stream.first("sources")["sources"]:
        assert_clean_source(source)
