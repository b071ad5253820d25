"""Embedding cache: (model, text hash) → vector, in SQLite, so unchanged text is never embedded twice."""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Iterable
from pathlib import Path


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors"
            " (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash))"
        )

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, list[float]]:
        wanted = list(set(hashes))
        found: dict[str, list[float]] = {}
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})",
                [model, *batch],
            )
            for digest, blob in rows:
                found[digest] = array("f", blob).tolist()
        return found

    def put_many(self, model: str, items: dict[str, list[float]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model, digest, array("f", vector).tobytes()) for digest, vector in items.items()],
            )

    def close(self) -> None:
        self._db.close()
