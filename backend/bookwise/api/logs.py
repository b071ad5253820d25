"""Structured logs: one JSON object per line, every line carrying the request id of its request.

Every logger goes through the one JSON handler on the root logger (uvicorn's and the libraries' too),
so a traceback is a field of its line, never lines of its own.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from typing import IO, Any

from bookwise.logs import event_logger

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
# The client's own X-Request-ID, if it sent one: logged beside ours, for correlation only.
client_request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("client_request_id", default="")
log_event = event_logger("bookwise.api")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage().strip(),
        }
        request_id = getattr(record, "request_id", None) or request_id_var.get()
        if request_id:
            entry["request_id"] = request_id
        client_request_id = getattr(record, "client_request_id", None) or client_request_id_var.get()
        if client_request_id:
            entry["client_request_id"] = client_request_id
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["error_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def mark_logged(error: BaseException) -> None:
    """The app logged this error with its request id: the server's own report of it is a duplicate."""
    error.__dict__["_bookwise_logged"] = True


class _NotLoggedTwice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (error is not None and error.__dict__.get("_bookwise_logged"))


def configure_logging(level: str = "INFO", stream: IO[str] | None = None) -> logging.Handler:
    """Our loggers at ``level``, everything else at WARNING, all as JSON lines on ``stream`` (stderr)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(_NotLoggedTwice())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    for name in ("bookwise", "uvicorn", "uvicorn.error", "uvicorn.access"):
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
    logging.getLogger("bookwise").setLevel(level)
    return handler
