"""Logs are JSON lines, whoever logs: issue 16 found tracebacks as multi-line text inside the log."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from bookwise.api.app import create_app
from bookwise.api.logs import configure_logging
from bookwise.api.server import uvicorn_options
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


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What `bookwise serve` logs, captured; pytest's own handlers are put back afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    named = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).propagate) for n in ("bookwise",)}
    stream = io.StringIO()
    configure_logging(stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        for name, (handlers, propagate) in named.items():
            logging.getLogger(name).handlers[:] = handlers
            logging.getLogger(name).propagate = propagate


def test_unexpected_error_traceback_is_one_json_line_with_its_request_id(
    settings: Settings, log_lines: io.StringIO
) -> None:
    app = create_app(settings, retriever=cast(Retriever, BrokenRetriever()))
    with serve_in_thread(app, **uvicorn_options(settings)) as url:
        failed = httpx.post(
            f"{url}/api/search", json={"query": "quokka"}, headers={"X-Request-ID": "bug-0001"}
        )
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "internal_error"
        assert httpx.post(f"{url}/api/search", json={"query": "quokka"}).status_code == 500
        assert httpx.get(f"{url}/api/health").status_code == 200  # serving goes on
    lines = log_lines.getvalue().splitlines()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    failures = [r for r in records if "exception" in r]
    assert [r["error_type"] for r in failures] == ["RuntimeError", "KeyError"]  # once each, not twice
    first = failures[0]
    assert first["request_id"] == "bug-0001" and first["event"] == "unexpected_error"
    assert "Traceback" in first["exception"] and "multi-line message" in first["exception"]


def test_library_and_server_warnings_are_json_lines_too(tmp_path: Path, log_lines: io.StringIO) -> None:
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    logging.getLogger("some.library").error("failed", exc_info=ValueError("x"))
    records = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    assert [r["logger"] for r in records] == ["uvicorn.error", "some.library"]
    assert records[1]["error_type"] == "ValueError"
