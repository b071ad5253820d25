"""The question log through the real API (uvicorn on loopback), on SQLite and on a real PostgreSQL.

Off by default: answers leave no row, ratings still do. On: one row per answer, built from the events
its reader was sent, with no address anywhere in the store; MCP searches are agent traffic. The
report's route exists only with an admin token, and a store that cannot open never stops answers.
"""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from pydantic import SecretStr

import local_http
from apiserver import build_book, chat, running_api
from bookwise.api.routes.chat import Logged, answer_events
from bookwise.generation.events import (
    AnswerEvent,
    AnswerKind,
    Done,
    ErrorEvent,
    Meta,
    Source,
    Sources,
    Timings,
)
from bookwise.generation.followup import SearchQuery
from bookwise.generation.models import ChatRequest, Prepared
from bookwise.insights.factory import open_insights_store
from bookwise.insights.log import QuestionLog, StoreHandle
from bookwise.insights.records import LogFilter
from bookwise.insights.sql import SqlStore
from bookwise.settings import Settings
from pgserver import PostgresServer
from servers import closed_port_url

TOKEN = "correct-horse-battery-staple-42"
QUESTION = "What do quokkas eat in the morning?"


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return build_book(tmp_path_factory.mktemp("question-log"))


@pytest.fixture(params=["sqlite", "postgres"])
def on_store(request: pytest.FixtureRequest, book: Settings, tmp_path: Path) -> Settings:
    """The book, its insights on a new SQLite file or a new database of the session's PostgreSQL."""
    if request.param == "sqlite":
        return book.model_copy(update={"feedback_db": tmp_path / "feedback.sqlite3"})
    server: PostgresServer = request.getfixturevalue("postgres")
    return book.model_copy(update={"insights_db_url": SecretStr(server.create_database())})


@pytest.fixture
def stored(on_store: Settings) -> Iterator[Callable[[], SqlStore]]:
    """Opens the store the API wrote, once the API stopped (its writer drains at shutdown)."""
    opened: list[SqlStore] = []

    def open_it() -> SqlStore:
        store = open_insights_store(on_store.resolved_insights_db)
        assert isinstance(store, SqlStore)
        opened.append(store)
        return store

    yield open_it
    for store in opened:
        store.close()


