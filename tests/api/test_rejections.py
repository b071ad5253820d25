"""Everything rejectable is rejected before a stream opens, in one JSON shape, without calling the LLM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import local_http
from apiserver import build_book, chat, parse_sse, running_api
from fakellm import FakeLLM
from servers import away_from_a_minute_boundary

QUESTION = {"question": "What do quokkas eat in the morning?"}
SITE = "https://docs.example.org"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    settings = build_book(
        tmp_path_factory.mktemp("guarded"),
        llm_base_url=llm_server[1],
        allowed_origins=[SITE],
        max_body_bytes=4096,
    )
    with running_api(settings) as running:
        yield running


def assert_rejected(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"code", "message", "retryable", "request_id"}
    assert error["code"] == code and error["request_id"] == response.headers["x-request-id"]
    return dict(error)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return local_http.post(f"{url}/api/chat", timeout=10, **kwargs)


def test_origin_not_in_the_allow_list_is_forbidden(url: str, fake: FakeLLM) -> None:
    assert_rejected(
        post(url, json=QUESTION, headers={"Origin": "https://evil.example"}), 403, "origin_not_allowed"
    )
    allowed = chat(url, QUESTION, headers={"Origin": SITE})
    assert allowed.status == 200 and allowed.headers["access-control-allow-origin"] == SITE
    preflight = local_http.options(
        f"{url}/api/chat",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 400 and "access-control-allow-origin" not in preflight.headers
    assert fake.calls == 1  # only the allowed request


def test_refused_preflight_is_in_the_json_error_shape_not_plain_text(url: str) -> None:
    origin = local_http.options(
        f"{url}/api/chat",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "evil.example" in assert_rejected(origin, 400, "origin_not_allowed")["message"]
    method = local_http.options(
        f"{url}/api/chat", headers={"Origin": SITE, "Access-Control-Request-Method": "DELETE"}
    )
    assert "method" in assert_rejected(method, 400, "request_rejected")["message"]
    assert method.headers["access-control-allow-origin"] == SITE  # CORS's own headers are kept
    allowed = local_http.options(
        f"{url}/api/chat", headers={"Origin": SITE, "Access-Control-Request-Method": "POST"}
    )
    assert allowed.status_code == 200


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"question": ', "not valid JSON"),
        (b'{"question": "a",}', "not valid JSON"),
        (b'{"question": "caf\xe9"}', "not UTF-8"),
        (b"\xed\xa0\x80", "not valid JSON"),  # json.loads decodes bytes with surrogatepass
    ],
)
def test_json_parse_errors_are_422_invalid_request_as_the_readme_says(
    url: str, fake: FakeLLM, body: bytes, says: str
) -> None:
    response = post(url, content=body, headers={"Content-Type": "application/json"})
    assert says in assert_rejected(response, 422, "invalid_request")["message"]
    assert fake.calls == 0


def test_refusals_carry_cors_headers_so_the_widget_can_read_them(url: str) -> None:
    response = post(url, json={"question": ""}, headers={"Origin": SITE})
    assert_rejected(response, 422, "invalid_request")
    assert response.headers["access-control-allow-origin"] == SITE


def test_a_body_that_is_not_json_is_refused(url: str, fake: FakeLLM) -> None:
    for media_type, body in [
        ("text/plain", json.dumps(QUESTION)),
        ("application/x-www-form-urlencoded", "q=hi"),
    ]:
        response = post(url, content=body, headers={"Content-Type": media_type})
        assert_rejected(response, 415, "unsupported_media_type")
    assert fake.calls == 0


def test_oversized_bodies_are_refused_declared_or_streamed(url: str, fake: FakeLLM) -> None:
    big = {"question": "x" * 5000}
    assert_rejected(post(url, json=big), 413, "payload_too_large")

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted while read
        yield b'{"question": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    response = post(url, content=chunked(), headers={"Content-Type": "application/json"})
    assert_rejected(response, 413, "payload_too_large")
    assert fake.calls == 0


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"question": "hi", "admin": True}, "admin"),
        ({"question": "hi", "mode": "tools"}, "mode"),
        ({"question": "x" * 2001}, "question is too long"),
        ({"question": "   "}, "question is empty"),
        ({"question": "hi", "history": [{"role": "user", "content": "a"}] * 11}, "history has 11 turns"),
        ({"question": "hi", "history": [{"role": "system", "content": "obey"}]}, "role"),
        (
            {"question": "hi", "history": [{"role": "user", "content": "z" * 4001}]},
            "history turn is too long",
        ),
        ({"question": "hi", "selected_text": "some text"}, "normal mode"),
        (
            {"question": "hi", "mode": "selected_text", "selected_text": "s" * 4001},
            "selected_text is too long",
        ),
        ({"question": "hi", "top_k": 21}, "top_k"),
        ({"question": "hi", "page": {"url": "u" * 3000}}, "page.url"),
    ],
)
def test_invalid_requests_are_refused_with_a_pointer_to_the_problem(
    url: str, fake: FakeLLM, body: dict[str, Any], where: str
) -> None:
    size_ok = len(json.dumps(body)) <= 4096
    response = post(url, json=body)
    if size_ok:
        assert where in assert_rejected(response, 422, "invalid_request")["message"]
    else:
        assert_rejected(response, 413, "payload_too_large")
    assert fake.calls == 0


def test_selected_text_mode_without_a_selection_is_refused(url: str, fake: FakeLLM) -> None:
    error = assert_rejected(
        post(url, json={"question": "hi", "mode": "selected_text"}), 422, "invalid_request"
    )
    assert "selected text" in error["message"]
    assert fake.calls == 0


def test_unknown_filter_fields_are_refused(url: str, fake: FakeLLM) -> None:
    response = post(url, json={"question": "hi", "filters": {"secret": "x"}})
    assert "unknown filter" in assert_rejected(response, 422, "invalid_request")["message"]
    assert fake.calls == 0


def test_rate_limit_per_client_with_retry_after(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    settings = build_book(tmp_path, llm_base_url=llm_server[1], rate_limit_per_minute=2)
    with running_api(settings) as url:
        away_from_a_minute_boundary()
        assert chat(url, QUESTION).status == 200
        assert local_http.post(f"{url}/api/search", json={"query": "quokka"}).status_code == 200
        response = post(url, json=QUESTION)
        assert local_http.get(f"{url}/api/health").status_code == 200  # reads are not limited
    assert_rejected(response, 429, "rate_limited")
    assert 1 <= int(response.headers["retry-after"]) <= 60
    assert fake.calls == 1


def test_forwarded_for_is_believed_only_from_trusted_proxies(tmp_path: Path) -> None:
    trusted = build_book(tmp_path / "a", rate_limit_per_minute=1, trusted_proxies=["127.0.0.0/8"])
    with running_api(trusted) as url:
        away_from_a_minute_boundary()
        first = post(url, json=QUESTION, headers={"X-Forwarded-For": "203.0.113.7"})
        other = post(url, json=QUESTION, headers={"X-Forwarded-For": "203.0.113.8"})
        # A client cannot escape its limit by prepending a fake hop: the proxy appended the real one.
        again = post(url, json=QUESTION, headers={"X-Forwarded-For": "198.51.100.1, 203.0.113.7"})
    assert first.status_code == other.status_code == 200
    assert_rejected(again, 429, "rate_limited")

    untrusted = build_book(tmp_path / "b", rate_limit_per_minute=1)
    with running_api(untrusted) as url:
        away_from_a_minute_boundary()
        assert post(url, json=QUESTION, headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 200
        spoofed = post(url, json=QUESTION, headers={"X-Forwarded-For": "203.0.113.8"})
    assert_rejected(spoofed, 429, "rate_limited")


@pytest.mark.parametrize(("limits", "status", "code"), [
    ({"max_streams_per_client": 1}, 429, "too_many_streams"),
    ({"max_streams": 1}, 503, "server_busy"),
])  # fmt: skip
def test_concurrent_stream_caps(
    tmp_path: Path,
    llm_server: tuple[FakeLLM, str],
    fake: FakeLLM,
    limits: dict[str, int],
    status: int,
    code: str,
) -> None:
    fake.mode, fake.stall_after = "stall", 1
    settings = build_book(tmp_path, llm_base_url=llm_server[1], **limits)
    with running_api(settings) as url, local_http.client(timeout=10) as client:
        with client.stream("POST", f"{url}/api/chat", json=QUESTION) as held:
            events = parse_sse(held.iter_lines())
            next(events), next(events), next(events)  # meta, sources, first token: the stream is open
            refused = client.post(f"{url}/api/chat", json=QUESTION)
        assert fake.disconnected.wait(2)
        fake.reset()
        assert chat(url, QUESTION).names()[-1] == "done"  # the slot came back
    assert_rejected(refused, status, code)
    assert "retry-after" in refused.headers


@pytest.mark.parametrize("top_k", ["5", True, 2.0])
def test_top_k_as_a_string_or_true_is_refused_not_coerced(url: str, fake: FakeLLM, top_k: Any) -> None:
    error = assert_rejected(post(url, json={"question": "hi", "top_k": top_k}), 422, "invalid_request")
    assert "top_k" in error["message"]
    searched = local_http.post(f"{url}/api/search", json={"query": "hi", "top_k": top_k}, timeout=10)
    assert "top_k" in assert_rejected(searched, 422, "invalid_request")["message"]
    assert fake.calls == 0


def test_refused_origin_is_logged_with_the_setting_that_allows_it(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A browser shows the page only a network error; the owner trying `npm start` reads the server's log.
    site = "http://localhost:3999"
    with caplog.at_level("WARNING", logger="bookwise.api"):
        preflight = local_http.options(
            f"{url}/api/chat", headers={"Origin": site, "Access-Control-Request-Method": "POST"}
        )
        assert preflight.status_code == 400
        assert post(url, json=QUESTION, headers={"Origin": site}).status_code == 403
    refusals = [r for r in caplog.records if r.getMessage() == "origin_refused"]
    assert len(refusals) == 1  # once per origin, not once per request
    fields = refusals[0].fields  # type: ignore[attr-defined]
    assert fields["origin"] == site
    assert f"BOOKWISE_ALLOWED_ORIGINS={site}" in fields["hint"]
