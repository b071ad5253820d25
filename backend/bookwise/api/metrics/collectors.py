"""What is counted: the collectors (made once per process, after the metrics directory is set), and
the small adapters that feed them (the stream-slot gauge, the model's failures and retries)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bookwise.api.limits import StreamSlots

if TYPE_CHECKING:  # at run time these come later (prometheus_client) or are not needed
    from prometheus_client import Counter, Gauge, Histogram

    from bookwise.generation.llm import Call

# Time to `sources` is retrieval (target: p95 ≤ 150 ms at 50 streams); to the first token, a model.
SOURCES_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
FIRST_TOKEN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_CODE = re.compile(r"[a-z][a-z0-9_]{0,47}")  # an error code of errors.py: labels stay a small set


@dataclass(frozen=True)
class Collectors:
    requests: Counter
    answers: Counter
    time_to_sources: Histogram
    time_to_first_token: Histogram
    llm_errors: Counter
    llm_retries: Counter
    slots_in_use: Gauge
    slots_max: Gauge
    index_generation: Gauge


@functools.cache
def shared_collectors() -> Collectors:
    # Imported here, not at the top: see the module's docstring.
    from prometheus_client import Counter, Gauge, Histogram

    return Collectors(
        requests=Counter(
            "bookwise_http_requests",
            "HTTP requests answered, by route template, method, status and error code (`ok` below 400).",
            ["route", "method", "status", "code"],
        ),
        answers=Counter(
            "bookwise_answers",
            "Answer streams, by plan (meta's answer_mode), answer kind (done's answer_kind, `none` "
            "without a done event) and outcome (`done`, the error event's code, or client_disconnected).",
            ["plan", "answer_kind", "outcome"],
        ),
        time_to_sources=Histogram(
            "bookwise_time_to_sources_seconds",
            "From the start of an answer's preparation to its `sources` event, by plan.",
            ["plan"],
            buckets=SOURCES_BUCKETS,
        ),
        time_to_first_token=Histogram(
            "bookwise_time_to_first_token_seconds",
            "From the start of an answer's preparation to its first `token` event, by plan.",
            ["plan"],
            buckets=FIRST_TOKEN_BUCKETS,
        ),
        llm_errors=Counter(
            "bookwise_llm_errors",
            "Failed calls to the language model (after retries), by call (answer, rewrite) and code.",
            ["call", "code"],
        ),
        llm_retries=Counter(
            "bookwise_llm_retries",
            "Attempts at an answer retried before its first token, by the failure's code.",
            ["code"],
        ),
        slots_in_use=Gauge(
            "bookwise_stream_slots_in_use",
            "Answer streams open (being prepared or streaming), all processes together.",
            multiprocess_mode="livesum",
        ),
        slots_max=Gauge(
            "bookwise_stream_slots_max",
            "Answer streams the processes accept at once (BOOKWISE_MAX_STREAMS per process).",
            multiprocess_mode="livesum",
        ),
        index_generation=Gauge(
            "bookwise_index_generation_info",
            "1 for each index generation a live process serves (two during a switch), else 0.",
            ["generation"],
            multiprocess_mode="livemax",
        ),
    )


def label_code(value: object) -> str:
    return value if isinstance(value, str) and _CODE.fullmatch(value) else "other"


class MeteredStreamSlots(StreamSlots):
    """Stream slots whose count is also a gauge (each process adds its own: ``livesum``)."""

    def __init__(self, per_client: int, total: int, per_address: int | None, gauge: Gauge) -> None:
        super().__init__(per_client, total, per_address)
        self._gauge = gauge

    def acquire(self, client: str, reader: str = "") -> None:
        super().acquire(client, reader)
        self._gauge.inc()

    def release(self, client: str, reader: str = "") -> None:
        before = self.active
        super().release(client, reader)
        if self.active < before:
            self._gauge.dec()


class LLMCounter:
    """The ``LLMObserver`` generation calls: its failures and retries as counters."""

    def __init__(self, collectors: Collectors) -> None:
        self._collectors = collectors

    def retried(self, code: str) -> None:
        self._collectors.llm_retries.labels(code=code).inc()

    def failed(self, call: Call, code: str) -> None:
        self._collectors.llm_errors.labels(call=call, code=code).inc()
