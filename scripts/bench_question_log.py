"""What the question log costs: a reader's share (queueing a record) and the writer's pace per engine.

    PYTHONPATH=backend python scripts/bench_question_log.py [--records 2000]

For SQLite (a temporary file) and PostgreSQL (a cluster started here on loopback, as the tests
start theirs): the time ``QuestionLog.submit`` takes on the caller's side (what an answer's stream
pays), then how long the writer thread takes to store them all (hashed reader, one row each), and
the time to read them back as the report does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bookwise.insights.factory import open_insights_store
from bookwise.insights.log import QuestionLog, StoreHandle
from bookwise.insights.records import CitedSection, LogFilter, QuestionRecord


def record(n: int) -> QuestionRecord:
    return QuestionRecord(
        created_at=datetime.now(UTC),
        request_id=f"r{n:08d}",
        question=f"How do I configure the widget for case {n}?",
        mode="normal",
        outcome="answered",
        page_url="/docs/setup",
        evidence=0.5,
        cited=(
            CitedSection("/docs/setup", "install", "Install"),
            CitedSection("/docs/widget", None, "Widget"),
        ),
        ms_total=120.0,
    )


def measure(name: str, target: str | Path, records: int) -> None:
    handle = StoreHandle(lambda: open_insights_store(target))
    handle.get()  # opened and migrated before timing
    log = QuestionLog(handle, enabled=True, retention_days=90, queue_size=records + 1)
    submit_us: list[float] = []
    started = time.perf_counter()
    log.start()
    for n in range(records):
        before = time.perf_counter()
        log.submit(record(n), f"198.51.100.{n % 250}")
        submit_us.append((time.perf_counter() - before) * 1e6)
    while len(handle.get().questions(LogFilter())) < records:
        time.sleep(0.05)
    written_s = time.perf_counter() - started
    log.close()
    before = time.perf_counter()
    rows = len(handle.get().questions(LogFilter()))
    read_ms = (time.perf_counter() - before) * 1000
    handle.close()
    p99 = statistics.quantiles(submit_us, n=100)[98]
    print(
        f"{name:10} submit p50 {statistics.median(submit_us):6.1f} µs  p99 {p99:6.1f} µs | "
        f"{records} rows written in {written_s:5.2f} s ({records / written_s:7.0f}/s) | "
        f"read back {rows} in {read_ms:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2000)
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        measure("sqlite", tmp / "insights.sqlite3", args.records)
        from pgserver import running_postgres

        server = stack.enter_context(running_postgres())
        measure("postgresql", server.create_database(), args.records)


if __name__ == "__main__":
    main()
