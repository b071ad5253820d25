"""The server's own limits (bookwise/api/server.py), on a real uvicorn with raw sockets.

A red-team pass found every one of these connections open past 45 s with uvicorn + httptools: idle, slow
headers, a never-ending chunked body, a body shorter than its Content-Length; 1,100 idle connections
made `/api/health` unanswerable, and four unfinished 100 MB headers grew memory by 400 MB. Each test
holds such a connection against a short `BOOKWISE_HTTP_REQUEST_TIMEOUT_S`, sees the server close it,
and checks that serving goes on.
"""

from __future__ import annotations

import json
import resource
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import local_http
from apiserver import build_book, chat, hash_settings, running_api
from bookwise.api.server import ensure_file_limit
from fakellm import FakeLLM

REQUEST_TIMEOUT_S = 0.5
MAX_CONNECTIONS = 12
MAX_HEADER_BYTES = 4096
GIVE_UP_S = 5.0  # ten times the timeout: a connection still open then was never going to close


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    settings = build_book(
        tmp_path_factory.mktemp("limits"),
        llm_base_url=llm_server[1],
        http_request_timeout_s=REQUEST_TIMEOUT_S,
        http_max_connections=MAX_CONNECTIONS,
        http_max_header_bytes=MAX_HEADER_BYTES,
    )
    with running_api(settings) as running:
        yield running


def connect(url: str, source: str = "127.0.0.1") -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), GIVE_UP_S, source_address=(source, 0))


def closed_by_server(sock: socket.socket, wait: float = 0.0) -> bool:
    """True when the server has closed (EOF or reset), without blocking longer than ``wait``."""
    readable, _, _ = select.select([sock], [], [], wait)
    if not readable:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionError:
        return True


def read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sent before closing (a server that closes with unread input resets)."""
    data = b""
    with sock:
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return data


def json_error(raw: bytes) -> tuple[int, dict[str, Any], str]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = dict(line.decode().lower().split(": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
    assert headers["content-type"] == "application/json"
    return status, json.loads(body)["error"], headers["x-request-id"]


def trickle(sock: socket.socket, piece: bytes, every: float = 0.1) -> bool:
    """Send ``piece`` again and again; True once the server closed the connection."""
    deadline = time.monotonic() + GIVE_UP_S
    while time.monotonic() < deadline:
        try:
            sock.sendall(piece)
        except OSError:
            return True
        if closed_by_server(sock, every):
            return True
    return False


def assert_serving(url: str) -> None:
    assert local_http.get(f"{url}/api/health", timeout=GIVE_UP_S).status_code == 200


def test_idle_connection_is_closed_at_the_request_timeout(url: str) -> None:
    with connect(url) as sock:
        assert closed_by_server(sock, GIVE_UP_S)
    assert_serving(url)


def test_slow_headers_are_cut_at_the_request_timeout_though_bytes_keep_coming(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
        assert trickle(sock, b"X-Slow: y\r\n")
    assert_serving(url)


def test_never_ending_chunked_body_is_cut_at_the_request_timeout(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(
            b"POST /api/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        assert trickle(sock, b"1\r\n \r\n")
    assert_serving(url)


def test_body_shorter_than_its_content_length_is_cut_at_the_request_timeout(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(
            b"POST /api/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"query": "quo'
        )
        assert closed_by_server(sock, GIVE_UP_S)
    assert_serving(url)


def test_an_answer_streaming_longer_than_the_request_timeout_is_not_cut(url: str, fake: FakeLLM) -> None:
    fake.mode, fake.delay_s, fake.tokens = "slow", 0.15, ["Quokkas eat leaves [1]", "."] + [" ok"] * 6
    started = time.monotonic()
    stream = chat(url, {"question": "What do quokkas eat in the morning?"})
    assert time.monotonic() - started > 2 * REQUEST_TIMEOUT_S  # the stream did outlive the deadline
    assert stream.names()[-1] == "done" and fake.finished.is_set()


def test_keep_alive_connection_serves_requests_spread_past_the_request_timeout(url: str) -> None:
    with local_http.client(timeout=GIVE_UP_S) as client:  # one pooled connection, reused
        for _ in range(3):
            assert client.get(f"{url}/api/health").status_code == 200
            time.sleep(REQUEST_TIMEOUT_S * 0.6)


def test_unfinished_huge_header_is_refused_at_the_header_cap_not_buffered(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try:  # the server answers and closes long before 1 MB is sent
            for _ in range(256):
                sock.sendall(b"a" * 4096)
                if select.select([sock], [], [], 0)[0]:
                    break  # answered: stop sending, read it
        except OSError:
            pass
        status, error, request_id = json_error(read_to_close(sock))
    assert status == 400 and error["code"] == "malformed_request" and error["request_id"] == request_id
    assert_serving(url)


def test_three_thousand_headers_are_refused_at_the_header_cap(url: str) -> None:
    # The red team's 3,000 headers: counted by their bytes, refused like one huge header.
    headers = b"".join(b"X-H%d: v\r\n" % n for n in range(3000))
    with connect(url) as sock:
        try:
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        except OSError:
            pass  # closed while sending: the answer is already there
        status, error, request_id = json_error(read_to_close(sock))
    assert status == 400 and error["code"] == "malformed_request" and error["request_id"] == request_id
    assert_serving(url)


def test_idle_connections_beyond_the_cap_get_503_at_once_then_free_up_at_the_request_timeout(
    url: str,
) -> None:
    idle = [connect(url) for _ in range(MAX_CONNECTIONS)]
    try:
        busy = local_http.get(f"{url}/api/health", timeout=GIVE_UP_S)
        assert busy.status_code == 503  # uvicorn's own answer, at once: not a hang
        assert all(closed_by_server(sock, GIVE_UP_S) for sock in idle)
    finally:
        for sock in idle:
            sock.close()
    assert_serving(url)


@pytest.mark.parametrize("trusted", [False, True])
def test_one_address_cannot_hold_more_than_its_share_of_connections_and_others_are_served(
    tmp_path: Path, trusted: bool
) -> None:
    attacker = "127.0.0.2"  # another loopback address: a second client on the same machine
    settings = hash_settings(
        tmp_path,
        http_request_timeout_s=60,  # so that only the per-client cap can close anything here
        http_max_connections_per_client=4,
        trusted_proxies=[attacker] if trusted else [],
    )
    with running_api(settings) as url:
        held = [connect(url, attacker) for _ in range(4)]
        extra = connect(url, attacker)
        try:
            if trusted:  # a proxy's connections are many clients': its own limits apply
                assert not closed_by_server(extra, 0.2)
            else:
                assert closed_by_server(extra, GIVE_UP_S)
            assert not any(closed_by_server(sock) for sock in held)
            assert_serving(url)  # from 127.0.0.1
        finally:
            for sock in [*held, extra]:
                sock.close()
        with connect(url, attacker) as again:  # the share came back with the closed ones
            again.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert read_to_close(again).startswith(b"HTTP/1.1 200")


def test_http11_request_without_host_is_refused_with_a_json_400(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\n\r\n")
        status, error, _ = json_error(read_to_close(sock))
    assert status == 400 and error["code"] == "malformed_request"
    assert_serving(url)


@pytest.mark.parametrize("length", [b"abc", b"-1", b"5, 6"])
def test_bad_content_length_is_refused_in_the_json_error_shape(url: str, length: bytes) -> None:
    with connect(url) as sock:
        sock.sendall(b"POST /api/search HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n")
        status, error, _ = json_error(read_to_close(sock))
    assert status == 400 and error["code"] == "malformed_request"


def test_unknown_method_gets_a_json_405(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(b"BREW /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        status, error, _ = json_error(read_to_close(sock))
    assert status == 405 and error["code"] == "invalid_request"


def test_trailing_slash_with_a_foreign_host_is_a_json_404_not_a_redirect(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(b"GET /api/health/ HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        raw = read_to_close(sock)
    status, error, _ = json_error(raw)
    assert status == 404 and error["code"] == "not_found" and b"location:" not in raw.lower()


def test_file_limit_is_raised_to_fit_the_connection_cap(tmp_path: Path) -> None:
    """Past the open-file limit accept() fails and nothing is answered, /api/health included."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = hard if hard == resource.RLIM_INFINITY or hard >= 1200 else 1200
    try:  # a hard limit below the cap can be raised with CAP_SYS_RESOURCE (root, usually)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, room))
    except (OSError, ValueError):
        pytest.skip(f"hard file limit {hard} is below the test's cap and cannot be raised here")
    try:
        ensure_file_limit(hash_settings(tmp_path, http_max_connections=1100))
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 1100
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


