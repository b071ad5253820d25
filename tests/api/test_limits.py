from __future__ import annotations

import asyncio

import pytest

from bookwise.api.limits import RateLimiter, StreamSlots, WindowCounts, parse_networks
from bookwise.errors import ConfigError, RateLimitedError, ServerBusyError, TooManyStreamsError


def test_bad_proxy_setting_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="trusted_proxies"):
        parse_networks(["not-an-ip"])


class Clock:
    """A clock the test moves: window expiry without sleeping through a minute."""

    def __init__(self, now: float = 6_000_000.0) -> None:  # the start of a one-minute window
        self.now = now

    def __call__(self) -> float:
        return self.now


def refused(limiter: RateLimiter, client: str) -> RateLimitedError | None:
    try:
        asyncio.run(limiter.check(client))
    except RateLimitedError as error:
        return error
    return None


def test_rate_limiter_counts_per_client() -> None:
    limiter = RateLimiter(per_minute=2)
    assert refused(limiter, "a") is None and refused(limiter, "a") is None
    assert refused(limiter, "b") is None
    error = refused(limiter, "a")
    assert error is not None and error.code == "rate_limited" and error.status_code == 429
    assert error.retry_after is not None and 1 <= error.retry_after <= 60
    assert str(error) == "too many requests: at most 2 per minute"


def test_rate_limit_window_slides_and_expires() -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=4, local=WindowCounts(max_keys=100, clock=clock))
    assert [refused(limiter, "a") is None for _ in range(5)] == [True] * 4 + [False]
    clock.now += 60 + 15  # a quarter into the next window: the previous one still weighs 3/4 (3 of 4)
    assert refused(limiter, "a") is None
    assert refused(limiter, "a") is not None
    clock.now += 30  # three quarters in: the previous window weighs 1/4 (1), plus the 1 counted
    assert refused(limiter, "a") is None and refused(limiter, "a") is None
    assert refused(limiter, "a") is not None
    clock.now += 120  # two windows later nothing is left
    assert [refused(limiter, "a") is None for _ in range(5)] == [True] * 4 + [False]


def test_rate_limiter_memory_is_bounded_however_many_clients() -> None:
    # The bug: the hand-written limiter kept every client of the minute and swept them all under a lock.
    clock = Clock()
    counts = WindowCounts(max_keys=1_000, clock=clock)
    limiter = RateLimiter(per_minute=1, local=counts)
    for n in range(5_000):
        asyncio.run(limiter.check(f"2001:db8::{n:x}"))
    assert len(counts) == 1_000  # the cap, the clients seen first forgotten first
    assert refused(limiter, "2001:db8::0") is None  # forgotten: counted afresh
    assert refused(limiter, "2001:db8::1387") is not None  # still counted
    clock.now += 60
    assert len(counts) == 1_000  # this window's counts became the previous one's
    asyncio.run(limiter.check("2001:db8::new"))
    clock.now += 60
    asyncio.run(limiter.check("2001:db8::newer"))
    assert len(counts) == 2  # older windows were dropped whole, without visiting their keys


def test_bad_redis_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="redis_url"):
        RateLimiter(per_minute=1, redis_url="http://127.0.0.1:6379")


def test_stream_slots_cap_per_client_and_in_total() -> None:
    slots = StreamSlots(per_client=1, total=2)
    slots.acquire("a")
    with pytest.raises(TooManyStreamsError):
        slots.acquire("a")
    slots.acquire("b")
    with pytest.raises(ServerBusyError):
        slots.acquire("c")
    slots.release("a")
    slots.acquire("c")
    assert slots.active == 2
