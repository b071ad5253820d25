"""Two `bookwise serve` processes, as two replicas, writing one question log on a real PostgreSQL.

Both start at once on an empty database (one migrates, the other waits for it), answer and take
ratings concurrently, and every answer and rating is in the shared store once, counted as one
reader (both read the data dir's reader-hash key, made once by whichever came first).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import local_http
from apiserver import build_book, chat, cli_env, wait_until_serving
from bookwise.insights.factory import open_insights_store
from bookwise.insights.records import LogFilter
from bookwise.insights.sql import MIGRATIONS, SqlStore
from pgserver import PostgresServer
from servers import closed_port_url

ANSWERS_PER_SERVER = 12


def env_for(root: Path, database_url: str) -> dict[str, str]:
    return cli_env(
        root / "data",
        BOOKWISE_SUFFICIENCY_THRESHOLD="0",
        BOOKWISE_RATE_LIMIT_PER_MINUTE="100000",
        BOOKWISE_MAX_STREAMS_PER_CLIENT="50",
        BOOKWISE_QUESTION_LOG="true",
        BOOKWISE_INSIGHTS_DB_URL=database_url,
    )


@contextmanager
def servers(root: Path, database_url: str, count: int) -> Iterator[list[str]]:
    """``count`` serve processes started together (they migrate the empty database concurrently)."""
    with ExitStack() as stack:
        started = []
        for _ in range(count):
            port = closed_port_url().rsplit(":", 1)[1]
            process = subprocess.Popen(
                [sys.executable, "-m", "bookwise.cli", "serve", "--port", port],
                env=env_for(root, database_url),
                cwd=root,
                stderr=subprocess.PIPE,
                text=True,
            )
            stack.callback(stop, process)
            started.append((f"http://127.0.0.1:{port}", process))
        for url, process in started:
            wait_until_serving(url, process)
        yield [url for url, _ in started]


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()  # a graceful stop: the log's writer drains its queue
    try:
        _, errors = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert "question_log_write_failed" not in errors, errors


def answer_and_rate(url: str, n: int) -> str:
    stream = chat(url, {"question": f"What do quokkas eat? ({n})"})
    assert stream.names()[-1] == "done", stream.events
    request_id = str(stream.first("meta")["request_id"])
    body = {"request_id": request_id, "rating": "up" if n % 2 else "down", "question": "q", "answer": "a"}
    assert local_http.post(f"{url}/api/feedback", json=body, timeout=20).status_code == 201
    return request_id


def test_two_serve_processes_share_one_postgres_question_log(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    build_book(tmp_path)
    database = postgres.create_database()
    with servers(tmp_path, database, 2) as urls, ThreadPoolExecutor(8) as pool:
        jobs = [pool.submit(answer_and_rate, url, n) for n in range(ANSWERS_PER_SERVER) for url in urls]
        sent = {job.result() for job in jobs}
    assert len(sent) == 2 * ANSWERS_PER_SERVER
    store = open_insights_store(database)
    try:
        assert isinstance(store, SqlStore)
        logged = store.questions(LogFilter())
        rated = store.feedback(LogFilter())
        versions = [row["version"] for row in store.rows("schema_version")]
    finally:
        store.close()
    assert sorted(q.request_id for q in logged) == sorted(sent)  # each answer once, from either process
    assert sorted(f.request_id for f in rated) == sorted(sent)
    assert len({q.id for q in logged}) == len(logged)
    assert len({q.reader for q in logged}) == 1  # one client, one salt for both processes
    assert versions == [m.version for m in MIGRATIONS]  # migrated once, though both started together
