"""Readers' ratings, stored durably in SQLite (one file in the data dir, WAL, one row per rating).

Bounded three ways, because anyone who can reach the API can post: a rating is accepted only for an
answer this process gave, once (its request id is remembered in a bounded in-memory set); the comment
has a length limit; and the database's used space is capped, the oldest ratings deleted first.

Why a remembered set rather than signed request ids: request ids are what the widget already sends
(a client may choose its own with ``X-Request-ID``, so signing would need a second id), "once per
answer" comes for free, and there is no secret to create and keep in the data dir. The cost: a rating
for an answer given before a restart, or by another replica, is refused.

A store that cannot be opened or written (a corrupt file, a read-only or full disk) turns feedback
off with ``feedback_unavailable`` (503), logged once; answers and search go on.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from bookwise.api.logs import log_event
from bookwise.errors import FeedbackUnavailableError, UnknownAnswerError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    request_id TEXT NOT NULL,
    rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    sources TEXT NOT NULL,
    comment TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_request ON feedback (request_id);
"""
WAL_LIMIT_BYTES = 4_000_000  # the WAL file is truncated to this after a checkpoint
PRUNE_SHARE = 0.1  # over the cap, this share of the oldest rows goes at once (not one delete per post)


class FeedbackStore:
    def __init__(self, path: Path, *, max_bytes: int = 50_000_000) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a rating acknowledged is a rating kept
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            self._db.executescript(_SCHEMA)
        except BaseException:
            self._db.close()
            raise

    def add(
        self,
        *,
        request_id: str,
        rating: str,
        question: str,
        answer: str,
        sources: list[dict[str, Any]],
        comment: str = "",
    ) -> int:
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO feedback (created_at, request_id, rating, question, answer, sources, comment)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (created, request_id, rating, question, answer, json.dumps(sources), comment),
            )
            self._prune()
        return int(cursor.lastrowid or 0)

    def used_bytes(self) -> int:
        """Pages in use; deleted rows' pages are reused, so the file stays near this once it peaked."""
        pages, free, size = (
            self._db.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("page_count", "freelist_count", "page_size")
        )
        return int((pages - free) * size)

    def _prune(self) -> None:
        while self.used_bytes() > self.max_bytes:
            rows = self._db.execute("SELECT count(*) FROM feedback").fetchone()[0]
            if rows <= 1:
                return
            self._db.execute(
                "DELETE FROM feedback WHERE id IN (SELECT id FROM feedback ORDER BY id LIMIT ?)",
                (max(1, int(rows * PRUNE_SHARE)),),
            )

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._lock:
            self._db.row_factory = sqlite3.Row
            rows = self._db.execute("SELECT * FROM feedback ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [{**dict(row), "sources": json.loads(row["sources"])} for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Feedback:
    """What the feedback endpoint needs: the answers that may be rated, and the store if it opened."""

    def __init__(self, path: Path, *, max_bytes: int, remembered: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.remembered = remembered
        self.store: FeedbackStore | None = None
        self._answers: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._failing = False

    def open(self) -> None:
        try:
            self.store = FeedbackStore(self.path, max_bytes=self.max_bytes)
        except (sqlite3.Error, OSError) as error:
            self._report("feedback_unavailable", error)

    def remember(self, request_id: str) -> None:
        with self._lock:
            self._answers[request_id] = None
            self._answers.move_to_end(request_id)
            while len(self._answers) > self.remembered:
                self._answers.popitem(last=False)

    def add(self, *, request_id: str, **fields: Any) -> int:
        """Store one rating for a remembered answer (blocking: run it in a worker thread)."""
        if self.store is None:
            raise FeedbackUnavailableError("feedback cannot be stored on this server right now")
        with self._lock:
            if request_id not in self._answers:
                raise UnknownAnswerError(
                    "no recent answer of this server has this request_id, or it was already rated"
                )
            del self._answers[request_id]  # taken now: a concurrent twin is refused
        try:
            stored = self.store.add(request_id=request_id, **fields)
        except (sqlite3.Error, OSError) as error:
            self.remember(request_id)  # not stored: the reader may try again
            self._report("feedback_write_failed", error)
            raise FeedbackUnavailableError("feedback cannot be stored on this server right now") from error
        self._failing = False
        return stored

    def _report(self, event: str, error: BaseException) -> None:
        if not self._failing:  # once per failure spell, not once per post
            self._failing = True
            log_event(event, logging.WARNING, path=str(self.path), error=f"{type(error).__name__}: {error}")

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
