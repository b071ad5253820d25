from __future__ import annotations

import pytest

from bookwise.api.limits import RateLimiter, StreamSlots, client_ip, parse_networks
from bookwise.errors import ConfigError, RateLimitedError, ServerBusyError, TooManyStreamsError

PROXIES = parse_networks(["10.0.0.0/8", "192.168.1.1"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.5", "198.51.100.1", "203.0.113.5"),  # not a proxy: the header is ignored
        ("10.1.2.3", None, "10.1.2.3"),
        ("10.1.2.3", "198.51.100.1", "198.51.100.1"),
        ("10.1.2.3", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # prepended by the client: ignored
        ("10.1.2.3", "198.51.100.1, 192.168.1.1", "198.51.100.1"),  # two trusted hops
        ("10.1.2.3", "10.0.0.9, 10.0.0.8", "10.0.0.9"),  # all trusted: the farthest
        ("10.1.2.3", " , ", "10.1.2.3"),
    ],
)
def test_client_ip_walks_forwarded_for_past_trusted_proxies(
    peer: str, forwarded: str | None, client: str
) -> None:
    assert client_ip(peer, forwarded, PROXIES) == client


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
