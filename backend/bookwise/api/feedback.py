"""Readers' ratings, stored durably in SQLite (one file in the data dir, WAL, one row per rating)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

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


class FeedbackStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # a rating acknowledged is a rating kept
        self._db.executescript(_SCHEMA)

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
        return int(cursor.lastrowid or 0)

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._lock:
            self._db.row_factory = sqlite3.Row
            rows = self._db.execute("SELECT * FROM feedback ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [{**dict(row), "sources": json.loads(row["sources"])} for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
