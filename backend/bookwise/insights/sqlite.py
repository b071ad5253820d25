"""The embedded store: one SQLite file in the data dir, WAL, its used space capped.

Bounded because anyone who can reach the API can post feedback and ask questions: over
``max_bytes``, a share of the oldest questions and ratings is deleted at once (deleted rows' pages are
reused, so the file stays near the cap once it reached it).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from bookwise.errors import InsightsStoreError
from bookwise.insights.sql import SQLITE_TIME, SqlStore

WAL_LIMIT_BYTES = 4_000_000  # the WAL file is truncated to this after a checkpoint
PRUNE_SHARE = 0.1  # over the cap, this share of the oldest rows goes at once (not one delete per post)


class SqliteStore(SqlStore):
    engine = "sqlite"
    column_types = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "ts": "TEXT", "float": "REAL"}

    def __init__(self, path: Path, *, max_bytes: int | None = None, busy_timeout_s: float = 5.0) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.RLock()  # one connection, shared by the API's worker threads
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s
            )
        except (sqlite3.Error, OSError) as error:
            raise _store_error(path, error) from error
        try:
            self._run("PRAGMA journal_mode=WAL")
            self._run("PRAGMA synchronous=FULL")  # a rating acknowledged is a rating kept
            self._run(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            self.migrate()
        except BaseException:
            self._db.close()
            raise

    def _run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except (sqlite3.Error, OSError) as error:
                raise _store_error(self.path, error) from error

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._lock:
            try:
                return self._db.execute(sql, params).rowcount
            except (sqlite3.Error, OSError) as error:
                raise _store_error(self.path, error) from error

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            if self._db.in_transaction:  # nested: the outer one commits
                yield
                return
            self._run("BEGIN IMMEDIATE")  # takes the write lock now: no upgrade deadlock between processes
            try:
                yield
                self._run("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # e.g. COMMIT failed on a full disk: never left open
                    self._db.rollback()
                raise

    def _db_time(self, when: datetime) -> object:
        return when.strftime(SQLITE_TIME)

    def _columns(self, table: str) -> list[str]:
        return [str(row[1]) for row in self._run(f"PRAGMA table_info({table})")]

    def used_bytes(self) -> int:
        """Pages in use (the file's size less its free pages)."""
        pages, free, size = (
            self._run(f"PRAGMA {name}")[0][0] for name in ("page_count", "freelist_count", "page_size")
        )
        return int((pages - free) * size)

    def _after_write(self) -> None:
        if self.max_bytes is None:
            return
        while self.used_bytes() > self.max_bytes:
            deleted = 0
            for table in ("questions", "feedback"):
                rows = int(self._run(f"SELECT count(*) FROM {table}")[0][0])
                if rows > 1:
                    deleted += self._count(
                        f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} ORDER BY id LIMIT ?)",
                        (max(1, int(rows * PRUNE_SHARE)),),
                    )
            if not deleted:  # the last row alone is over the cap: keep it
                return

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _store_error(path: Path, error: BaseException) -> InsightsStoreError:
    return InsightsStoreError(f"insights store {path}: {type(error).__name__}: {error}")
