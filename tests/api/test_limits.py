from __future__ import annotations

import pytest

from bookwise.api.limits import RateLimiter, StreamSlots, parse_networks
from bookwise.errors import ConfigError, RateLimitedError, ServerBusyError, TooManyStreamsError


def test_bad_proxy_setting_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="trusted_proxies"):
        parse_networks(["not-an-ip"])


def test_rate_limiter_counts_per_client() -> None:
    limiter = RateLimiter(per_minute=2)
    limiter.check("a")
    limiter.check("a")
    limiter.check("b")
    with pytest.raises(RateLimitedError) as raised:
        limiter.check("a")
    assert raised.value.retry_after is not None and 1 <= raised.value.retry_after <= 60


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
