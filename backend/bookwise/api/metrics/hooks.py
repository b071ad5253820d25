"""What the API calls to be counted: ``Metrics``, its one handle on the metrics."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from bookwise.api.limits import StreamSlots
from bookwise.api.metrics.access import check_metrics_config
from bookwise.api.metrics.collectors import (
    Collectors,
    LLMCounter,
    MeteredStreamSlots,
    label_code,
    shared_collectors,
)
from bookwise.api.metrics.middleware import Endpoint, MetricsMiddleware
from bookwise.generation.events import AnswerEvent, AnswerTrace, Sources, Token
from bookwise.settings import ServedMetricsSettings


class Metrics:
    """The API's metrics. When off, every hook is a no-op and prometheus-client is never imported."""

    def __init__(self, settings: ServedMetricsSettings) -> None:
        check_metrics_config(settings)
        self.enabled = settings.metrics
        token = settings.metrics_token
        self._token = token.get_secret_value().encode() if token is not None else None
        self._on_api_port = settings.metrics and settings.metrics_port is None
        self._collectors = shared_collectors() if self.enabled else None
        self._generation: str | None = None
        self._generation_lock = threading.Lock()
        if self._collectors is not None:
            self._collectors.slots_max.set(settings.max_streams)

    @property
    def llm_observer(self) -> LLMCounter | None:
        return LLMCounter(self._collectors) if self._collectors is not None else None

    def stream_slots(self, per_client: int, total: int, per_address: int | None = None) -> StreamSlots:
        if self._collectors is None:
            return StreamSlots(per_client, total, per_address)
        return MeteredStreamSlots(per_client, total, per_address, self._collectors.slots_in_use)

    def watch(self, events: AsyncIterator[AnswerEvent], *, started: float) -> AsyncIterator[AnswerEvent]:
        """``events`` (an answer stream) unchanged, counted and timed from ``started`` (monotonic)."""
        if self._collectors is None:
            return events
        return self._watched(self._collectors, events, started)

    @staticmethod
    async def _watched(
        collectors: Collectors, events: AsyncIterator[AnswerEvent], started: float
    ) -> AsyncIterator[AnswerEvent]:
        seen, plan = AnswerTrace(), "unknown"
        try:
            async for event in events:
                seen.add(event)
                plan = seen.meta.answer_mode if seen.meta is not None else "unknown"
                if isinstance(event, Sources):
                    collectors.time_to_sources.labels(plan=plan).observe(time.monotonic() - started)
                elif isinstance(event, Token) and len(seen.tokens) == 1:
                    collectors.time_to_first_token.labels(plan=plan).observe(time.monotonic() - started)
                yield event
        finally:
            answer = seen.summary
            kind, outcome = answer.kind or "none", label_code(answer.ending)
            collectors.answers.labels(plan=plan, answer_kind=kind, outcome=outcome).inc()

    def install(self, app: Any, *, generation: Callable[[], str | None]) -> None:
        """Add the counting middleware (and ``/metrics`` on the API's port): call it last, so that it is
        outermost and sees every answer. ``generation`` names the index generation this process serves."""
        if self._collectors is None:
            return
        endpoint = None
        if self._on_api_port:
            endpoint = Endpoint(self._token, lambda: self.note_generation(generation()))
        app.add_middleware(
            MetricsMiddleware,
            collectors=self._collectors,
            endpoint=endpoint,
            generation=generation,
            note_generation=self.note_generation,
        )

    def note_generation(self, generation: str | None) -> None:
        if self._collectors is None or generation == self._generation:
            return
        with self._generation_lock:
            gauge = self._collectors.index_generation
            if self._generation is not None:
                gauge.labels(generation=self._generation).set(0)
            if generation is not None:
                gauge.labels(generation=generation).set(1)
            self._generation = generation
