"""Several processes on one embedded index: `bookwise serve` beside the CLI, two servers, workers.

Real processes on loopback, the hash embedder. Which generation a worker serves is read from the
outside, in ``/proc``: each reader holds a lock on the generation directory it serves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

import local_http
from apiserver import BOOK, build_book, cli_env, hash_settings, ingest_hashed, wait_until_serving
from servers import closed_port_url

BOOKWISE = [sys.executable, "-m", "bookwise.cli"]


def env_for(root: Path) -> dict[str, str]:
    return cli_env(
        root / "data",
        BOOKWISE_SUFFICIENCY_THRESHOLD="0",
        BOOKWISE_INDEX_REFRESH_S="0.2",
        BOOKWISE_RATE_LIMIT_PER_MINUTE="100000",
        BOOKWISE_MAX_STREAMS_PER_CLIENT="50",
    )


def generations_held(pid: int, data_dir: Path) -> set[str]:
    """The generation directories process ``pid`` has open (its readers' pins)."""
    held = set()
    prefix = str(data_dir / "index" / "generations") + "/"
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return held
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith(prefix) and "/" not in target[len(prefix) :]:
            held.add(target[len(prefix) :])
    return held


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]


def workers_serving(server: subprocess.Popen[str], data_dir: Path) -> dict[int, set[str]]:
    """Each worker process of ``server`` (those with an index open) and the generations it holds."""
    held = {pid: generations_held(pid, data_dir) for pid in children(server.pid)}
    return {pid: generations for pid, generations in held.items() if generations}


def live_generation(data_dir: Path) -> str:
    return str(json.loads((data_dir / "index" / "CURRENT").read_text())["generation"])


@contextmanager
def serving(root: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = closed_port_url().rsplit(":", 1)[1]
    process = subprocess.Popen(
        [*BOOKWISE, "serve", "--port", port, *args],
        env=env_for(root),
        cwd=root,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url, process
    finally:
        process.terminate()
        try:
            process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


# A wait, not a timing check: on 2 cores shared with a Docusaurus build and an ingest, a second worker
# took over 30 s to start serving (it imports the app and opens the index like any server).
WAIT_S = 120


def wait_for(condition: object, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def search(url: str, query: str = "What do quokkas eat?") -> httpx.Response:
    return local_http.post(f"{url}/api/search", json={"query": query}, timeout=20)


def test_cli_search_while_serve_runs_does_not_fail_with_store_unavailable(tmp_path: Path) -> None:
    build_book(tmp_path)
    with serving(tmp_path) as (url, _):
        assert search(url).status_code == 200
        env = env_for(tmp_path)
        found = subprocess.run(
            [*BOOKWISE, "search", "What do quokkas eat?"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert found.returncode == 0, found.stderr  # was: store_unavailable, Can't init WAL: WouldBlock
        assert "/docs/care/feeding" in found.stdout
        asked = subprocess.run(
            [*BOOKWISE, "ask", "What do quokkas eat?"], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert asked.returncode == 0, asked.stderr
        assert "peppermint" in asked.stdout.lower()
        assert search(url).status_code == 200  # the server still answers after the CLI is gone
    readers = tmp_path / "data" / "index" / "readers"
    assert not readers.exists() or not list(readers.iterdir())  # each private copy left with its process


def test_second_serve_on_the_same_data_dir_answers_instead_of_503(tmp_path: Path) -> None:
    build_book(tmp_path)
    with serving(tmp_path) as (first, _), serving(tmp_path) as (second, _):
        for url in (first, second):
            response = search(url)
            assert response.status_code == 200, response.text  # was: 503 store_unavailable on the second
            assert response.json()["sources"]


def test_serve_with_two_workers_serves_from_two_processes_on_one_port(tmp_path: Path) -> None:
    settings = build_book(tmp_path)
    with serving(tmp_path, "--workers", "2") as (url, server):
        wait_for(lambda: len(workers_serving(server, settings.data_dir)) == 2)
        live = live_generation(settings.data_dir)
        assert all(held == {live} for held in workers_serving(server, settings.data_dir).values())
        with local_http.client(timeout=20) as client:
            for _ in range(20):
                response = client.post(
                    f"{url}/api/chat",
                    json={"question": "What do quokkas eat?"},
                    headers={"Connection": "close"},
                )
                assert response.status_code == 200 and "event: done" in response.text


def test_reingest_while_two_workers_serve_fails_no_request_and_every_worker_switches(tmp_path: Path) -> None:
    settings = build_book(tmp_path)
    data_dir = settings.data_dir
    with serving(tmp_path, "--workers", "2") as (url, server):
        wait_for(lambda: len(workers_serving(server, data_dir)) == 2)
        old = live_generation(data_dir)
        failures: list[str] = []
        versions: list[str] = []
        stop = threading.Event()

        def steady_load() -> None:
            # A new connection per request: the kernel spreads them over both workers.
            while not stop.is_set():
                try:
                    response = local_http.post(
                        f"{url}/api/search",
                        json={"query": "What do quokkas eat?"},
                        headers={"Connection": "close"},
                        timeout=20,
                    )
                    if response.status_code != 200 or not response.json()["sources"]:
                        failures.append(f"{response.status_code} {response.text[:200]}")
                    else:
                        versions.append(response.json()["index_version"])
                except httpx.HTTPError as error:
                    failures.append(repr(error))

        load = [threading.Thread(target=steady_load) for _ in range(4)]
        for thread in load:
            thread.start()
        try:
            wait_for(lambda: len(versions) >= 20)
            feeding = tmp_path / "site" / "docs" / "care" / "feeding.md"
            feeding.write_text(BOOK["docs/care/feeding.md"] + "\n## Treats\n\nA slice of apple, rarely.\n")
            ingest_hashed(
                hash_settings(data_dir, chunk_max_tokens=60, chunk_overlap_tokens=12), tmp_path / "site"
            )
            new = live_generation(data_dir)
            assert new != old
            # Every worker moves to the new generation and lets go of the old one.
            wait_for(lambda: all(held == {new} for held in workers_serving(server, data_dir).values()))
            assert len(workers_serving(server, data_dir)) == 2
            served_new = len([v for v in versions if v == new])
            wait_for(lambda: len([v for v in versions if v == new]) >= served_new + 20)
        finally:
            stop.set()
            for thread in load:
                thread.join()
    assert failures == []
    assert old in versions and versions[-1] == new
