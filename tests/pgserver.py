"""A real PostgreSQL server for tests: Debian's binaries, on loopback, a free port, a temporary directory.

``initdb`` refuses to run as root, so as root the cluster belongs to an unprivileged user (the
package's ``postgres`` user, else ``nobody``); its files live in a directory made theirs. Durability
is off (fsync, synchronous commit): the data dies with the test anyway, and starts are faster.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from servers import HOST, closed_port_url

SUPERUSER = "bookwise"


def postgres_bin() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` (Debian), else the folder of ``initdb`` on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    initdb = found[-1] if found else shutil.which("initdb")
    if initdb is None:  # scripts/setup-test-deps installs it: missing is an error, not a skip
        raise RuntimeError("PostgreSQL (initdb) is not installed; run scripts/setup-test-deps")
    return Path(initdb).parent


def _unprivileged_user() -> str | None:
    """Who runs the server: ourselves, unless we are root (initdb and postgres refuse root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root and there is no 'postgres' or 'nobody' user to run PostgreSQL as")


@dataclass
class PostgresServer:
    port: int
    process: subprocess.Popen[bytes]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@{HOST}:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new, empty database; its URL (one per test keeps tests apart, in a few milliseconds)."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown: clients are disconnected
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@contextmanager
def running_postgres(start_timeout: float = 30.0) -> Iterator[PostgresServer]:
    """A fresh cluster on a free loopback port, stopped and deleted on exit."""
    bin_dir = postgres_bin()
    user = _unprivileged_user()
    with tempfile.TemporaryDirectory(prefix="bookwise-pg-") as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (root, data):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        initdb = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8"]
            + ["--locale=C", "--no-sync", "--no-instructions"],
            user=user,
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed: {initdb.stderr.strip() or initdb.stdout.strip()}")
        port = int(closed_port_url().rsplit(":", 1)[1])
        settings = {
            "listen_addresses": HOST,
            "port": str(port),
            "unix_socket_directories": str(root),  # not /var/run/postgresql, which may not be ours
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "16MB",
            "max_connections": "50",
        }
        process = subprocess.Popen(
            [str(bin_dir / "postgres"), "-D", str(data)]
            + [arg for name, value in settings.items() for arg in ("-c", f"{name}={value}")],
            user=user,
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = PostgresServer(port, process)
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                try:
                    with psycopg.connect(server.url(), connect_timeout=2):
                        break
                except psycopg.OperationalError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not start on port {port}")
                time.sleep(0.05)
            yield server
        finally:
            server.stop()
