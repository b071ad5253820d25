"""`/metrics`: off by default, never public, counting what the API answered, across processes."""

from __future__ import annotations

import hmac
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import DEVNULL
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import bookwise
import local_http
from apiserver import build_book, chat, ingest_hashed, parse_sse, running_api, wait_until_serving
from bookwise.api import bearer as bearer_module
from bookwise.api.app import create_app
from bookwise.api.metrics.listener import start_metrics_listener
from bookwise.errors import ConfigError
from bookwise.settings import Settings
from fakellm import FakeLLM
from servers import closed_port_url

TOKEN = "s3cret-metrics-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
QUESTION = {"question": "What do quokkas eat in the morning?"}
BOOKWISE = [sys.executable, "-m", "bookwise.cli"]
Server = tuple[str, "subprocess.Popen[str]"]


def value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` whose labels include ``labels`` (0 when there are none)."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                total += sample.value
    return total


def scrape(url: str, headers: dict[str, str] | None = None) -> str:
    response = local_http.get(f"{url}/metrics", headers=AUTH if headers is None else headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


def counted(url: str, labels: dict[str, str], expected: float, within_s: float = 10) -> str:
    """A scrape once the requests already answered are counted: a request is counted just after its
    response is sent, so another process's last one may reach the shared directory a moment later."""
    deadline = time.monotonic() + within_s
    while True:
        text = scrape(url)
        if value(text, **labels) >= expected or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def free_port() -> int:
    return int(closed_port_url().rsplit(":", 1)[1])


def book(tmp_path: Path, **overrides: Any) -> Settings:
    return build_book(tmp_path, **({"metrics": True, "metrics_token": TOKEN} | overrides))


# -- never public ---------------------------------------------------------------------------------


def test_metrics_are_off_by_default_404(tmp_path: Path) -> None:
    with running_api(build_book(tmp_path)) as url:
        response = local_http.get(f"{url}/metrics", headers=AUTH)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_metrics_enabled_on_the_public_port_without_a_token_is_a_config_error(tmp_path: Path) -> None:
    settings = build_book(tmp_path, metrics=True)
    with pytest.raises(ConfigError, match="BOOKWISE_METRICS_TOKEN"):
        create_app(settings)
    # `bookwise serve` refuses to start, before binding anything.
    result = subprocess.run(
        [*BOOKWISE, "serve", "--port", str(free_port())],
        env=serve_env(tmp_path, BOOKWISE_METRICS="true"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "error [config_error]" in result.stderr
    assert "BOOKWISE_METRICS_PORT" in result.stderr


def test_metrics_on_the_api_port_need_the_bearer_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    constant_time = hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return constant_time(a, b)

    monkeypatch.setattr(bearer_module.hmac, "compare_digest", compare_digest)
    caplog.set_level(logging.DEBUG)
    with running_api(book(tmp_path)) as url:
        for headers in (
            {},
            {"Authorization": "Bearer wrong-token-wrong-token"},
            {"Authorization": f"Basic {TOKEN}"},
            {"Authorization": TOKEN},
        ):
            refused = local_http.get(f"{url}/metrics", headers=headers)
            assert refused.status_code == 401, headers
            assert refused.json()["error"]["code"] == "unauthorized"
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert refused.headers["x-request-id"] == refused.json()["error"]["request_id"]
            assert "bookwise_" not in refused.text
        text = scrape(url)
    assert "# TYPE bookwise_http_requests_total counter" in text
    # Only well-formed bearer headers reach the comparison, and it is the constant-time one.
    assert compared == [(b"wrong-token-wrong-token", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]
    assert TOKEN not in caplog.text


def test_separate_port_mode_serves_metrics_there_only(tmp_path: Path) -> None:
    port = free_port()
    settings = build_book(tmp_path, metrics=True, metrics_port=port)
    listener = start_metrics_listener(settings)
    assert listener is not None
    try:
        with running_api(settings) as url:
            assert local_http.get(f"{url}/metrics").status_code == 404  # not on the API's port
            assert local_http.get(f"{url}/api/health").status_code == 200
            text = scrape(f"http://127.0.0.1:{port}", headers={})
            assert value(text, "bookwise_http_requests_total", route="/api/health", code="ok") >= 1
            assert local_http.get(f"http://127.0.0.1:{port}/other").status_code == 404
    finally:
        listener.stop()
    # With a token, the separate listener wants it too.
    guarded = settings.model_copy(update={"metrics_token": Settings(metrics_token=TOKEN).metrics_token})
    listener = start_metrics_listener(guarded)
    assert listener is not None
    try:
        refused = local_http.get(f"http://127.0.0.1:{port}/metrics")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        assert "bookwise_answers_total" in scrape(f"http://127.0.0.1:{port}")
    finally:
        listener.stop()


# -- what is counted ------------------------------------------------------------------------------


def delta(url: str) -> Callable[..., float]:
    """A function giving how much a sample has grown since now (scraping again at each call)."""
    before = scrape(url)

    def grew(name: str, **labels: str) -> float:
        return value(scrape(url), name, **labels) - value(before, name, **labels)

    return grew


def test_counters_move_after_a_search_an_extractive_chat_and_refusals(tmp_path: Path) -> None:
    with running_api(book(tmp_path)) as url:
        grew = delta(url)
        assert local_http.post(f"{url}/api/search", json={"query": "quokka burrows"}).status_code == 200
        stream = chat(url, QUESTION)
        assert stream.names()[-1] == "done" and stream.first("done")["answer_kind"] == "extractive"
        assert local_http.post(f"{url}/api/search", json={"query": ""}).status_code == 422
        # Refused by the Guard before routing: still counted under the route it was for.
        assert local_http.post(f"{url}/api/chat", content=b"x").status_code == 415
        generation = local_http.get(f"{url}/api/ready").json()["index_version"]

        requests = "bookwise_http_requests_total"
        assert grew(requests, route="/api/search", method="POST", status="200", code="ok") == 1
        assert grew(requests, route="/api/search", status="422", code="invalid_request") == 1
        assert grew(requests, route="/api/chat", status="200", code="ok") == 1
        assert grew(requests, route="/api/chat", status="415", code="unsupported_media_type") == 1
        assert (
            grew("bookwise_answers_total", plan="extractive", answer_kind="extractive", outcome="done") == 1
        )
        sources = "bookwise_time_to_sources_seconds"
        assert grew(f"{sources}_count", plan="extractive") == 1
        assert grew(f"{sources}_bucket", plan="extractive", le="+Inf") == 1
        assert grew("bookwise_time_to_first_token_seconds_count", plan="extractive") == 1
        text = scrape(url)
    for bucket in ("0.05", "0.1", "0.15", "0.25", "1.0", "+Inf"):
        assert f'bookwise_time_to_sources_seconds_bucket{{le="{bucket}",plan="extractive"}}' in text
    assert value(text, "bookwise_index_generation_info", generation=generation) == 1
    assert value(text, "bookwise_stream_slots_in_use") == 0  # the chat's slot was given back


def test_the_index_generation_gauge_follows_a_reingest(tmp_path: Path) -> None:
    settings = book(tmp_path)
    with running_api(settings) as url:
        old = local_http.get(f"{url}/api/ready").json()["index_version"]
        feeding = tmp_path / "site" / "docs" / "care" / "feeding.md"
        feeding.write_text(feeding.read_text() + "\nQuokkas also nibble on saltbush.\n")
        ingest_hashed(settings, tmp_path / "site")
        assert local_http.post(f"{url}/api/search", json={"query": "saltbush"}).status_code == 200
        new = local_http.get(f"{url}/api/ready").json()["index_version"]
        assert new != old
        text = scrape(url)
    assert value(text, "bookwise_index_generation_info", generation=new) == 1
    assert value(text, "bookwise_index_generation_info", generation=old) == 0
    assert value(text, "bookwise_stream_slots_max") >= Settings(_env_file=None).max_streams  # type: ignore[call-arg]


def test_llm_answers_retries_and_errors_are_counted(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    settings = book(tmp_path, llm_base_url=llm_server[1], llm_max_retries=1, llm_retry_max_wait_s=0.05)
    fake.tokens = ["Peppermint", " leaves [1]."]
    with running_api(settings) as url:
        grew = delta(url)
        assert chat(url, QUESTION).first("done")["answer_kind"] == "generated"
        fake.mode, fake.fail_times, fake.retry_after = "500", fake.calls + 1, 0.05
        assert chat(url, QUESTION).names()[-1] == "done"  # after one retry
        fake.fail_times = None
        failed = chat(url, QUESTION)
        assert failed.first("error")["code"] == "llm_unavailable"  # two attempts, both refused
        # A follow-up is first rewritten by the model (not retried): the rewrite's failure is its own.
        history = [
            {"role": "user", "content": "Tell me about quokkas."},
            {"role": "assistant", "content": "Sure."},
        ]
        chat(url, {"question": "And what do they eat?", "history": history})

        assert grew("bookwise_answers_total", plan="llm", answer_kind="generated", outcome="done") == 2
        assert grew("bookwise_answers_total", plan="llm", answer_kind="none", outcome="llm_unavailable") == 2
        assert grew("bookwise_llm_retries_total", code="llm_unavailable") == 3
        assert grew("bookwise_llm_errors_total", call="answer", code="llm_unavailable") == 2
        assert grew("bookwise_llm_errors_total", call="rewrite", code="llm_unavailable") == 1
        assert grew("bookwise_time_to_first_token_seconds_count", plan="llm") == 2
        assert grew("bookwise_time_to_sources_seconds_count", plan="llm") == 4

        # A reader who leaves mid-answer: neither done nor error was sent.
        fake.mode, fake.stall_after = "stall", 1
        grew = delta(url)
        with local_http.client(timeout=10) as client:
            with client.stream("POST", f"{url}/api/chat", json=QUESTION) as response:
                events = parse_sse(response.iter_lines())
                assert [next(events)[0] for _ in range(3)] == ["meta", "sources", "token"]
        left = {"plan": "llm", "answer_kind": "none", "outcome": "client_disconnected"}
        deadline = time.monotonic() + 5
        while not grew("bookwise_answers_total", **left) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert grew("bookwise_answers_total", **left) == 1


# -- several processes ----------------------------------------------------------------------------


def serve_env(root: Path, **extra: str) -> dict[str, str]:
    """A `bookwise serve` environment: the test's index, nothing from the developer's BOOKWISE_*."""
    if not (root / "data").exists():
        build_book(root)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("BOOKWISE_", "PROMETHEUS_"))}
    return {
        **keep,
        "PYTHONPATH": str(Path(bookwise.__file__).parents[1]),  # this checkout's code, from any cwd
        "BOOKWISE_DATA_DIR": str(root / "data"),
        "BOOKWISE_EMBEDDING_PROVIDER": "hash",
        "BOOKWISE_SUFFICIENCY_THRESHOLD": "0",
        **extra,
    }


@contextmanager
def serving(root: Path, env: dict[str, str], count: int = 1) -> Iterator[list[Server]]:
    """``count`` `bookwise serve` processes, started together, once each answers `/api/health`."""
    servers: list[Server] = []
    for _ in range(count):
        port = free_port()
        command = [*BOOKWISE, "serve", "--port", str(port)]
        process = subprocess.Popen(command, env=env, cwd=root, stdout=DEVNULL, stderr=DEVNULL, text=True)
        servers.append((f"http://127.0.0.1:{port}", process))
    try:
        for url, process in servers:
            wait_until_serving(url, process, path="/api/health")
        yield servers
    finally:
        for _, process in servers:
            if process.poll() is None:
                process.terminate()
        for _, process in servers:
            process.wait(15)


def test_two_processes_writing_one_metrics_dir_are_summed(tmp_path: Path) -> None:
    shared = tmp_path / "metrics"
    shared.mkdir()
    env = serve_env(
        tmp_path,
        BOOKWISE_METRICS="true",
        BOOKWISE_METRICS_TOKEN=TOKEN,
        BOOKWISE_MAX_STREAMS="7",
        PROMETHEUS_MULTIPROC_DIR=str(shared),
    )
    # A route the start-up polls never ask: nothing is counted before the test's own requests.
    config = {"name": "bookwise_http_requests_total", "route": "/api/config", "code": "ok"}
    with serving(tmp_path, env, count=2) as [(first, one), (second, other)]:
        for url, times in ((first, 3), (second, 2)):
            for _ in range(times):
                assert local_http.get(f"{url}/api/config").status_code == 200
        for url in (first, second):  # either process serves the sum of both
            text = counted(url, config, 5)
            assert value(text, **config) == 5
            assert value(text, "bookwise_stream_slots_max") == 14
        other.send_signal(signal.SIGKILL)  # a crashed worker: no goodbye
        other.wait(10)
        text = scrape(first)
        assert value(text, "bookwise_stream_slots_max") == 7  # its live gauges are forgotten...
        assert value(text, **config) == 5  # ...its counters stay
        one.terminate()  # a clean exit takes its live gauges away itself
        one.wait(15)
    assert not list(shared.glob(f"gauge_livesum_{one.pid}.db"))
    assert list(shared.glob(f"counter_{one.pid}.db"))


def test_serve_with_a_metrics_port_has_one_listener_over_a_private_dir(tmp_path: Path) -> None:
    port, scratch = free_port(), tmp_path / "tmp"
    scratch.mkdir()
    env = serve_env(tmp_path, BOOKWISE_METRICS="true", BOOKWISE_METRICS_PORT=str(port), TMPDIR=str(scratch))
    with serving(tmp_path, env) as [(url, process)]:
        assert local_http.get(f"{url}/metrics").status_code == 404
        assert chat(url, QUESTION).names()[-1] == "done"
        text = scrape(f"http://127.0.0.1:{port}", headers={})
        assert value(text, "bookwise_answers_total", plan="extractive", outcome="done") == 1
        assert value(text, "bookwise_time_to_sources_seconds_count") == 1
        (private,) = scratch.glob("bookwise-metrics-*")  # the multiprocess mode's files, in a private dir
        assert list(private.glob(f"counter_{process.pid}.db"))
    # Stopped by SIGTERM, uvicorn raises it again and atexit never runs: the next start clears the dir.
    assert private.exists()
    prepare = (
        "from bookwise.api.metrics.directory import prepare_metrics_dir; "
        "from bookwise.settings import Settings; "
        "print(prepare_metrics_dir(Settings()))"
    )
    started = subprocess.run(
        [sys.executable, "-c", prepare], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 0, started.stderr
    assert not private.exists()
    assert not list(scratch.glob("bookwise-metrics-*"))  # and its own, removed at its (normal) exit


# -- the separate listener's own limits -----------------------------------------------------------


def test_metrics_listener_half_sent_requests_are_cut_and_capped(tmp_path: Path) -> None:
    """300 half-sent requests held 300 of its threads for 30 s and more: it had no deadline and no cap."""
    import socket
    import time

    port, cap = free_port(), 4
    settings = book(tmp_path, metrics_port=port, metrics_max_connections=cap, http_request_timeout_s=0.5)
    listener = start_metrics_listener(settings)
    assert listener is not None

    def closed(sock: socket.socket) -> bool:
        sock.settimeout(10)  # ample: the deadline is 0.5 s
        try:
            return sock.recv(1024) == b""
        except ConnectionError:
            return True

    held = [socket.create_connection(("127.0.0.1", port), 10) for _ in range(cap)]
    try:
        for sock in held:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
        refused = False
        while listener.refused == 0:  # until the cap is reached and one more is turned away
            with socket.create_connection(("127.0.0.1", port), 10) as extra:
                refused = closed(extra)
            time.sleep(0.05)
        assert refused
        trickled = held[-1]
        for _ in range(200):  # a byte at a time does not keep the request alive past its deadline
            try:
                trickled.sendall(b"X")
            except OSError:
                break
            time.sleep(0.05)
        assert all(closed(sock) for sock in held)  # each cut at the deadline
        scrape(f"http://127.0.0.1:{port}")  # serving again: 200, Prometheus text
    finally:
        for sock in held:
            sock.close()
        listener.stop()
