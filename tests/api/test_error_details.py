"""A server-side fault's detail (host names, file paths, a library's words) goes to the log with the
request id; users get the fixed message of its code (raw exception text was once in 503 bodies)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import local_http
from apiserver import build_book, running_api
from bookwise.api.app import create_app
from bookwise.api.server import uvicorn_options
from bookwise.errors import EmbeddingError, StoreUnavailableError
from bookwise.index.embedders import OpenAIEmbedder
from bookwise.index.factory import open_store
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from servers import serve_in_thread

SECRET_HOST = "qdrant-7.internal.example"
SECRET_PATH = "/var/lib/bookwise/secret-storage/collections"


async def _broken(request: Request) -> JSONResponse:
    # A failing upstream that names its own host and paths, as servers' error bodies do.
    failure = {"message": f"upstream {SECRET_HOST} failed reading {SECRET_PATH}"}
    return JSONResponse({"error": failure, "status": failure}, status_code=500)


@pytest.fixture(scope="module")
def broken_upstream() -> Iterator[str]:
    app = Starlette(routes=[Route("/{path:path}", _broken, methods=["GET", "POST", "PUT"])])
    with serve_in_thread(app) as url:
        yield url


def _records(log: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.getvalue().splitlines()]


def assert_private(response: httpx.Response, code: str, log: io.StringIO) -> None:
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == code and SECRET_HOST not in response.text and SECRET_PATH not in response.text
    logged = [r for r in _records(log) if r.get("request_id") == error["request_id"] and "detail" in r]
    assert logged and SECRET_HOST in str(logged[0]["detail"]) and SECRET_PATH in str(logged[0]["detail"])


def test_a_failing_qdrant_server_names_no_host_or_path_in_the_503_body_only_in_the_log(
    tmp_path: Path, broken_upstream: str, log_lines: io.StringIO
) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=tmp_path, embedding_provider="hash", qdrant_url=broken_upstream
    )
    with pytest.raises(StoreUnavailableError) as raised:  # the operator's CLI message keeps the detail
        open_store(settings).open_reader()
    assert SECRET_PATH in raised.value.message and SECRET_PATH not in json.dumps(raised.value.to_dict())
    with running_api(settings) as url:
        ready = local_http.get(f"{url}/api/ready", timeout=10)
        search = local_http.post(f"{url}/api/search", json={"query": "quokka"}, timeout=10)
    assert_private(ready, "store_unavailable", log_lines)
    assert_private(search, "store_unavailable", log_lines)


def test_a_failing_embeddings_api_names_no_host_or_path_in_the_503_body_only_in_the_log(
    tmp_path: Path, broken_upstream: str, log_lines: io.StringIO
) -> None:
    book = build_book(tmp_path)
    settings = book.model_copy(update={"embedding_base_url": f"{broken_upstream}/v1"})
    store = open_store(settings)
    embedder = OpenAIEmbedder(settings, "hash-384")  # the index's model name, served by the broken API
    retriever = Retriever(settings, store.open_reader(), embedder)
    try:
        with serve_in_thread(create_app(settings, retriever=retriever), **uvicorn_options(settings)) as url:
            search = local_http.post(f"{url}/api/search", json={"query": "quokka"}, timeout=30)
        assert_private(search, "embedding_failed", log_lines)
        with pytest.raises(EmbeddingError) as raised:
            embedder.embed_query("quokka")
        assert SECRET_HOST in raised.value.message  # bookwise search/ask print this to the operator
    finally:
        retriever.close()
        store.close()
