"""The request rate shared through a real redis-server: two limiters, two `bookwise serve` processes,
and what happens while Redis is down or stalled."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import bookwise
import local_http
from apiserver import build_book, wait_until_serving
from bookwise.api.limits import RateLimiter
from bookwise.errors import RateLimitedError
from bookwise.index.edge.copies import copy_keeping_holes
from redisserver import RedisServer, running_redis
from servers import HOST, away_from_a_minute_boundary, closed_port_url

BOOKWISE = [sys.executable, "-m", "bookwise.cli"]


async def outcomes(limiter: RateLimiter, client: str, n: int) -> list[int]:
    codes = []
    for _ in range(n):
        try:
            await limiter.check(client)
            codes.append(200)
        except RateLimitedError as error:
            assert error.retry_after is not None and 1 <= error.retry_after <= 60
            codes.append(429)
    return codes


def test_two_limiters_share_one_limit_through_redis() -> None:
    async def run(url: str) -> None:
        a, b = (RateLimiter(10, redis_url=url) for _ in range(2))
        try:
            assert await outcomes(a, "198.51.100.7", 6) == [200] * 6
            assert await outcomes(b, "198.51.100.7", 6) == [200] * 4 + [429] * 2
            assert await outcomes(b, "198.51.100.8", 1) == [200]  # per client
        finally:
            await a.aclose()
            await b.aclose()

    with running_redis() as redis:
        away_from_a_minute_boundary()
        asyncio.run(run(redis.url))
        assert redis.command("DBSIZE") != ":0"  # the counts are in Redis, not in the processes


def test_redis_down_falls_back_to_the_per_process_limit_and_comes_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bookwise")

    def messages() -> list[str]:
        return [r.getMessage() for r in caplog.records]

    async def run(redis: RedisServer) -> None:
        limiter = RateLimiter(3, redis_url=redis.url)
        limiter.REDIS_RETRY_S = 0.0  # try Redis again on every request
        try:
            assert await outcomes(limiter, "c", 2) == [200, 200]  # counted in Redis
            redis.stop()
            # Fail open to this process's own count: still a limit, never a 5xx.
            assert await outcomes(limiter, "c", 4) == [200] * 3 + [429]
            downs = [r for r in caplog.records if r.getMessage() == "rate_limit_redis_down"]
            assert len(downs) == 1 and downs[0].levelno == logging.WARNING  # once per outage
            assert downs[0].fields["error"] == "ConnectionError"  # type: ignore[attr-defined]
            with running_redis(port=redis.port):  # back, empty: counted in Redis again
                assert await outcomes(limiter, "c", 4) == [200] * 3 + [429]
                assert messages().count("rate_limit_redis_up") == 1
        finally:
            await limiter.aclose()

    with running_redis() as redis:
        away_from_a_minute_boundary()
        asyncio.run(run(redis))


def test_a_stalled_redis_costs_a_request_at_most_the_redis_timeout(caplog: pytest.LogCaptureFixture) -> None:
    async def run(port: int) -> None:
        limiter = RateLimiter(2, redis_url=f"redis://{HOST}:{port}", redis_timeout_s=0.2)
        try:
            assert await outcomes(limiter, "d", 3) == [200, 200, 429]  # the first waits, then the retry delay
        finally:
            await limiter.aclose()

    # A peer that accepts connections and never answers (a hung Redis, a black-holed route).
    with socket.create_server((HOST, 0)) as silent:
        asyncio.run(run(silent.getsockname()[1]))
    down = next(r for r in caplog.records if r.getMessage() == "rate_limit_redis_down")
    assert down.fields["error"] == "TimeoutError"  # type: ignore[attr-defined]


@contextmanager
def serving(root: Path, redis_url: str, count: int) -> Iterator[list[tuple[str, Path]]]:
    """`count` `bookwise serve` processes, each on its own copy of one index (only the rate is
    shared), started together; yields each one's URL and the file its log goes to."""
    build_book(root / "0")
    processes, served = [], []
    try:
        for n in range(count):
            if n:
                shutil.copytree(root / "0" / "data", root / str(n) / "data", copy_function=copy_keeping_holes)
            port = closed_port_url().rsplit(":", 1)[1]
            env = {
                **os.environ,
                "BOOKWISE_DATA_DIR": str(root / str(n) / "data"),
                "BOOKWISE_EMBEDDING_PROVIDER": "hash",
                "BOOKWISE_SUFFICIENCY_THRESHOLD": "0",
                "BOOKWISE_RATE_LIMIT_PER_MINUTE": "10",
                "BOOKWISE_REDIS_URL": redis_url,
                # The bookwise under test, whatever the working directory (a relative PYTHONPATH would not).
                "PYTHONPATH": os.pathsep.join(
                    [str(Path(bookwise.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
                ),
            }
            log = root / str(n) / "serve.log"
            with log.open("w") as stderr:
                processes.append(
                    subprocess.Popen(
                        [*BOOKWISE, "serve", "--port", port], env=env, cwd=root / str(n), stderr=stderr
                    )
                )
            served.append((f"http://{HOST}:{port}", log))
        for process, (url, _) in zip(processes, served, strict=True):
            wait_until_serving(url, process)
        yield served
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(15)


def search(url: str) -> httpx.Response:
    return local_http.post(f"{url}/api/search", json={"query": "What do quokkas eat?"}, timeout=10)


def test_limits_are_shared_by_two_serve_processes_through_redis(tmp_path: Path) -> None:
    # The bug: each process counted on its own, so N replicas allowed N times the limit.
    with running_redis() as redis:
        with serving(tmp_path, redis.url, 2) as [(a, log_a), (b, _)]:
            away_from_a_minute_boundary()
            answers = [search(a) for _ in range(6)] + [search(b) for _ in range(6)]
            assert [r.status_code for r in answers] == [200] * 10 + [429] * 2
            refused = answers[-1]
            assert refused.json()["error"]["code"] == "rate_limited"
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            redis.stop()
            # Redis down: A answers again, counting on its own, and says so in its log.
            assert search(a).status_code == 200
    assert '"event": "rate_limit_redis_down"' in log_a.read_text()
