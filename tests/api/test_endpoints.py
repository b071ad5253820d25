"""Search, feedback, health, readiness and the widget path, on a real server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import local_http
from apiserver import build_book, chat, running_api
from bookwise import __version__
from bookwise.api.app import create_app
from bookwise.settings import Settings


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings]]:
    settings = build_book(tmp_path_factory.mktemp("endpoints"))
    with running_api(settings) as url:
        yield url, settings


def test_search_returns_the_same_source_objects_and_sufficiency(served: tuple[str, Settings]) -> None:
    url, _ = served
    response = local_http.post(
        f"{url}/api/search", json={"query": "what do quokkas eat in the evening", "top_k": 3}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["sufficient_context"] is True and body["request_id"] == response.headers["x-request-id"]
    assert [s["n"] for s in body["sources"]] == [1, 2, 3]
    top = body["sources"][0]
    assert top["url"] == "/docs/care/feeding#evening-feed" and top["doc_path"] == "care/feeding.md"
    assert top["heading"] == "Evening feed" and top["heading_level"] == 2 and "text" not in top


def test_search_filters_and_their_errors(served: tuple[str, Settings]) -> None:
    url, _ = served
    filtered = local_http.post(
        f"{url}/api/search", json={"query": "quokka", "filters": {"doc_path": "care/housing.md"}}
    )
    assert {s["doc_path"] for s in filtered.json()["sources"]} == {"care/housing.md"}
    wrong = local_http.post(f"{url}/api/search", json={"query": "quokka", "filters": {"colour": "red"}})
    assert wrong.status_code == 422 and wrong.json()["error"]["code"] == "invalid_request"


def test_feedback_is_stored_durably(served: tuple[str, Settings]) -> None:
    url, settings = served
    sources = [{"n": 1, "url": "/docs/care/feeding#morning-feed"}]
    answered = chat(url, {"question": "What do quokkas eat?"})
    request_id = answered.first("meta")["request_id"]
    body = {"request_id": request_id, "rating": "down", "question": "q?", "answer": "a.", "sources": sources}
    response = local_http.post(f"{url}/api/feedback", json=body)
    assert response.status_code == 201 and response.json()["stored"] is True
    with sqlite3.connect(settings.resolved_feedback_db) as db:
        row = db.execute("SELECT request_id, rating, question, answer, sources FROM feedback").fetchone()
    assert row[:4] == (request_id, "down", "q?", "a.") and "morning-feed" in row[4]
    bad = local_http.post(f"{url}/api/feedback", json={**body, "rating": "meh"})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


def test_health_ready_widget_and_unknown_paths(served: tuple[str, Settings]) -> None:
    url, _ = served
    assert local_http.get(f"{url}/api/health").json()["status"] == "ok"
    ready = local_http.get(f"{url}/api/ready").json()
    assert ready["status"] == "ready" and ready["embed_model"] == "hash-384" and ready["points"] > 0
    assert ready["llm"] is None
    widget = local_http.get(f"{url}/widget.js")
    assert widget.status_code == 200 and "Bookwise" in widget.text
    # The widget's Markdown renderer, which it loads from beside itself on first open.
    renderer = local_http.get(f"{url}/widget-markdown.js")
    assert renderer.status_code == 200 and renderer.headers["content-type"].startswith("text/javascript")
    assert "__bookwiseMarkdown" in renderer.text
    missing = local_http.get(f"{url}/api/nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong_method = local_http.get(f"{url}/api/chat")
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["code"] == "invalid_request"


def test_no_index_yet_means_not_ready_and_503_then_ready_once_ingested(tmp_path: Path) -> None:
    empty = Settings(_env_file=None, data_dir=tmp_path / "data", embedding_provider="hash")  # type: ignore[call-arg]
    with running_api(empty) as url:
        assert local_http.get(f"{url}/api/health").status_code == 200
        ready = local_http.get(f"{url}/api/ready")
        chat = local_http.post(f"{url}/api/chat", json={"question": "quokkas?"})
    assert ready.status_code == 503 and ready.json()["error"]["code"] == "index_not_found"
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "index_not_found"


def test_config_serves_the_limits_a_widget_must_keep_to(tmp_path: Path) -> None:
    # The widget cut history turns at a hard-coded 4,000 characters: with the server's limit lowered,
    # every follow-up was refused (422). It now reads the limits from here.
    lowered = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path,
        embedding_provider="hash",
        max_history_chars=100,
        max_history_turns=2,
    )
    with running_api(lowered) as url:
        limits = local_http.get(f"{url}/api/config").json()["limits"]
        turn = {"role": "assistant", "content": "x" * limits["max_history_chars"]}
        kept = local_http.post(f"{url}/api/chat", json={"question": "and then?", "history": [turn]})
        over = {**turn, "content": turn["content"] + "x"}
        cut = local_http.post(f"{url}/api/chat", json={"question": "and then?", "history": [over]})
    assert limits == {
        "max_question_chars": 2000,
        "max_selection_chars": 4000,
        "max_history_turns": 2,
        "max_history_chars": 100,
        "default_top_k": 5,
        "max_top_k": 20,
    }
    assert kept.json()["error"]["code"] == "index_not_found"  # past validation: no index here
    assert cut.status_code == 422 and "history turn is too long" in cut.json()["error"]["message"]


def test_the_openapi_document_carries_the_package_version(tmp_path: Path) -> None:
    """The version was also written here as a literal: bumping the package's left it behind."""
    settings = Settings(_env_file=None, data_dir=tmp_path, embedding_provider="hash", api_docs=True)  # type: ignore[call-arg]
    assert create_app(settings).openapi()["info"]["version"] == __version__
