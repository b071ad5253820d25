"""Who the client is, and how much it may ask: per-IP request rate and concurrent answer streams.

The client is the scope's client address: the socket peer, or, when the peer is one of the trusted
proxies, the first untrusted hop of ``X-Forwarded-For`` walked right to left (uvicorn's
ProxyHeadersMiddleware, given these networks by ``server.py``). ``is_trusted`` serves the
per-client connection cap, which counts sockets before any header is read.
The request rate is counted by the `limits` library, in memory or in Redis shared by every process
(`RateLimiter`); concurrent answer streams are counted per process (`StreamSlots`).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from limits import RateLimitItemPerMinute
from limits.aio.storage import RedisStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter as AsyncSlidingWindowCounterRateLimiter
from limits.errors import StorageError
from limits.storage import SlidingWindowCounterSupport, Storage
from limits.strategies import SlidingWindowCounterRateLimiter

from bookwise.api.logs import log_event
from bookwise.errors import ConfigError, RateLimitedError, ServerBusyError, TooManyStreamsError

if TYPE_CHECKING:
    import redis.asyncio as aioredis

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Sequence[str]) -> list[Network]:
    try:
        return [ipaddress.ip_network(entry.strip(), strict=False) for entry in entries]
    except ValueError as error:
        raise ConfigError(f"trusted_proxies: {error}") from error


def client_key(address: str) -> str | None:
    """The one spelling of a client address that keys its limits, or None if it is not an address.

    ``2001:DB8::1`` and ``2001:0db8::0001`` are one client, and so are ``::ffff:192.0.2.1`` (an IPv4
    peer on a dual-stack socket) and ``192.0.2.1``; counting each spelling apart would let one client
    multiply its limits by rewording its address.
    """
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if ip.scope_id is not None:  # fe80::1%eth0: the zone names the host's interface, not the client
            return str(ipaddress.IPv6Address(int(ip)))
    return str(ip)


def is_trusted(address: str, networks: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


class WindowCounts(Storage, SlidingWindowCounterSupport):
    """In-memory storage for limits' sliding window counter: this and the previous window's counts.

    limits' own MemoryStorage drops expired keys by sweeping every key on a timer (every 10 ms while
    requests come), so its cost grows with the number of clients, and it has no cap. Here each request is
    O(1): when a window ends its counts become the previous window's and the older ones are dropped
    whole, and at most ``max_keys`` clients are counted per window (the one first seen longest ago is
    forgotten first), so memory stays under two windows of ``max_keys`` counts.
    """

    STORAGE_SCHEME = None  # built directly, not from a URI

    def __init__(self, max_keys: int, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.max_keys = max_keys
        self.clock = clock  # tests move it instead of sleeping through a window
        self._index = -1  # the window `_current` counts: int(now / expiry)
        self._previous: dict[str, int] = {}
        self._current: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._previous) + len(self._current)

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        with self._lock:
            previous, previous_left, current, _ = self._window(key, expiry)
            if math.floor(previous * previous_left / expiry + current) + amount > limit:
                return False
            if not current and len(self._current) >= self.max_keys:
                self._current.popitem(last=False)
            self._current[key] = current + amount
            return True

    def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        with self._lock:
            return self._window(key, expiry)

    def _window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        """(previous count, seconds it still weighs, current count, seconds until it expires), as limits'."""
        now = self.clock()
        index = int(now / expiry)
        if index != self._index:
            self._previous = self._current if index == self._index + 1 else {}
            self._current = OrderedDict()
            self._index = index
        left = expiry - now % expiry
        previous = self._previous.get(key, 0)
        return previous, left if previous else 0.0, self._current.get(key, 0), left + expiry

    def clear_sliding_window(self, key: str, expiry: int) -> None:
        with self._lock:
            self._previous.pop(key, None)
            self._current.pop(key, None)

    def reset(self) -> int | None:
        with self._lock:
            count = len(self)
            self._previous, self._current = {}, OrderedDict()
            return count

    def check(self) -> bool:
        return True

    # The fixed-window primitives: this storage serves the sliding window counter only.
    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        raise NotImplementedError

    def get(self, key: str) -> int:
        raise NotImplementedError

    def get_expiry(self, key: str) -> float:
        raise NotImplementedError

    def clear(self, key: str) -> None:
        raise NotImplementedError


