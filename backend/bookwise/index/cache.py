"""Embedding cache: (model, text hash) → vector, in SQLite, so unchanged text is never embedded twice.

The cache is derived data: a corrupt file is deleted and rebuilt with a warning (its vectors are
embedded again), never a crash. A full disk is reported as ``disk_full``.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Iterable
from pathlib import Path

from bookwise.errors import StoreUnavailableError
from bookwise.index.faults import MB, disk_full_error, free_bytes, is_disk_full, warn

_CORRUPT = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def _code(exc: sqlite3.DatabaseError) -> int:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one


def _is_full(exc: sqlite3.DatabaseError, path: Path) -> bool:
    if _code(exc) == sqlite3.SQLITE_FULL or is_disk_full(exc):
        return True
    # Creating the WAL or its shared-memory file on a full disk is reported as a plain I/O error.
    return _code(exc) == sqlite3.SQLITE_IOERR and free_bytes(path.parent) < MB


class SqliteEmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            self._db = self._rebuild(exc, None)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors"
                " (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash))"
            )
            db.execute("SELECT hash FROM vectors LIMIT 1").fetchall()
        except BaseException:
            db.close()
            raise
        return db

    def _rebuild(self, exc: sqlite3.DatabaseError, db: sqlite3.Connection | None) -> sqlite3.Connection:
        """A fresh cache in place of a corrupt one; any other error raised as a clear one."""
        if _is_full(exc, self._path):
            raise disk_full_error(self._path, exc) from exc
        if _code(exc) not in _CORRUPT:  # locked, unreadable: not ours to delete
            raise StoreUnavailableError(
                f"the embedding cache {self._path} cannot be used ({exc}): check the data dir's "
                "permissions, or that no other program holds the file"
            ) from exc
        warn(
            "embedding_cache_corrupt",
            f"the embedding cache {self._path} is unreadable ({exc}): deleted and rebuilt, "
            "so its vectors are embedded again",
        )
        if db is not None:
            db.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self._path}{suffix}").unlink(missing_ok=True)
        return self._open()

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, list[float]]:
        wanted = list(set(hashes))
        found: dict[str, list[float]] = {}
        try:
            for start in range(0, len(wanted), 500):
                batch = wanted[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})",
                    [model, *batch],
                )
                for digest, blob in rows:
                    found[digest] = array("f", blob).tolist()
        except sqlite3.DatabaseError as exc:  # corrupt past its header: nothing in it can be trusted
            self._db = self._rebuild(exc, self._db)
            return {}
        return found

    def put_many(self, model: str, items: dict[str, list[float]]) -> None:
        rows = [(model, digest, array("f", vector).tobytes()) for digest, vector in items.items()]
        try:
            self._insert(rows)
        except sqlite3.DatabaseError as exc:
            self._db = self._rebuild(exc, self._db)
            self._insert(rows)

    def _insert(self, rows: list[tuple[str, str, bytes]]) -> None:
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
        except sqlite3.OperationalError as exc:
            if _is_full(exc, self._path):
                raise disk_full_error(self._path, exc) from exc
            raise

    def close(self) -> None:
        self._db.close()
