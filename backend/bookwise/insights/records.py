"""The rows of the question log and of readers' feedback, as the store returns them.

The API writes a ``QuestionRecord`` per answer it streamed (when the site owner turned the log on);
the report reads them back. No IP address or raw client identifier is ever part of a record: at most
``reader``, a salted hash whose salt rotates, to count distinct readers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from bookwise.generation.events import Outcome as Outcome  # an answer's, decided where it is streamed

Traffic = Literal["reader", "agent"]  # the widget / HTTP API, or an MCP tool call

# A search typed in the book's search box is logged as a row of its own, by the query the reader
# settled on (the widget reports it once: when a result is opened, the query asked, or the box
# closed): ``outcome`` "answered" when it had results, "not_covered" when none; ``cited`` the result
# the reader opened, empty when none was. One the reader turned into a question is ``SEARCH_ASKED``:
# the question's own answer is logged and judged as any other.
SEARCH_MODE = "instant_search"
SEARCH_ASKED = "instant_search_asked"
SEARCH_MODES = frozenset({SEARCH_MODE, SEARCH_ASKED})


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
    mode: str  # "normal", "selected_text", a study action's name, "search" (an MCP search: agent), or
    # one of SEARCH_MODES (the search box)
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

    @property
    def is_search(self) -> bool:
        """A search typed in the search box, not an answer."""
        return self.mode in SEARCH_MODES


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


_LEADING_SLASHES = re.compile(r"^[/\\]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def site_path(url: str | None) -> str | None:
    """The path of a reader's page URL, as the question log keeps it and the report links it.

    The widget sends the browser's full URL, which is the reader's to forge: its credentials
    (``user:password@``), query and fragment (``#access_token=``) may be secrets, and its host may be
    anyone's (a link planted in the authors' report). Only the path is kept, and read as a path of
    the book's own site; leading slashes (or backslashes) are one, so it never reads as another host.
    """
    if not url:
        return None
    url = _CONTROL.sub("", url).strip()
    try:
        path = urlsplit(url).path
    except ValueError:  # e.g. an unbalanced IPv6 bracket: no path can be trusted
        return None
    path = path.split(";", 1)[0]  # path parameters (";jsessionid=") are session tokens too
    return "/" + _LEADING_SLASHES.sub("", path)
