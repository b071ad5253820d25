"""The rows of the question log and of readers' feedback, as the store returns them.

The API writes a ``QuestionRecord`` per answer it streamed (when the site owner turned the log on);
the report reads them back. No IP address or raw client identifier is ever part of a record: at most
``reader``, a salted hash whose salt rotates, to count distinct readers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Outcome = Literal["answered", "not_covered", "not_in_selection", "error", "client_disconnected"]
Traffic = Literal["reader", "agent"]  # the widget / HTTP API, or an MCP tool call


@dataclass(frozen=True)
class CitedSection:
    url: str
    heading_id: str | None
    title: str


@dataclass(frozen=True)
class QuestionRecord:
    created_at: datetime  # UTC
    request_id: str  # links the answer to its feedback
    question: str
    mode: str  # "normal", "selected_text", a study action's name, or "search" (an MCP search: agent)
    outcome: Outcome
    traffic: Traffic = "reader"
    page_url: str | None = None
    version: str | None = None
    locale: str | None = None
    evidence: float | None = None  # the retrieval evidence score the answer was decided on
    cited: tuple[CitedSection, ...] = ()
    error_code: str | None = None
    ms_to_sources: float | None = None
    ms_to_first_token: float | None = None
    ms_total: float | None = None
    reader: str | None = None  # salted, rotating hash; never an address
    id: int | None = None  # assigned by the store


@dataclass(frozen=True)
class FeedbackRecord:
    created_at: datetime  # UTC
    request_id: str
    rating: Literal["up", "down"]
    reason: str | None = None  # incorrect, not_what_i_asked, unclear, other
    comment: str = ""
    question: str = ""
    page_url: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    id: int | None = None
    answer: str = ""  # the rated answer's text, as the widget sent it back
    sources: tuple[dict[str, object], ...] = ()  # the rated answer's sources, as the widget sent them


@dataclass(frozen=True)
class LogFilter:
    """What the report covers: a date range (inclusive start, exclusive end) and version/locale."""

    since: datetime | None = None
    until: datetime | None = None
    version: str | None = None
    locale: str | None = None