UPLOAD_TOKEN = "upload-token-0123456789"
# The uploads' deadline: for the token's holder a deadline for silence, which a byte every 0.1 s keeps
# off. At 0.5 s one suite run on a loaded 2-core machine saw the sending test process paused past it.
UPLOAD_REQUEST_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def upload_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = build_book(
        tmp_path_factory.mktemp("upload-limits"),
        http_request_timeout_s=UPLOAD_REQUEST_TIMEOUT_S,
        admin_token=UPLOAD_TOKEN,
    )
    with running_api(settings) as running:
        yield running


def trickled_upload(url: str, token: str) -> bytes | None:
    """A 40-byte body sent a byte every 0.1 s (4 s, four request timeouts); the answer, or None when
    the server closed the connection before the body was through."""
    body = b"x" * 40
    with connect(url) as sock:
        sock.sendall(
            b"PUT /api/admin/index HTTP/1.1\r\nHost: x\r\nContent-Type: application/gzip\r\n"
            + f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        for byte in body[:-1]:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return None
            if closed_by_server(sock, 0.1):  # nothing is answered before the body is complete
                return None
        sock.sendall(body[-1:])
        return read_to_close(sock)


def test_a_slow_index_upload_by_the_token_holder_is_not_cut_at_the_request_timeout(upload_url: str) -> None:
    # A generation (with an adapted embedder, about 90 MB) can take longer than the request deadline
    # to arrive; for the admin token's holder the deadline counts silence, not the whole body.
    answer = trickled_upload(upload_url, UPLOAD_TOKEN)
    assert answer is not None, "the token holder's upload was cut while bytes kept coming"
    status, error, _ = json_error(answer)
    assert (status, error["code"]) == (422, "index_upload_invalid")  # 40 bytes of x are no archive
    assert_serving(upload_url)


def test_a_slow_index_upload_without_the_token_is_cut_at_the_request_timeout(upload_url: str) -> None:
    assert trickled_upload(upload_url, "not-the-token-at-all") is None
    assert_serving(upload_url)
