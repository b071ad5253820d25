"""Who a request is and how often it may come: the answer's id is the server's own, every route that
does work per request is rate-limited, and one client is one bucket however its address is spelled.

A red-team pass found a client-chosen `X-Request-ID` used as the answer's id (two chats with one id,
feedback accepted twice for the first), `/api/suggestions` and `GET /api/insights` outside the rate
limit, `/api/insights?until=9999-12-31` answering 500, and behind a trusted proxy `2001:DB8::1`,
`2001:0db8::0001` and `not-an-ip` each counted as a client of its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

import local_http
from apiserver import build_book, chat, running_api
from bookwise.api.limits import client_key
from bookwise.settings import Settings
from servers import away_from_a_minute_boundary

QUESTION = {"question": "What do quokkas eat in the morning?"}
TOKEN = "admin-token-0123456789"
PER_MINUTE = 6


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return build_book(tmp_path_factory.mktemp("identity"))


@pytest.fixture(scope="module")
def url(book: Settings) -> Iterator[str]:
    with running_api(book.model_copy(update={"admin_token": SecretStr(TOKEN)})) as running:
        yield running


def test_client_chosen_request_id_is_not_the_answers_identity(url: str) -> None:
    chosen = {"X-Request-ID": "my-correlation-id-0001"}
    first, second = chat(url, QUESTION, headers=chosen), chat(url, QUESTION, headers=chosen)
    ids = [stream.first("meta")["request_id"] for stream in (first, second)]
    assert "my-correlation-id-0001" not in ids and ids[0] != ids[1]
    for stream, request_id in zip((first, second), ids, strict=True):
        assert stream.headers["x-request-id"] == request_id  # the response's id is the answer's
        assert stream.headers["x-client-request-id"] == "my-correlation-id-0001"  # echoed apart
    rating = {"rating": "up", "question": "q", "answer": "a"}
    by_client_id = local_http.post(
        f"{url}/api/feedback", json=rating | {"request_id": "my-correlation-id-0001"}
    )
    assert by_client_id.status_code == 404
    accepted = local_http.post(f"{url}/api/feedback", json=rating | {"request_id": ids[0]})
    again = local_http.post(f"{url}/api/feedback", json=rating | {"request_id": ids[0]})
    assert (accepted.status_code, again.status_code) == (201, 404)  # once per answer


def test_client_request_id_is_logged_beside_the_servers() -> None:
    from bookwise.api.logs import JsonFormatter, client_request_id_var, request_id_var

    record = logging.LogRecord("bookwise.api", logging.INFO, __file__, 1, "answered", None, None)
    tokens = request_id_var.set("server-id"), client_request_id_var.set("client-id-0001")
    try:
        line = json.loads(JsonFormatter().format(record))
    finally:
        client_request_id_var.reset(tokens[1])
        request_id_var.reset(tokens[0])
    assert (line["request_id"], line["client_request_id"]) == ("server-id", "client-id-0001")
    assert "client_request_id" not in json.loads(JsonFormatter().format(record))  # none sent: none logged


def test_insights_until_the_last_representable_day_is_a_422_not_a_500(url: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    refused = local_http.get(
        f"{url}/api/insights", params={"until": "9999-12-31"}, headers=headers, timeout=30
    )
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith("until:")
    assert error["request_id"] == refused.headers["x-request-id"]
    served = local_http.get(
        f"{url}/api/insights", params={"until": "9999-12-30"}, headers=headers, timeout=30
    )
    assert served.status_code == 200


@pytest.mark.parametrize("path", ["/api/suggestions?url=/docs/intro", "/api/insights"])
def test_suggestions_and_insights_gets_are_rate_limited(tmp_path: Path, path: str) -> None:
    settings = build_book(tmp_path, rate_limit_per_minute=PER_MINUTE, admin_token=TOKEN)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with running_api(settings) as running:
        away_from_a_minute_boundary()
        codes = [
            local_http.get(f"{running}{path}", headers=headers, timeout=30).status_code
            for _ in range(PER_MINUTE + 1)
        ]
        limited = local_http.get(f"{running}{path}", headers=headers, timeout=30)
        # Static files and health checks stay unlimited, even for a client over its rate.
        unlimited = [
            local_http.get(f"{running}{p}", timeout=10).status_code for p in ("/api/health", "/widget.js")
        ]
    assert codes[:PER_MINUTE] == [200] * PER_MINUTE and codes[-1] == 429
    assert limited.json()["error"]["code"] == "rate_limited" and "retry-after" in limited.headers
    assert unlimited == [200, 200]


@pytest.mark.parametrize(("spelling", "key"), [
    ("2001:DB8::1", "2001:db8::1"),
    ("2001:0db8::0001", "2001:db8::1"),
    ("2001:db8:0:0:0:0:0:1", "2001:db8::1"),
    ("::ffff:192.0.2.1", "192.0.2.1"),
    ("192.0.2.1", "192.0.2.1"),
    (" 192.0.2.1 ", "192.0.2.1"),
    ("fe80::1%eth0", "fe80::1"),
    ("not-an-ip", None),
    ("", None),
    ("unknown", None),
])  # fmt: skip
def test_client_key_is_one_spelling_per_address(spelling: str, key: str | None) -> None:
    assert client_key(spelling) == key


def test_address_spellings_through_a_trusted_proxy_share_one_rate_limit_bucket(tmp_path: Path) -> None:
    settings = build_book(tmp_path, rate_limit_per_minute=3, trusted_proxies=["127.0.0.1"])
    spellings = ["2001:DB8::1", "2001:0db8::0001", "2001:db8:0:0:0:0:0:1", "2001:db8::1"]
    with running_api(settings) as running:
        away_from_a_minute_boundary()
        codes = [
            local_http.post(
                f"{running}/api/search",
                json={"query": "quokka"},
                headers={"X-Forwarded-For": spelling},
                timeout=10,
            ).status_code
            for spelling in spellings
        ]
        other = local_http.post(
            f"{running}/api/search", json={"query": "quokka"}, headers={"X-Forwarded-For": "2001:db8::2"}
        )
    assert codes == [200, 200, 200, 429]  # one client, however its address is written
    assert other.status_code == 200  # another client has its own bucket


def test_forwarded_client_that_is_not_an_ip_address_is_refused(tmp_path: Path) -> None:
    settings = build_book(tmp_path, trusted_proxies=["127.0.0.1"])
    with running_api(settings) as running:
        refused = [
            local_http.post(
                f"{running}/api/search",
                json={"query": "quokka"},
                headers={"X-Forwarded-For": name},
                timeout=10,
            )
            for name in ("not-an-ip", "not-an-ip-either")
        ]
        health = local_http.get(f"{running}/api/health", headers={"X-Forwarded-For": "junk"}, timeout=10)
        good = local_http.post(
            f"{running}/api/search", json={"query": "quokka"}, headers={"X-Forwarded-For": "198.51.100.7"}
        )
    for response in refused:
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "malformed_request" and "X-Forwarded-For" in error["message"]
    assert health.status_code == 400
    assert good.status_code == 200


def test_readers_the_widget_names_behind_one_address_each_get_the_rate(tmp_path: Path) -> None:
    settings = build_book(tmp_path, rate_limit_per_minute=2, rate_limit_per_address_per_minute=5)

    def search(running: str, reader: str | None) -> int:
        headers = {"X-Bookwise-Reader": reader} if reader else {}
        return local_http.post(
            f"{running}/api/search", json={"query": "quokka"}, headers=headers, timeout=30
        ).status_code

    with running_api(settings) as running:
        away_from_a_minute_boundary()
        named = [search(running, f"student-{n}-0123456789") for n in (1, 1, 2, 2, 3)]
        over = search(running, "student-1-0123456789")
        ceiling = search(running, "student-4-0123456789")
        unnamed = [search(running, None) for _ in range(3)]
    assert named == [200] * 5  # five requests of three readers from one address, past the old limit of 2
    assert (over, ceiling) == (429, 429)  # a reader's own rate, then the address's ceiling
    assert unnamed == [200, 200, 429]  # a caller without the id is the address, as before