class RateLimiter:
    """Requests per client per minute, with limits' sliding window counter.

    Counted in this process (`WindowCounts`) or, given a Redis URL, in Redis, shared by every process
    and replica that uses it (limits' async Redis storage: the event loop never waits on a socket).
    While Redis cannot be reached, each process counts on its own again (fail open to the per-process
    limit, with one warning per outage) and tries Redis again every ``REDIS_RETRY_S``.
    """

    REDIS_RETRY_S = 2.0

    def __init__(
        self,
        per_minute: int,
        *,
        max_clients: int = 100_000,
        redis_url: str | None = None,
        redis_timeout_s: float = 0.5,
        local: WindowCounts | None = None,
    ) -> None:
        self.per_minute = per_minute
        self.item = RateLimitItemPerMinute(per_minute, namespace="bookwise")
        self.local = SlidingWindowCounterRateLimiter(
            local if local is not None else WindowCounts(max_clients)
        )
        self._pool = _redis_pool(redis_url, redis_timeout_s) if redis_url else None
        self.shared = _redis_limiter(self._pool) if self._pool is not None else None
        self._redis_retry_at = 0.0
        self._redis_down = False

    async def check(self, client: str) -> None:
        if self.shared is not None and time.monotonic() >= self._redis_retry_at:
            try:
                allowed = await self.shared.hit(self.item, client)
                reset_time = 0.0 if allowed else (await self.shared.get_window_stats(self.item, client))[0]
            except (StorageError, OSError) as error:  # OSError: TimeoutError too
                self._redis_failed(error)
            else:
                self._redis_up()
                if not allowed:
                    raise self._refusal(reset_time)
                return
        if not self.local.hit(self.item, client):
            raise self._refusal(self.local.get_window_stats(self.item, client).reset_time)

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    def _refusal(self, reset_time: float) -> RateLimitedError:
        return RateLimitedError(
            f"too many requests: at most {self.per_minute} per minute",
            retry_after=max(math.ceil(reset_time - time.time()), 1),
        )

    def _redis_failed(self, error: Exception) -> None:
        self._redis_retry_at = time.monotonic() + self.REDIS_RETRY_S
        if not self._redis_down:
            self._redis_down = True
            cause = error.storage_error if isinstance(error, StorageError) else error
            log_event(
                "rate_limit_redis_down",
                logging.WARNING,
                error=type(cause).__name__,
                detail=str(cause),
                fallback="per-process limit",
            )

    def _redis_up(self) -> None:
        if self._redis_down:
            self._redis_down = False
            log_event("rate_limit_redis_up")


def _redis_pool(url: str, timeout_s: float) -> aioredis.ConnectionPool:
    """Our own pool (so it can be closed), with timeouts: how long a stalled Redis can delay a request."""
    import redis.asyncio as aioredis  # only with a Redis URL: the client takes a while to import

    try:
        return aioredis.ConnectionPool.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
    except ValueError as error:
        raise ConfigError(f"redis_url: {error}") from error


def _redis_limiter(pool: aioredis.ConnectionPool) -> AsyncSlidingWindowCounterRateLimiter:
    # The URI only selects limits' Redis storage; the connections come from the pool.
    storage = RedisStorage(
        "async+redis://",
        implementation="redispy",
        wrap_exceptions=True,
        key_prefix="bookwise",
        connection_pool=pool,  # type: ignore[arg-type]
    )
    return AsyncSlidingWindowCounterRateLimiter(storage)


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
