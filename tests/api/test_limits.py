from __future__ import annotations

import asyncio

import pytest

from bookwise.api.limits import RateLimiter, StreamSlots, WindowCounts, parse_networks, reader_id
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


def refused_reader(limiter: RateLimiter, client: str, reader: str) -> RateLimitedError | None:
    try:
        asyncio.run(limiter.check(client, reader))
    except RateLimitedError as error:
        return error
    return None


def test_a_classroom_behind_one_address_is_not_one_client_regression() -> None:
    """Ten readers of one school address got "at most 30 per minute" between them: each reader the
    widget names now has the per-client rate, and all of them together the address's ceiling."""
    limiter = RateLimiter(per_minute=2, per_address_per_minute=5)
    school = "192.0.2.7"
    assert [refused_reader(limiter, school, f"reader-{n:02d}-0123456789") for n in (1, 1, 2, 2)] == [None] * 4
    over_own = refused_reader(limiter, school, "reader-01-0123456789")
    assert over_own is not None and str(over_own) == "too many requests: at most 2 per minute"
    assert refused_reader(limiter, school, "reader-03-0123456789") is None  # the address's fifth
    ceiling = refused_reader(limiter, school, "reader-04-0123456789")  # a new id buys no more than that
    assert ceiling is not None and str(ceiling) == "too many requests: at most 5 per minute from this address"
    assert refused_reader(limiter, "192.0.2.8", "reader-04-0123456789") is None  # another address


def test_requests_without_a_reader_id_share_the_address_as_before() -> None:
    limiter = RateLimiter(per_minute=2, per_address_per_minute=100)
    assert refused(limiter, "192.0.2.7") is None and refused(limiter, "192.0.2.7") is None
    assert refused(limiter, "192.0.2.7") is not None


def test_reader_id_is_taken_only_in_its_own_shape() -> None:
    assert reader_id("Zm9vYmFyYmF6cXV4cXV1eA") == "Zm9vYmFyYmF6cXV4cXV1eA"
    assert [
        reader_id(value) for value in (None, "", "short", "x" * 65, "has space in it 0123", "é" * 20)
    ] == [""] * 6


def test_named_readers_stream_apart_under_the_addresses_ceiling() -> None:
    slots = StreamSlots(per_client=1, total=100, per_address=3)
    slots.acquire("192.0.2.7", "reader-a-0123456789ab")
    with pytest.raises(TooManyStreamsError, match="per client"):
        slots.acquire("192.0.2.7", "reader-a-0123456789ab")
    slots.acquire("192.0.2.7", "reader-b-0123456789ab")
    slots.acquire("192.0.2.7", "reader-c-0123456789ab")
    with pytest.raises(TooManyStreamsError, match="from this address"):
        slots.acquire("192.0.2.7", "reader-d-0123456789ab")
    slots.acquire("192.0.2.7")  # the address itself, unnamed, is one more client
    slots.release("192.0.2.7", "reader-a-0123456789ab")
    slots.acquire("192.0.2.7", "reader-d-0123456789ab")  # a named reader's slot came back
    assert slots.active == 4
