"""Logs are JSON lines, whoever logs: a red-team pass found tracebacks as multi-line text inside the log."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio

import local_http
from bookwise.api.app import create_app
from bookwise.api.routes.chat import answer_events
from bookwise.api.server import uvicorn_options
from bookwise.generation.events import AnswerEvent, Done, Meta, Timings
from bookwise.generation.followup import SearchQuery
from bookwise.generation.models import ChatRequest, Prepared
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from servers import serve_in_thread


class BrokenRetriever:
    """A retriever with a bug: every search raises something the API does not expect."""

    def __init__(self) -> None:
        self.calls = 0

    async def asearch(self, query: str, **_: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("a bug\nwith a multi-line message")
        raise KeyError("another")


def test_unexpected_error_traceback_is_one_json_line_with_its_request_id(
    settings: Settings, log_lines: io.StringIO
) -> None:
    app = create_app(settings, retriever=cast(Retriever, BrokenRetriever()))
    with serve_in_thread(app, **uvicorn_options(settings)) as url:
        failed = local_http.post(
            f"{url}/api/search", json={"query": "quokka"}, headers={"X-Request-ID": "bug-0001"}
        )
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "internal_error"
        assert local_http.post(f"{url}/api/search", json={"query": "quokka"}).status_code == 500
        assert local_http.get(f"{url}/api/health").status_code == 200  # serving goes on
    lines = log_lines.getvalue().splitlines()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    failures = [r for r in records if "exception" in r]
    assert [r["error_type"] for r in failures] == ["RuntimeError", "KeyError"]  # once each, not twice
    first = failures[0]
    assert first["event"] == "unexpected_error"
    assert first["request_id"] == failed.json()["error"]["request_id"]  # the server's id
    assert first["client_request_id"] == "bug-0001"  # the client's own id, for correlation
    assert "Traceback" in first["exception"] and "multi-line message" in first["exception"]


def test_library_and_server_warnings_are_json_lines_too(tmp_path: Path, log_lines: io.StringIO) -> None:
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    logging.getLogger("some.library").error("failed", exc_info=ValueError("x"))
    records = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    assert [r["logger"] for r in records] == ["uvicorn.error", "some.library"]
    assert records[1]["error_type"] == "ValueError"


class Decided:
    """An answer stream that has decided its end: a done event the reader may never get."""

    async def stream(self, prepared: Prepared) -> AsyncIterator[AnswerEvent]:
        yield Meta(
            request_id="r-000001", mode="normal", action="ask", scope="book", quiz_turn=None,
            index_version="g1", query="q", query_rewritten=False, query_method="as_asked",
            answer_mode="extractive", model=None,
        )  # fmt: skip
        yield Done(
            answer_kind="extractive", citations=[], dropped_citations=0, quotes=[], finish_reason="stop",
            widen=None, timings_ms=Timings(retrieval=0.5, first_token=None, total=1.0), usage=None,
        )  # fmt: skip


def _prepared(request: ChatRequest) -> Prepared:
    return Prepared(
        request=request,
        query=SearchQuery("q", rewritten=False, method="as_asked"),
        sources=[],
        sufficient=True,
        plan="extractive",
        messages=[],
        index_version="g1",
        retrieval_ms=1.0,
        started=0.0,
    )


def test_chat_log_says_what_the_reader_was_sent_not_what_the_stream_decided(log_lines: io.StringIO) -> None:
    request = ChatRequest("q", request_id="r-000001")

    async def cut_while_sending_done() -> None:
        events = answer_events(Decided().stream(_prepared(request)), _prepared(request), request)
        async for sent in events:
            if sent.event == "done":  # the server is sending it when the reader goes: never resumed
                await events.aclose()
                break

    async def sent_in_full() -> None:
        async for _ in answer_events(Decided().stream(_prepared(request)), _prepared(request), request):
            pass

    anyio.run(cut_while_sending_done)
    anyio.run(sent_in_full)
    chats = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    cut, full = [c for c in chats if c["event"] == "chat"]
    assert (cut["outcome"], cut["answer_kind"], cut["timings_ms"]) == ("client_disconnected", None, None)
    assert (full["outcome"], full["answer_kind"], full["timings_ms"]) == (
        "done",
        "extractive",
        {"retrieval": 0.5, "first_token": None, "total": 1.0},
    )
