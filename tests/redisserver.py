"""A real redis-server for tests: on loopback, a free port, a temporary directory, nothing persisted."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from servers import HOST, closed_port_url

REDIS_SERVER = "redis-server"


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def command(self, *words: str) -> str:
        """One command over a raw socket (RESP), its reply's first line: no client library in the way."""
        request = f"*{len(words)}\r\n" + "".join(f"${len(w.encode())}\r\n{w}\r\n" for w in words)
        with socket.create_connection((HOST, self.port), timeout=5) as conn:
            conn.sendall(request.encode())
            return conn.makefile("rb").readline().decode().rstrip("\r\n")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@contextmanager
def running_redis(port: int = 0, start_timeout: float = 10.0) -> Iterator[RedisServer]:
    """redis-server on `port` (0: a free one), stopped on exit."""
    binary = shutil.which(REDIS_SERVER)
    if binary is None:  # scripts/setup-test-deps installs it: missing is an error, not a skip
        raise RuntimeError("redis-server is not installed; run scripts/setup-test-deps")
    with tempfile.TemporaryDirectory(prefix="bookwise-redis-") as tmp:
        port = port or int(closed_port_url().rsplit(":", 1)[1])
        process = subprocess.Popen(
            # "--save ''" as one argument: no snapshots; no append-only file either.
            [binary, "--port", str(port), "--bind", HOST, "--dir", tmp, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=Path(tmp),
        )
        server = RedisServer(port, process)
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                try:
                    if server.command("PING") == "+PONG":
                        break
                except OSError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}")
                time.sleep(0.02)
            yield server
        finally:
            server.stop()
