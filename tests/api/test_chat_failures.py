"""Failures around an answer, on real sockets: the reader leaves, the LLM is down, slow, stalled,
rate limited or broken, Qdrant is unreachable or stalled. Never a hang, always one terminal event."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import local_http
from apiserver import Stream, build_book, chat, parse_sse, running_api
from bookwise.api.app import create_app
from bookwise.errors import StoreUnavailableError
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.store import HybridHits, HybridQuery, IndexReader
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from fakellm import FakeLLM
from servers import closed_port_url, serve_in_thread

QUESTION = {"question": "What do quokkas eat in the morning?"}


def api(tmp_path: Path, llm_url: str, **overrides: Any) -> Any:
    defaults = {"llm_max_retries": 1, "llm_retry_max_wait_s": 0.05}
    return running_api(build_book(tmp_path, llm_base_url=llm_url, **(defaults | overrides)))


def assert_error_after_sources(stream: Stream, code: str) -> dict[str, Any]:
    assert stream.status == 200
    assert stream.names()[:2] == ["meta", "sources"] and stream.names()[-1] == "error"
    assert "done" not in stream.names()
    error = stream.first("error")
    assert error["code"] == code and error["request_id"] == stream.first("meta")["request_id"]
    assert set(error) == {"code", "message", "retryable", "request_id"}
    return error


def test_client_disconnect_stops_the_upstream_llm_stream_within_2s(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    fake.mode, fake.stall_after = "stall", 1
    with api(tmp_path, llm_server[1]) as url, local_http.client(timeout=10) as client:
        with client.stream("POST", f"{url}/api/chat", json=QUESTION) as response:
            events = parse_sse(response.iter_lines())
            assert [name for name, _ in (next(events), next(events), next(events))] == [
                "meta",
                "sources",
                "token",
            ]
            closed_at = time.monotonic()
        assert fake.disconnected.wait(2), "the fake LLM kept streaming after the reader left"
        assert fake.disconnected_at is not None and fake.disconnected_at - closed_at < 2
        deadline = time.monotonic() + 2
        while client.get(f"{url}/api/health").json()["active_streams"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.get(f"{url}/api/health").json()["active_streams"] == 0  # the slot is free again


def test_llm_refusing_connections_gives_a_retryable_error_event(tmp_path: Path) -> None:
    with api(tmp_path, closed_port_url() + "/v1") as url:
        error = assert_error_after_sources(chat(url, QUESTION), "llm_unavailable")
    assert error["retryable"] is True


def test_llm_stalled_before_the_first_token_times_out(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    fake.mode = "stall_first"
    with api(tmp_path, llm_server[1], llm_first_token_timeout_s=0.4, llm_max_retries=0) as url:
        started = time.monotonic()
        assert_error_after_sources(chat(url, QUESTION), "llm_timeout")
    assert time.monotonic() - started < 5
    assert fake.disconnected.wait(2)  # the abandoned upstream request was closed, not left running


def test_llm_stalled_mid_answer_ends_with_a_timeout_and_is_not_retried(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    fake.mode, fake.stall_after = "stall", 2
    with api(tmp_path, llm_server[1], llm_idle_timeout_s=0.4) as url:
        stream = chat(url, QUESTION)
    assert_error_after_sources(stream, "llm_timeout")
    assert stream.answer == "".join(fake.tokens[:2])
    assert fake.calls == 1  # tokens were shown: a retry would repeat them


def test_slow_llm_still_streams_every_token(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    fake.mode, fake.delay_s = "slow", 0.1
    with api(tmp_path, llm_server[1], llm_idle_timeout_s=1.0) as url:
        stream = chat(url, QUESTION)
    assert stream.names()[-1] == "done" and stream.answer == "".join(fake.tokens)
    assert stream.names().count("token") >= 2


def test_llm_429_is_retried_before_the_first_token(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    fake.mode, fake.fail_times, fake.retry_after = "429", 1, 0.05
    with api(tmp_path, llm_server[1]) as url:
        stream = chat(url, QUESTION)
    assert stream.names()[-1] == "done" and stream.answer == "".join(fake.tokens)
    assert fake.calls == 2


@pytest.mark.parametrize("mode", ["500", "429", "malformed"])
def test_llm_failing_every_attempt_gives_an_error_event(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM, mode: str
) -> None:
    fake.mode, fake.retry_after = mode, 0.05
    with api(tmp_path, llm_server[1], llm_max_retries=2) as url:
        error = assert_error_after_sources(chat(url, QUESTION), "llm_unavailable")
    assert fake.calls == 3 and error["retryable"] is True


def test_qdrant_server_unreachable_is_a_503_before_any_stream(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path,
        embedding_provider="hash",
        qdrant_url=closed_port_url(),
        qdrant_timeout_s=1,
        llm_base_url=llm_server[1],
    )
    with running_api(settings) as url:
        stream = chat(url, QUESTION)
        ready = local_http.get(f"{url}/api/ready", timeout=10)
    assert stream.status == 503 and stream.events == []
    assert stream.body is not None and stream.body["error"]["code"] == "store_unavailable"
    assert stream.body["error"]["retryable"] is True and stream.headers["x-request-id"]
    assert ready.status_code == 503 and ready.json()["error"]["code"] == "store_unavailable"
    assert fake.calls == 0


class _FaultyReader:
    """Delegates to a real reader; its hybrid search fails or stalls on demand."""

    def __init__(self, reader: IndexReader) -> None:
        self.reader = reader
        self.fault = "none"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.reader, name)

    def hybrid(self, query: HybridQuery) -> HybridHits:
        if self.fault == "down":
            raise StoreUnavailableError("Qdrant query failed: connection refused")
        if self.fault == "stall":
            time.sleep(1.5)
        return self.reader.hybrid(query)


@pytest.mark.parametrize(("fault", "code"), [("down", "store_unavailable"), ("stall", "retrieval_timeout")])
def test_retrieval_failing_mid_life_is_a_503_and_the_llm_is_never_called(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM, fault: str, code: str
) -> None:
    settings = build_book(tmp_path, llm_base_url=llm_server[1], retrieval_timeout_s=0.3)
    store = open_store(settings)
    reader = _FaultyReader(store.open_reader())
    retriever = Retriever(settings, reader, HashEmbedder())
    try:
        with serve_in_thread(create_app(settings, retriever=retriever)) as url:
            assert chat(url, QUESTION).names()[-1] == "done"
            calls = fake.calls
            reader.fault = fault
            started = time.monotonic()
            stream = chat(url, QUESTION)
            assert time.monotonic() - started < 1.4
            reader.fault = "none"
            time.sleep(1.3 if fault == "stall" else 0)  # let the abandoned search finish
    finally:
        retriever.close()
        store.close()
    assert stream.status == 503 and stream.body is not None
    assert stream.body["error"]["code"] == code and stream.body["error"]["retryable"] is True
    assert fake.calls == calls
