"""`bookwise serve` and `bookwise ask` as a user runs them: real processes, real sockets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import local_http
from apiserver import build_book, wait_until_serving
from fakellm import running_fake_llm
from servers import closed_port_url

BOOKWISE = [sys.executable, "-m", "bookwise.cli"]


def env_for(root: Path, **extra: str) -> dict[str, str]:
    build_book(root)
    return {
        **os.environ,
        "BOOKWISE_DATA_DIR": str(root / "data"),
        "BOOKWISE_EMBEDDING_PROVIDER": "hash",
        "BOOKWISE_SUFFICIENCY_THRESHOLD": "0",
        **extra,
    }


def test_serve_answers_over_http_and_logs_json_lines_with_request_ids(tmp_path: Path) -> None:
    port = closed_port_url().rsplit(":", 1)[1]
    process = subprocess.Popen(
        [*BOOKWISE, "serve", "--port", port],
        env=env_for(tmp_path, BOOKWISE_HTTP_REQUEST_TIMEOUT_S="0.5"),
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, process)
        response = local_http.post(
            f"{url}/api/chat",
            json={"question": "What do quokkas eat?"},
            headers={"X-Request-ID": "req-12345678"},
        )
        assert response.status_code == 200 and "event: done" in response.text
        assert response.headers["x-client-request-id"] == "req-12345678"  # echoed, not adopted
        answer_id = response.headers["x-request-id"]
        assert local_http.get(f"{url}/widget.js").headers["content-type"].startswith("text/javascript")
        # The server's limits are the settings' (bookwise/api/server.py): an idle connection is closed
        # at the request timeout, and HTTP without Host is refused in the JSON error shape.
        with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as idle:
            assert idle.recv(1) == b""
        with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as hostless:
            hostless.sendall(b"GET /api/health HTTP/1.1\r\n\r\n")
            answer = b""
            while chunk := hostless.recv(4096):
                answer += chunk
            assert b'"code": "malformed_request"' in answer
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=15)
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]  # only JSON lines
    chats = [line for line in lines if line["event"] == "chat"]
    assert chats and chats[0]["request_id"] == answer_id and chats[0]["outcome"] == "done"
    assert chats[0]["client_request_id"] == "req-12345678"
    assert "What do quokkas eat" not in stderr  # questions are not logged, only their length


def test_ask_streams_an_answer_with_sources_in_the_terminal(tmp_path: Path) -> None:
    result = subprocess.run(
        [*BOOKWISE, "ask", "What do quokkas eat in the morning?"],
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "> Quokkas eat leaves of the peppermint shrub every morning. Offer fresh" in result.stdout
    assert "*[1] Feeding quokkas › Morning feed  /docs/care/feeding#morning-feed" in result.stdout


def test_ask_with_a_fake_llm_and_a_selection_prints_json_events(tmp_path: Path) -> None:
    with running_fake_llm() as (fake, llm_url):
        fake.tokens = ["Before", " sunrise [1]."]
        result = subprocess.run(
            [*BOOKWISE, "ask", "When?", "--selected-text", "Offer clean water before sunrise.", "--json"],
            env=env_for(tmp_path, BOOKWISE_LLM_BASE_URL=llm_url),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["meta", "sources", "token", "token", "done"]
    assert events[-1]["data"]["citations"] == [1]
    assert "<selection" in fake.last_request["messages"][-1]["content"]


def test_ask_reports_llm_failure_with_exit_1(tmp_path: Path) -> None:
    result = subprocess.run(
        [*BOOKWISE, "ask", "What do quokkas eat?"],
        env=env_for(tmp_path, BOOKWISE_LLM_BASE_URL=closed_port_url() + "/v1", BOOKWISE_LLM_MAX_RETRIES="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and "error [llm_unavailable]" in result.stderr
