"""The red-team pass's connection attacks against `bookwise serve` on loopback, with its default limits.

Starts `bookwise serve` (no index needed: `/api/health` answers without one), then: four headers
that never end (up to 100 MB each) and the server's memory before and after; 1,100 idle connections
from one address (127.0.0.2) and whether `/api/health` still answers from another (127.0.0.1), and
when the server closes them.

    python scripts/bench_http_limits.py
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
ATTACKER = "127.0.0.2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return int(status.split("VmRSS:")[1].split()[0]) // 1024


def endless_header(port: int) -> int:
    """MB sent before the server answered; the server's status line is printed."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = 0
        try:
            while sent < 100 and not select.select([sock], [], [], 0)[0]:
                sock.sendall(b"a" * (1 << 20))
                sent += 1
            answer = sock.recv(200).split(b"\r\n")[0].decode()
        except OSError as error:
            answer = type(error).__name__
    print(f"  endless header: the server stopped it after {sent} MB sent: {answer}")
    return sent


def idle_connections(url: str, port: int, count: int) -> None:
    idle = [
        socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(ATTACKER, 0))
        for _ in range(count)
    ]
    started = time.monotonic()
    health = httpx.get(f"{url}/api/health", timeout=30)
    print(f"  /api/health beside {count} idle: {health.status_code} in {time.monotonic() - started:.2f} s")
    started = time.monotonic()
    closed = sum(sock.recv(1) == b"" for sock in idle)
    print(
        f"  {closed}/{count} idle connections closed by the server within {time.monotonic() - started:.1f} s"
    )
    for sock in idle:
        sock.close()
    print(f"  /api/health after: {httpx.get(f'{url}/api/health', timeout=30).status_code}")


def main() -> int:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = {
            **os.environ,
            "BOOKWISE_DATA_DIR": data,
            "BOOKWISE_EMBEDDING_PROVIDER": "hash",
            "PYTHONPATH": str(ROOT / "backend"),
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "bookwise.cli", "serve", "--port", str(port)],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{url}/api/health", timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            before = rss_mb(server.pid)
            for _ in range(4):
                endless_header(port)
            print(f"  server memory: {before} MB before, {rss_mb(server.pid)} MB after")
            idle_connections(url, port, 1100)
        finally:
            server.terminate()
            server.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
