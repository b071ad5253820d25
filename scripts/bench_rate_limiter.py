"""Per-request cost and memory of the rate limiter at 100 to 1,000,000 distinct clients.

    PYTHONPATH=backend python scripts/bench_rate_limiter.py [--clients 100,10000,100000,1000000]

Each (limiter, clients) pair runs in a fresh process: it counts one request from each of N distinct
IPv6-like clients (the fill), then times requests from clients already counted and from new ones,
one at a time on an asyncio loop as the API calls it. Memory is the process's RSS growth over the
fill (in memory) or Redis's `used_memory` growth (Redis, started here on loopback like the tests').

Limiters:
  old            the hand-written limiter this replaced (a deque of timestamps per client, at most
                 50,000 clients, idle ones swept under a lock when full), copied here from git history
  limits-memory  limits' own MemoryStorage with its sliding window counter (a timer sweeps every key)
  memory         bookwise's RateLimiter in memory (limits' strategy over WindowCounts), awaited
  memory-thread  the same, called through asyncio.to_thread (what running it off the loop costs)
  redis          bookwise's RateLimiter with BOOKWISE_REDIS_URL (limits' async Redis storage)
  redis-thread   limits' synchronous Redis storage called through asyncio.to_thread
For Redis the fill writes each client's key in pipelines (what its first request writes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

filling = True
LIMITERS = ["old", "limits-memory", "memory", "memory-thread", "redis", "redis-thread"]
PER_MINUTE = 30
TIMED = 20_000  # requests timed per kind (existing, new clients); fewer where each is slow
OLD_CAP = 50_000


class OldRateLimiter:
    """The hand-written limiter before the shared one (bookwise/api/limits.py at 3bfbc32), for comparison."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str) -> bool:
        now = time.monotonic()
        with self._lock:
            stamps = self._seen.get(client)
            if stamps is None:
                if len(self._seen) >= OLD_CAP:
                    self._forget_idle(now)
                stamps = self._seen[client] = deque()
            while stamps and now - stamps[0] >= 60.0:
                stamps.popleft()
            if len(stamps) >= self.per_minute:
                return False
            stamps.append(now)
            return True

    def _forget_idle(self, now: float) -> None:
        for client in [c for c, s in self._seen.items() if not s or now - s[-1] >= 60.0]:
            del self._seen[client]


def client(n: int) -> str:
    return f"2001:db8:{(n >> 32) & 0xFFFF:x}:{(n >> 16) & 0xFFFF:x}:{n & 0xFFFF:x}::1"


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def redis_used_memory(url: str) -> int:
    import redis

    info = redis.Redis.from_url(url).info("memory")
    return int(info["used_memory"])


def build(
    kind: str, redis_url: str | None
) -> tuple[Callable[[str], Awaitable[object]], Callable[[], object]]:
    """(check one client, what to close)."""
    from limits import RateLimitItemPerMinute
    from limits.storage import MemoryStorage, RedisStorage
    from limits.strategies import SlidingWindowCounterRateLimiter

    from bookwise.api.limits import RateLimiter
    from bookwise.errors import RateLimitedError

    item = RateLimitItemPerMinute(PER_MINUTE, namespace="bookwise")
    if kind == "old":
        old = OldRateLimiter(PER_MINUTE)

        async def check_old(key: str) -> object:
            return old.check(key)

        return check_old, lambda: None
    if kind in ("limits-memory", "redis-thread"):
        storage = (
            MemoryStorage()
            if kind == "limits-memory"
            else RedisStorage(f"{redis_url}", key_prefix="bookwise")
        )
        strategy = SlidingWindowCounterRateLimiter(storage)
        if kind == "limits-memory":

            async def check_sync(key: str) -> object:
                return strategy.hit(item, key)

            return check_sync, lambda: None

        async def check_in_thread(key: str) -> object:
            return await asyncio.to_thread(strategy.hit, item, key)

        return check_in_thread, lambda: None
    limiter = RateLimiter(
        PER_MINUTE,
        max_clients=2_000_000,
        redis_url=redis_url if kind == "redis" else None,
        redis_timeout_s=10.0,  # the fill's bursts must not fall back to memory
    )

    async def check_new(key: str) -> object:
        try:
            await limiter.check(key)
        except RateLimitedError:
            return False
        return True

    if kind == "memory-thread":

        async def check_thread(key: str) -> object:
            if filling:  # the thread hop is what is timed, not a million of them in the fill
                return limiter.local.hit(limiter.item, key)
            return await asyncio.to_thread(limiter.local.hit, limiter.item, key)

        return check_thread, lambda: None

    async def close_new() -> None:
        assert not limiter._redis_down, "Redis fell back to memory: the figures would be the in-memory ones"
        await limiter.aclose()

    return check_new, close_new


