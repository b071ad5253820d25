"""The question log's writer: records go to the store from a background thread, never from a stream.

``QuestionLog.submit`` only puts a record on a bounded queue (never blocks, never raises): a slow or
broken database cannot delay or fail an answer. One thread per process writes the queue to the
store (what queued up while it wrote goes in one transaction), hashes the reader's address with the
day's salt there (the address is never part of a record), and deletes rows past the retention (at
start, then every ``PURGE_EVERY_S``). A store that fails is logged once per failure spell; the
records of that spell are dropped. A batch the store refuses while it is up is written again row by
row, so that one record it cannot take costs only that record (logged with its request id).

The day's salt is derived from a secret key that is not in the store (``ReaderKey``): whoever holds
only the store (a dump, a PostgreSQL operator) cannot try every address against the hashes.

Why a thread and a queue rather than ``anyio.to_thread`` per answer: the write would be awaited in
the stream's ``finally``, holding the response open until the database answered (seconds while a
PostgreSQL is unreachable), and shielded from the disconnect that cancels it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bookwise.errors import InsightsStoreError
from bookwise.insights.records import QuestionRecord, site_path
from bookwise.insights.store import Store
from bookwise.logs import event_logger
from bookwise.settings import InsightsSettings

REOPEN_EVERY_S = 5.0  # how often a store that would not open is tried again
PURGE_EVERY_S = 3600.0
QUEUE_SIZE = 10_000  # records waiting for the writer; beyond, new ones are dropped (counted, logged)
STOP_WAIT_S = 5.0  # at shutdown, the longest the writer may take to write what is queued
BATCH = 200  # records queued together are written in one transaction (one disk sync)

_log = logging.getLogger("bookwise.insights")
log_event = event_logger("bookwise.insights")


class StoreHandle:
    """The store of this process, opened on first use and tried again while it cannot be."""

    def __init__(self, opener: Callable[[], Store]) -> None:
        self._opener = opener
        self._store: Store | None = None
        self._error: InsightsStoreError | None = None
        self._tried_at = 0.0
        self._lock = threading.Lock()

    def get(self) -> Store:
        """The open store (blocking: a worker thread's call), or ``InsightsStoreError``."""
        with self._lock:
            if self._store is not None:
                return self._store
            if self._error is not None and time.monotonic() - self._tried_at < REOPEN_EVERY_S:
                raise self._error
            self._tried_at = time.monotonic()
            try:
                self._store = self._opener()
            except InsightsStoreError as error:
                self._error = error
                raise
            self._error = None
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            self._error = InsightsStoreError("the insights store is closed")
            self._tried_at = float("inf")  # never reopened


KEY_FILE = "reader-hash.key"  # in the data dir, when no key is set
KEY_MIN_CHARS = 32


class ReaderKey:
    """The secret each day's reader-hash salt is derived from (HMAC of the day), kept out of the store.

    Given (a setting, the same on every replica of one store), or else read from ``KEY_FILE`` in the
    data dir, created owner-only with a random key on first use. A data dir that cannot hold it
    leaves a random key in memory: hashes then differ between processes and restarts (readers are
    over-counted), never reversible from the store.
    """

    def __init__(self, secret: str | None = None, *, key_file: Path | None = None) -> None:
        if secret is not None and len(secret) < KEY_MIN_CHARS:
            raise ValueError(f"the reader hash key must be at least {KEY_MIN_CHARS} characters")
        self._key = secret.encode() if secret is not None else None
        self._file = key_file
        self._lock = threading.Lock()

    @classmethod
    def of(cls, settings: InsightsSettings) -> ReaderKey:
        """The key the settings give, else the data dir's key file."""
        secret = settings.reader_hash_key
        if secret is not None:
            return cls(secret.get_secret_value())
        return cls(key_file=settings.data_dir / KEY_FILE)

    def day_salt(self, day: date) -> str:
        return hmac.new(self._secret(), f"reader salt {day.isoformat()}".encode(), hashlib.sha256).hexdigest()

    def _secret(self) -> bytes:
        with self._lock:
            if self._key is None:
                self._key = self._load()
            return self._key

    def _load(self) -> bytes:
        if self._file is not None:
            try:
                return _key_file(self._file)
            except (OSError, ValueError) as error:
                log_event("reader_key_unavailable", logging.WARNING, path=str(self._file), error=str(error))
        return secrets.token_hex(32).encode()


def _key_file(path: Path) -> bytes:
    """The key in ``path``, made (0600, atomically: processes starting together agree) if missing."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as out:
                out.write(secrets.token_hex(32) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.link(fresh, path)  # fails if another process made it first: then theirs is read
        except FileExistsError:
            pass
        finally:
            fresh.unlink(missing_ok=True)
    key = path.read_text(encoding="ascii").strip()
    if len(key) < KEY_MIN_CHARS:
        raise ValueError(f"{path} holds no key (fewer than {KEY_MIN_CHARS} characters)")
    return key.encode()


def reader_hash(salt: str, address: str) -> str:
    """A keyed hash of the client's address: equal for one reader on one day, unlinkable across days."""
    return hashlib.blake2b(address.encode(), key=bytes.fromhex(salt), digest_size=8).hexdigest()


class QuestionLog:
    """Where the API hands the record of each answer it streamed (when the log is on)."""

    def __init__(
        self,
        store: StoreHandle,
        *,
        enabled: bool,
        retention_days: int,
        queue_size: int = QUEUE_SIZE,
        purge_every_s: float = PURGE_EVERY_S,
        reader_key: ReaderKey | None = None,
    ) -> None:
        self.enabled = enabled
        self.retention = timedelta(days=retention_days)
        self._store = store
        self._queue: queue.Queue[tuple[QuestionRecord, str | None] | None] = queue.Queue(queue_size)
        self._purge_every_s = purge_every_s
        self._thread: threading.Thread | None = None
        self._salt: tuple[date, str] | None = None
        self._key = reader_key or ReaderKey()
        self._failing = False
        self._dropped = 0

    def start(self) -> None:
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._write_forever, name="question-log", daemon=True)
            self._thread.start()

    def submit(self, record: QuestionRecord, address: str | None = None) -> None:
        """Queue ``record`` (``address``: the client's, hashed by the writer, never stored). Never blocks."""
        if not self.enabled:
            return
        try:
            self._queue.put_nowait((record, address))
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1 or self._dropped % 1000 == 0:
                log_event("question_log_full", logging.WARNING, dropped=self._dropped)

    def close(self) -> None:
        """Write what is queued (within ``STOP_WAIT_S``), then stop."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=STOP_WAIT_S)
        except queue.Full:
            pass
        self._thread.join(STOP_WAIT_S)
        self._thread = None

    def purge(self) -> int:
        """Delete the questions and ratings past the retention; how many went."""
        gone = self._store.get().forget_before(datetime.now(UTC) - self.retention)
        if gone:
            log_event("question_log_purged", rows=gone, retention_days=self.retention.days)
        return gone

    def _write_forever(self) -> None:
        next_purge = time.monotonic()
        while True:
            if time.monotonic() >= next_purge:
                next_purge = time.monotonic() + self._purge_every_s
                self._guarded(self.purge)
            try:
                item = self._queue.get(timeout=max(0.0, next_purge - time.monotonic()))
            except queue.Empty:
                continue
            batch, stop = self._batch(item)
            self._guarded(functools.partial(self._write, batch))
            if stop:
                return

    def _batch(
        self, first: tuple[QuestionRecord, str | None] | None
    ) -> tuple[list[tuple[QuestionRecord, str | None]], bool]:
        """``first`` and whatever else is queued now (up to ``BATCH``), and whether to stop after."""
        batch = []
        item = first
        while item is not None:
            batch.append(item)
            if len(batch) >= BATCH:
                return batch, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch, False
        return batch, True

    def _write(self, batch: list[tuple[QuestionRecord, str | None]]) -> None:
        if not batch:
            return
        store = self._store.get()
        records = [self._cleaned(record, address) for record, address in batch]
        try:
            store.add_questions(records)
        except Exception:
            if len(records) == 1:
                raise
            store.schema_version()  # down (raises: a failure spell), or up and refusing a record
            for record in records:
                self._write_one(store, record)

    def _write_one(self, store: Store, record: QuestionRecord) -> None:
        try:
            store.add_question(record)
        except Exception as error:
            store.schema_version()  # the store went down meanwhile: the rest waits for the spell
            cause = error.__cause__ or error  # the driver's class names the fault, never the row's text
            log_event(
                "question_log_record_dropped",
                logging.WARNING,
                request_id=record.request_id,
                error=type(cause).__name__,
            )

    def _cleaned(self, record: QuestionRecord, address: str | None) -> QuestionRecord:
        """The record as stored: its page a site path (no host, credentials, query or fragment), its
        reader hashed."""
        record = replace(record, page_url=site_path(record.page_url))
        if not address:
            return record
        return replace(record, reader=reader_hash(self._day_salt(record.created_at), address))

    def _day_salt(self, when: datetime) -> str:
        day = when.astimezone(UTC).date()
        if self._salt is None or self._salt[0] != day:
            self._salt = (day, self._key.day_salt(day))
        return self._salt[1]

    def _guarded(self, work: Callable[[], object]) -> None:
        try:
            work()
        except InsightsStoreError as error:
            if not self._failing:  # once per failure spell, not once per answer
                self._failing = True
                log_event("question_log_write_failed", logging.WARNING, error=error.message)
            return
        except Exception as error:  # a bug must not stop the writer: later answers are still logged
            _log.error("question log writer failed", exc_info=error)
            return
        if self._failing:
            self._failing = False
            log_event("question_log_recovered")
