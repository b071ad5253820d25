"""Log events: a short name and its fields, written as one JSON line by ``bookwise.api.logs``.

Each layer logs under its own logger (``bookwise.api``, ``bookwise.insights``), which the line names,
so an operator can filter by it; ``event_logger`` makes the function that logs under one.
"""

from __future__ import annotations

import logging
from typing import Protocol


class LogEvent(Protocol):
    def __call__(self, event: str, level: int = logging.INFO, **fields: object) -> None: ...


def event_logger(name: str) -> LogEvent:
    logger = logging.getLogger(name)

    def log_event(event: str, level: int = logging.INFO, **fields: object) -> None:
        logger.log(level, event, extra={"fields": fields})

    return log_event