def redis_key(client: str) -> str:
    """The key limits' Redis storage writes for a client's current window (checked after the fill)."""
    return f"bookwise:{{bookwise/{client}/{PER_MINUTE}/1/minute}}"


def fill_redis(url: str, keys: list[str]) -> None:
    """What one request from each client writes, pipelined: a million round trips would take an hour."""
    import redis

    connection = redis.Redis.from_url(url)
    for start in range(0, len(keys), 10_000):
        pipe = connection.pipeline(transaction=False)
        for key in keys[start : start + 10_000]:
            pipe.set(redis_key(key), 1, ex=120)
        pipe.execute()
    connection.close()


async def timed(check: Callable[[str], Awaitable[object]], keys: list[str]) -> list[float]:
    took = []
    for key in keys:
        started = time.perf_counter()
        await check(key)
        took.append(time.perf_counter() - started)
    return took


async def run_one(kind: str, clients: int, redis_url: str | None) -> dict[str, object]:
    check, close = build(kind, redis_url)
    keys = [client(n) for n in range(clients)]
    fresh = [client(clients + n) for n in range(TIMED)]
    before = redis_used_memory(redis_url) if kind.startswith("redis") else rss_bytes()
    fill_started = time.perf_counter()
    filled = min(clients, OLD_CAP) if kind == "old" else clients
    if kind.startswith("redis"):
        fill_redis(f"{redis_url}", keys)
    else:
        for key in keys[:filled]:
            await check(key)
    fill_s = time.perf_counter() - fill_started
    global filling
    filling = False
    grown = (redis_used_memory(redis_url) if kind.startswith("redis") else rss_bytes()) - before
    slow = kind == "old" and clients >= OLD_CAP or kind.startswith("redis") or kind.endswith("thread")
    count = 300 if kind == "old" and clients >= OLD_CAP else 2_000 if slow else TIMED
    counted_keys = random.Random(1).sample(keys[:filled], min(count, filled))
    counted = await timed(check, counted_keys)
    new = await timed(check, fresh[:count])
    if kind.startswith("redis"):  # the fill wrote the limiter's own keys: the timed requests counted on them
        import redis

        connection = redis.Redis.from_url(f"{redis_url}")
        key = redis_key(counted_keys[0])  # the current window's count, or the previous one after a minute
        counts = [int(connection.get(k) or 0) for k in (key, f"{key}/-1")]
        assert sum(counts) == 2, f"the fill's keys are not the limiter's: {counts}"
        connection.close()
    result = close()
    if asyncio.iscoroutine(result):
        await result
    return {
        "limiter": kind,
        "clients": clients,
        "counted_us": statistics.fmean(counted) * 1e6,
        "counted_p99_us": sorted(counted)[math.ceil(len(counted) * 0.99) - 1] * 1e6,
        "new_us": statistics.fmean(new) * 1e6,
        "fill_s": fill_s,
        "memory_mb": grown / 1e6,
        "note": f"table full at {OLD_CAP:,}" if kind == "old" and clients > OLD_CAP else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="100,10000,100000,1000000")
    parser.add_argument("--limiters", default=",".join(LIMITERS))
    parser.add_argument("--one", nargs=2, metavar=("LIMITER", "CLIENTS"), help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(run_one(args.one[0], int(args.one[1]), args.redis_url))))
        return

    from redisserver import running_redis

    sizes = [int(n) for n in args.clients.split(",")]
    print(
        f"{'limiter':<14} {'clients':>9} {'µs/request':>11} {'p99 µs':>9} {'new client µs':>14} "
        f"{'fill s':>7} {'memory MB':>10}  note"
    )
    with running_redis() as redis:
        for kind in args.limiters.split(","):
            for clients in sizes:
                redis.command("FLUSHALL")
                out = subprocess.run(
                    [sys.executable, __file__, "--one", kind, str(clients), "--redis-url", redis.url],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                row = json.loads(out.strip().splitlines()[-1])
                print(
                    f"{row['limiter']:<14} {row['clients']:>9,} {row['counted_us']:>11.1f} "
                    f"{row['counted_p99_us']:>9.1f} {row['new_us']:>14.1f} {row['fill_s']:>7.1f} "
                    f"{row['memory_mb']:>10.1f}  {row['note']}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