def answered(url: str, body: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    stream = chat(url, body)
    assert stream.names()[-1] == "done", stream.events
    return str(stream.first("meta")["request_id"]), stream.events


def rate(url: str, request_id: str, **extra: Any) -> httpx.Response:
    body = {"request_id": request_id, "rating": "down", "question": QUESTION, "answer": "a", **extra}
    return local_http.post(f"{url}/api/feedback", json=body, timeout=10)


def every_value(store: SqlStore) -> list[str]:
    return [
        str(v)
        for table in ("questions", "feedback", "reader_salts")
        for r in store.rows(table)
        for v in r.values()
    ]


def test_log_off_keeps_no_question_but_ratings_with_their_reason(
    on_store: Settings, stored: SqlStore
) -> None:
    with running_api(on_store) as url:
        request_id, _ = answered(url, {"question": QUESTION})
        assert rate(url, request_id, reason="not_what_i_asked").status_code == 201
    store = stored()
    assert store.questions(LogFilter()) == []
    [rated] = store.feedback(LogFilter())
    assert (rated.request_id, rated.rating, rated.reason) == (request_id, "down", "not_what_i_asked")


def test_log_on_keeps_each_answer_as_sent_and_no_address(
    on_store: Settings, stored: Callable[[], SqlStore]
) -> None:
    page = {"url": "/docs/care/feeding?session=abc123#morning-feed", "version": "2.0", "locale": "en"}
    with running_api(on_store.model_copy(update={"question_log": True})) as url:
        request_id, events = answered(url, {"question": QUESTION, "page": page})
        other, _ = answered(url, {"question": "Where do quokkas sleep?"})
        assert rate(url, request_id, reason="incorrect").status_code == 201
    store = stored()
    first, second = store.questions(LogFilter())
    sent = dict(events)
    numbered = {s["n"]: s for s in sent["sources"]["sources"]}
    assert (first.request_id, second.request_id) == (request_id, other)
    assert (first.question, first.mode, first.outcome, first.traffic) == (
        QUESTION,
        "normal",
        "answered",
        "reader",
    )
    assert (first.page_url, first.version, first.locale) == ("/docs/care/feeding", "2.0", "en")  # a path
    assert first.cited and [c.url for c in first.cited] == [
        numbered[n]["page_url"] for n in sent["done"]["citations"]
    ]
    assert isinstance(first.evidence, float) and first.ms_total and first.ms_to_sources is not None
    assert first.reader == second.reader and re.fullmatch(r"[0-9a-f]{16}", first.reader or "")
    assert not any("127.0.0.1" in value for value in every_value(store))  # the client's address: nowhere
    [rated] = store.feedback(LogFilter(version="2.0"))  # a rating has its answer's version
    assert (rated.request_id, rated.reason) == (request_id, "incorrect")


def test_a_question_the_book_does_not_cover_is_logged_not_covered(book: Settings, tmp_path: Path) -> None:
    settings = book.model_copy(
        update={"question_log": True, "sufficiency_threshold": 1.0, "feedback_db": tmp_path / "f.sqlite3"}
    )
    with running_api(settings) as url:
        request_id, events = answered(url, {"question": "How do I file my taxes?"})
    assert dict(events)["done"]["answer_kind"] == "not_covered"
    store = open_insights_store(settings.resolved_insights_db)
    try:
        [logged] = store.questions(LogFilter())
    finally:
        store.close()
    assert (logged.request_id, logged.outcome, logged.cited) == (request_id, "not_covered", ())


def test_a_study_action_is_logged_by_its_name(book: Settings, tmp_path: Path) -> None:
    settings = book.model_copy(update={"question_log": True, "feedback_db": tmp_path / "f.sqlite3"})
    selection = "Quokkas eat grasses and leaves, mostly at night."
    with running_api(settings) as url:
        request_id, _ = answered(
            url, {"question": "", "mode": "selected_text", "selected_text": selection, "action": "explain"}
        )
    store = open_insights_store(settings.resolved_insights_db)
    try:
        [logged] = store.questions(LogFilter())
    finally:
        store.close()
    assert (logged.request_id, logged.mode) == (request_id, "explain")


def test_reason_is_only_for_a_thumbs_down(book: Settings, tmp_path: Path) -> None:
    with running_api(book.model_copy(update={"feedback_db": tmp_path / "f.sqlite3"})) as url:
        request_id, _ = answered(url, {"question": QUESTION})
        refused = rate(url, request_id, rating="up", reason="unclear")
        assert refused.status_code == 422 and "thumbs-down" in refused.json()["error"]["message"]
        unknown = rate(url, request_id, reason="boring")
        assert unknown.status_code == 422 and unknown.json()["error"]["code"] == "invalid_request"
        assert rate(url, request_id, reason="other").status_code == 201  # the id was not used up


class Scripted:
    """An answer stream that ends as told: the record must say what the reader was sent."""

    def __init__(self, *ending: AnswerEvent) -> None:
        self.ending = ending

    async def stream(self) -> AsyncIterator[AnswerEvent]:
        yield Meta(
            request_id="r-1", mode="selected_text", action="ask", scope="selection", quiz_turn=None,
            index_version="g1", query="q", query_rewritten=False, query_method="as_asked",
            answer_mode="llm", model="m",
        )  # fmt: skip
        source = Source(
            n=1, doc_path="p.md", doc_id="p", title="P", heading="", heading_text="", heading_level=1,
            breadcrumb=[], url="/p", page_url="/p", anchor="a", module=None, chapter=None, version=None,
            locale=None, content_type="prose", score=1.0, snippet="",
        )  # fmt: skip
        yield Sources(sources=[source], sufficient_context=True)
        for event in self.ending:
            yield event


def _done(kind: AnswerKind, citations: list[int]) -> Done:
    timings = Timings(retrieval=1.0, first_token=None, total=2.0)
    return Done(
        answer_kind=kind, citations=citations, dropped_citations=0, quotes=[], finish_reason="stop",
        widen=None, timings_ms=timings, usage=None,
    )  # fmt: skip


TIMED_OUT = ErrorEvent(code="llm_timeout", message="m", retryable=True, request_id="r-1")


@pytest.mark.parametrize(
    ("ending", "outcome", "error_code"),
    [
        ((_done("generated", [1]),), "answered", None),
        ((_done("extractive", [1]),), "answered", None),
        ((_done("not_in_selection", []),), "not_in_selection", None),
        ((_done("not_covered", []),), "not_covered", None),
        ((TIMED_OUT,), "error", "llm_timeout"),
        ((), "client_disconnected", None),
    ],
)
def test_the_outcome_is_read_from_the_end_event_sent(
    tmp_path: Path, ending: tuple[AnswerEvent, ...], outcome: str, error_code: str | None
) -> None:
    handle = StoreHandle(lambda: open_insights_store(tmp_path / "f.sqlite3"))
    log = QuestionLog(handle, enabled=True, retention_days=30)
    request = ChatRequest("q", mode="selected_text", request_id="r-1")
    prepared = Prepared(request, SearchQuery("q", False, "as_asked"), [], True, "llm", [], "g1", 1.0, 0.0)

    async def run() -> None:
        async for _ in answer_events(
            Scripted(*ending).stream(), prepared, request, Logged(log, datetime.now(UTC), "10.0.0.1")
        ):
            pass

    log.start()
    anyio.run(run)
    log.close()
    [logged] = handle.get().questions(LogFilter())
    handle.close()
    assert (logged.outcome, logged.error_code, logged.mode) == (outcome, error_code, "selected_text")
    assert [c.url for c in logged.cited] == (["/p"] if outcome == "answered" else [])


def test_mcp_searches_are_logged_as_agent_traffic(book: Settings, tmp_path: Path) -> None:
    settings = book.model_copy(update={"question_log": True, "feedback_db": tmp_path / "f.sqlite3"})

    async def search() -> None:
        with running_api(settings) as url:
            async with Client(f"{url}/mcp") as client:
                result = await client.call_tool("search", {"query": "quokka burrows", "locale": "en"})
                assert not result.is_error

    anyio.run(search)
    store = open_insights_store(settings.resolved_insights_db)
    try:
        [logged] = store.questions(LogFilter())
    finally:
        store.close()
    assert (logged.question, logged.traffic, logged.mode, logged.locale) == (
        "quokka burrows",
        "agent",
        "search",
        "en",
    )
    assert logged.outcome == "answered" and logged.cited and logged.reader is None


def test_the_report_route_does_not_exist_without_an_admin_token(book: Settings, tmp_path: Path) -> None:
    with running_api(book.model_copy(update={"feedback_db": tmp_path / "f.sqlite3"})) as url:
        missing = local_http.get(f"{url}/api/insights", headers={"Authorization": f"Bearer {TOKEN}"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_the_report_route_needs_the_admin_token(
    book: Settings, tmp_path: Path, log_lines: io.StringIO
) -> None:
    settings = book.model_copy(
        update={"question_log": True, "admin_token": SecretStr(TOKEN), "feedback_db": tmp_path / "f.sqlite3"}
    )
    with running_api(settings) as url:
        answered(url, {"question": QUESTION})
        for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"}, {"Authorization": TOKEN}):
            refused = local_http.get(f"{url}/api/insights", headers=headers)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
            assert TOKEN not in refused.text
        report = local_http.get(
            f"{url}/api/insights", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        assert report.status_code == 200
        if report.headers["content-type"].startswith("application/json"):
            assert report.json()["questions"] >= 0
    assert TOKEN not in log_lines.getvalue()


def test_an_unreachable_database_turns_feedback_off_and_answers_go_on(book: Settings) -> None:
    port = closed_port_url().rsplit(":", 1)[1]
    down = f"postgresql://bookwise:pw@127.0.0.1:{port}/bookwise?connect_timeout=1"
    settings = book.model_copy(
        update={"question_log": True, "insights_db_url": SecretStr(down), "admin_token": SecretStr(TOKEN)}
    )
    with running_api(settings) as url:
        request_id, _ = answered(url, {"question": QUESTION})
        refused = rate(url, request_id)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "feedback_unavailable"
        report = local_http.get(f"{url}/api/insights", headers={"Authorization": f"Bearer {TOKEN}"})
        assert report.status_code == 503 and report.json()["error"]["code"] == "insights_store_unavailable"
        answered(url, {"question": QUESTION})  # and again: the log's failures never reach a reader
