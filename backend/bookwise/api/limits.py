"""Who the client is, and how much it may ask: per-IP request rate and concurrent answer streams.

The client is the scope's client address: the socket peer, or, when the peer is one of the trusted
proxies, the first untrusted hop of ``X-Forwarded-For`` walked right to left (uvicorn's
ProxyHeadersMiddleware, given these networks by ``server.py``). ``is_trusted`` serves the
per-client connection cap, which counts sockets before any header is read.
The request rate is counted by the `limits` library, in memory or in Redis shared by every process
(`RateLimiter`); concurrent answer streams are counted per process (`StreamSlots`).

Readers behind one address (a classroom, an office's NAT) are told apart by the anonymous id the widget
keeps per browser (``X-Bookwise-Reader``, `reader_id`): each counts as a client of its own, and all of
them together have a ceiling per address, so minting ids buys a client no more than that ceiling.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
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

_READER_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


def reader_id(header: str | None) -> str:
    """The widget's anonymous per-browser id, or "" when absent or not one (then the address is the
    client, as for any other caller)."""
    return header if header is not None and _READER_ID.fullmatch(header) else ""


def reader_key(client: str, reader: str) -> str:
    """What one reader is counted under: the address alone without an id."""
    return f"{client}#{reader}" if reader else client


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
        per_address_per_minute: int | None = None,
        max_clients: int = 100_000,
        redis_url: str | None = None,
        redis_timeout_s: float = 0.5,
        local: WindowCounts | None = None,
    ) -> None:
        self.per_minute = per_minute
        self.item = RateLimitItemPerMinute(per_minute, namespace="bookwise")
        # Named readers' requests per address, under a namespace of its own (one Redis for both).
        self.per_address_per_minute = per_address_per_minute
        self.address_item = (
            RateLimitItemPerMinute(per_address_per_minute, namespace="bookwise-address")
            if per_address_per_minute is not None
            else None
        )
        self.local = SlidingWindowCounterRateLimiter(
            local if local is not None else WindowCounts(max_clients)
        )
        self._pool = _redis_pool(redis_url, redis_timeout_s) if redis_url else None
        self.shared = _redis_limiter(self._pool) if self._pool is not None else None
        self._redis_retry_at = 0.0
        self._redis_down = False

    async def check(self, client: str, reader: str = "") -> None:
        """One request of ``client`` (an address), or of the reader the widget named behind it."""
        reset_time = await self._hit(self.item, reader_key(client, reader))
        if reset_time is not None:
            raise self._refusal(reset_time, f"at most {self.per_minute} per minute")
        if reader and self.address_item is not None:
            reset_time = await self._hit(self.address_item, client)
            if reset_time is not None:
                limit = f"at most {self.per_address_per_minute} per minute from this address"
                raise self._refusal(reset_time, limit)

    async def _hit(self, item: RateLimitItemPerMinute, key: str) -> float | None:
        """Count one hit; None when allowed, else when the window lets ``key`` in again."""
        if self.shared is not None and time.monotonic() >= self._redis_retry_at:
            try:
                if await self.shared.hit(item, key):
                    self._redis_up()
                    return None
                reset_time: float = (await self.shared.get_window_stats(item, key))[0]
            except (StorageError, OSError) as error:  # OSError: TimeoutError too
                self._redis_failed(error)
            else:
                self._redis_up()
                return reset_time
        if self.local.hit(item, key):
            return None
        return self.local.get_window_stats(item, key).reset_time

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    def _refusal(self, reset_time: float, limit: str) -> RateLimitedError:
        return RateLimitedError(
            f"too many requests: {limit}", retry_after=max(math.ceil(reset_time - time.time()), 1)
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
    """Concurrent answer streams, per client and in total; a full server answers 503 at once. A reader
    the widget names is a client of its own; the named readers behind one address share
    ``per_address``."""

    def __init__(self, per_client: int, total: int, per_address: int | None = None) -> None:
        self.per_client = per_client
        self.total = total
        self.per_address = per_address
        self._open: dict[str, int] = {}
        self._readers_open: dict[str, int] = {}  # named readers' streams, per address
        self._count = 0
        self._lock = threading.Lock()

    @property
    def active(self) -> int:
        return self._count

    def acquire(self, client: str, reader: str = "") -> None:
        key = reader_key(client, reader)
        with self._lock:
            if self._count >= self.total:
                raise ServerBusyError("the server is answering too many questions; try again", retry_after=2)
            if self._open.get(key, 0) >= self.per_client:
                raise TooManyStreamsError(
                    f"at most {self.per_client} answers may stream at once per client", retry_after=1
                )
            if reader and self.per_address is not None:
                if self._readers_open.get(client, 0) >= self.per_address:
                    raise TooManyStreamsError(
                        f"at most {self.per_address} answers may stream at once from this address",
                        retry_after=1,
                    )
                self._readers_open[client] = self._readers_open.get(client, 0) + 1
            self._open[key] = self._open.get(key, 0) + 1
            self._count += 1

    def release(self, client: str, reader: str = "") -> None:
        key = reader_key(client, reader)
        with self._lock:
            _decrement(self._open, key)
            if reader and self.per_address is not None:
                _decrement(self._readers_open, client)
            self._count = max(self._count - 1, 0)


def _decrement(counts: dict[str, int], key: str) -> None:
    remaining = counts.get(key, 0) - 1
    if remaining > 0:
        counts[key] = remaining
    else:
        counts.pop(key, None)
