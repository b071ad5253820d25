"""Who the client is, and how much it may ask: per-IP request rate and concurrent answer streams.

The client is the scope's client address: the socket peer, or, when the peer is one of the trusted
proxies, the first untrusted hop of ``X-Forwarded-For`` walked right to left (uvicorn's
ProxyHeadersMiddleware, given these networks by ``server.py``). ``is_trusted`` serves the
per-client connection cap, which counts sockets before any header is read.
State is in memory, per process: several replicas need limits at the load balancer or a shared store.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import deque
from collections.abc import Sequence

from bookwise.errors import ConfigError, RateLimitedError, ServerBusyError, TooManyStreamsError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
WINDOW_S = 60.0
MAX_TRACKED_CLIENTS = 50_000  # beyond, idle clients are forgotten first


def parse_networks(entries: Sequence[str]) -> list[Network]:
    try:
        return [ipaddress.ip_network(entry.strip(), strict=False) for entry in entries]
    except ValueError as error:
        raise ConfigError(f"trusted_proxies: {error}") from error


def is_trusted(address: str, networks: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


class RateLimiter:
    """A sliding one-minute window per client."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        now = time.monotonic()
        with self._lock:
            stamps = self._seen.get(client)
            if stamps is None:
                if len(self._seen) >= MAX_TRACKED_CLIENTS:
                    self._forget_idle(now)
                stamps = self._seen[client] = deque()
            while stamps and now - stamps[0] >= WINDOW_S:
                stamps.popleft()
            if len(stamps) >= self.per_minute:
                wait = math.ceil(WINDOW_S - (now - stamps[0]))
                raise RateLimitedError(
                    f"too many requests: at most {self.per_minute} per minute", retry_after=max(wait, 1)
                )
            stamps.append(now)

    def _forget_idle(self, now: float) -> None:
        for client in [c for c, s in self._seen.items() if not s or now - s[-1] >= WINDOW_S]:
            del self._seen[client]


class StreamSlots:
    """Concurrent answer streams, per client and in total; a full server answers 503 at once."""

    def __init__(self, per_client: int, total: int) -> None:
        self.per_client = per_client
        self.total = total
        self._open: dict[str, int] = {}
        self._count = 0
        self._lock = threading.Lock()

    @property
    def active(self) -> int:
        return self._count

    def acquire(self, client: str) -> None:
        with self._lock:
            if self._count >= self.total:
                raise ServerBusyError("the server is answering too many questions; try again", retry_after=2)
            if self._open.get(client, 0) >= self.per_client:
                raise TooManyStreamsError(
                    f"at most {self.per_client} answers may stream at once per client", retry_after=1
                )
            self._open[client] = self._open.get(client, 0) + 1
            self._count += 1

    def release(self, client: str) -> None:
        with self._lock:
            remaining = self._open.get(client, 0) - 1
            if remaining > 0:
                self._open[client] = remaining
            else:
                self._open.pop(client, None)
            self._count = max(self._count - 1, 0)
