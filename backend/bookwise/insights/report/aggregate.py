"""The report's tables: pure functions over the log's records, nothing read or written.

Every function takes records already chosen by ``select`` (the report's date range, version and
locale), so the store may filter in SQL or not at all: the report applies the same filter again.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from urllib.parse import urldefrag, urlsplit

from bookwise.insights.records import SEARCH_ASKED, SEARCH_MODE, FeedbackRecord, LogFilter, QuestionRecord

OUTCOMES = ("answered", "not_covered", "not_in_selection", "error", "client_disconnected")
TOP = 20  # rows per ranked table
MAX_DAYS = 3660  # a per-day series longer than ten years is a wrong date, not a log


def _in_range(record: QuestionRecord | FeedbackRecord, log_filter: LogFilter) -> bool:
    if log_filter.since is not None and record.created_at < log_filter.since:
        return False
    return log_filter.until is None or record.created_at < log_filter.until


def select(
    questions: Iterable[QuestionRecord], feedback: Iterable[FeedbackRecord], log_filter: LogFilter
) -> tuple[list[QuestionRecord], list[FeedbackRecord]]:
    """The questions and feedback the report covers.

    Feedback carries no version or locale: with either filter set, only feedback on a chosen
    question is kept (matched by request id).
    """
    chosen = [
        q
        for q in questions
        if _in_range(q, log_filter)
        and (log_filter.version is None or q.version == log_filter.version)
        and (log_filter.locale is None or q.locale == log_filter.locale)
    ]
    ids = {q.request_id for q in chosen}
    by_book = log_filter.version is not None or log_filter.locale is not None
    kept = [f for f in feedback if _in_range(f, log_filter) and (not by_book or f.request_id in ids)]
    return chosen, kept


_PUNCT = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")


def normalize(question: str) -> str:
    """The key duplicates share: case, accents' composed form, punctuation and spacing ignored."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


def page_of(url: str | None) -> str | None:
    """The page a section or page URL is on: no fragment, no trailing slash (but the site's root)."""
    if not url:
        return None
    page = urldefrag(url).url
    return page[:-1] if page.endswith("/") and urlsplit(page).path not in ("", "/") else page


@dataclass(frozen=True)
class Day:
    day: date
    total: int
    outcomes: dict[str, int]
    agent: int  # of total, asked by agents (MCP)


def per_day(questions: Sequence[QuestionRecord], log_filter: LogFilter | None = None) -> list[Day]:
    """One row per day from the first to the last (or the filter's bounds), empty days included."""
    counts: dict[date, Counter[str]] = defaultdict(Counter)
    agents: Counter[date] = Counter()
    for q in questions:
        day = q.created_at.date()
        counts[day][q.outcome] += 1
        agents[day] += q.traffic == "agent"
    if not counts:
        return []
    log_filter = log_filter or LogFilter()
    first = log_filter.since.date() if log_filter.since else min(counts)
    last = (log_filter.until - timedelta(microseconds=1)).date() if log_filter.until else max(counts)
    first, last = min(first, min(counts)), max(last, max(counts))
    if (last - first).days > MAX_DAYS:
        first = last - timedelta(days=MAX_DAYS)
    days = []
    for n in range((last - first).days + 1):
        day = first + timedelta(days=n)
        found = counts.get(day, Counter())
        outcomes = {o: found[o] for o in OUTCOMES}
        days.append(Day(day, sum(found.values()), outcomes, agents[day]))
    return days


@dataclass(frozen=True)
class TopQuestion:
    question: str  # the phrasing asked most often
    count: int
    not_covered: int
    pages: int  # distinct pages it was asked from


def top_questions(questions: Sequence[QuestionRecord], limit: int = TOP) -> list[TopQuestion]:
    """The most asked questions, duplicates (same words, any case or punctuation) merged."""
    groups: dict[str, list[QuestionRecord]] = defaultdict(list)
    for q in questions:
        key = normalize(q.question)
        if key:
            groups[key].append(q)
    rows = []
    for members in groups.values():
        phrasing = Counter(q.question.strip() for q in members).most_common(1)[0][0]
        rows.append(
            TopQuestion(
                question=phrasing,
                count=len(members),
                not_covered=sum(q.outcome == "not_covered" for q in members),
                pages=len({q.page_url for q in members if q.page_url}),
            )
        )
    rows.sort(key=lambda r: (-r.count, r.question.casefold()))
    return rows[:limit]


@dataclass(frozen=True)
class Cited:
    url: str
    title: str
    count: int  # answers that cited it


def cited_sections(questions: Sequence[QuestionRecord], limit: int = TOP) -> list[Cited]:
    counts: Counter[str] = Counter()
    titles: dict[str, str] = {}
    for q in questions:
        for url in {c.url for c in q.cited}:
            counts[url] += 1
        for c in q.cited:
            titles.setdefault(c.url, c.title or c.url)
    return [Cited(url, titles[url], n) for url, n in _ranked(counts, limit)]


def cited_pages(questions: Sequence[QuestionRecord], limit: int = TOP) -> list[Cited]:
    """Pages by the answers citing at least one of their sections (an answer counts once per page)."""
    counts: Counter[str] = Counter()
    titles: dict[str, str] = {}
    for q in questions:
        pages = {page_of(c.url): c for c in q.cited}
        for page, c in pages.items():
            if page:
                counts[page] += 1
                # A section's title names the page for an intro; otherwise the page is its own name.
                titles.setdefault(page, c.title if page_of(c.url) == c.url else page)
    return [Cited(url, titles[url], n) for url, n in _ranked(counts, limit)]


def _ranked(counts: Counter[str], limit: int) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


@dataclass(frozen=True)
class ReadingPage:
    page: str
    selected_text: int  # questions about a highlighted passage
    study: int  # study actions (explain, quiz me, …)
    study_actions: dict[str, int]

    @property
    def total(self) -> int:
        return self.selected_text + self.study


def highlight_pages(questions: Sequence[QuestionRecord], limit: int = TOP) -> list[ReadingPage]:
    """Pages where readers highlight a passage and ask, or use a study action, most."""
    selected: Counter[str] = Counter()
    actions: dict[str, Counter[str]] = defaultdict(Counter)
    for q in questions:
        page = page_of(q.page_url)
        if page is None or q.mode == "normal" or q.traffic == "agent":  # an agent's tool call reads no page
            continue
        if q.mode == "selected_text":
            selected[page] += 1
        else:
            actions[page][q.mode] += 1
    rows = [
        ReadingPage(page, selected[page], sum(actions[page].values()), dict(actions[page]))
        for page in set(selected) | set(actions)
    ]
    rows.sort(key=lambda r: (-r.total, r.page))
    return rows[:limit]


@dataclass(frozen=True)
class PageFeedback:
    page: str
    questions: int
    feedback: int
    down: int

    @property
    def feedback_rate(self) -> float | None:
        return self.feedback / self.questions if self.questions else None

    @property
    def down_rate(self) -> float | None:
        """Thumbs down among the feedback given (not among all answers)."""
        return self.down / self.feedback if self.feedback else None


def page_feedback(
    questions: Sequence[QuestionRecord], feedback: Sequence[FeedbackRecord], limit: int = TOP
) -> list[PageFeedback]:
    """Per page the readers asked from: how many answers got feedback, and how many a thumbs down.

    Feedback is matched to its answer by request id; feedback whose answer is not in the log
    (logged before the log was on) counts on the page it names.
    """
    asked: Counter[str] = Counter()
    page_by_request: dict[str, str] = {}
    for q in questions:
        page = page_of(q.page_url)
        if page is not None:
            asked[page] += 1
            page_by_request[q.request_id] = page
    given: Counter[str] = Counter()
    down: Counter[str] = Counter()
    for f in latest_per_answer(feedback):
        page = page_by_request.get(f.request_id) or page_of(f.page_url)
        if page is None:
            continue
        given[page] += 1
        down[page] += f.rating == "down"
    rows = [PageFeedback(p, asked[p], given[p], down[p]) for p in set(asked) | set(given)]
    rows.sort(key=lambda r: (-r.down, -r.feedback, -r.questions, r.page))
    return rows[:limit]


def latest_per_answer(feedback: Sequence[FeedbackRecord]) -> list[FeedbackRecord]:
    """A reader who changes their mind leaves two rows: the last one counts."""
    latest: dict[str, FeedbackRecord] = {}
    for f in sorted(feedback, key=lambda f: f.created_at):
        latest[f.request_id or f"id-{f.id}-{f.created_at.isoformat()}"] = f
    return list(latest.values())


@dataclass(frozen=True)
class Summary:
    questions: int
    readers: int | None  # distinct reader hashes (None when the log keeps none)
    outcomes: dict[str, int]
    traffic: dict[str, int]  # reader (widget / HTTP API) vs agent (MCP)
    modes: dict[str, int]
    feedback: int
    thumbs_down: int
    median_ms_total: float | None
    first: str | None = None
    last: str | None = None

    @property
    def feedback_rate(self) -> float | None:
        return self.feedback / self.questions if self.questions else None

    @property
    def down_rate(self) -> float | None:
        return self.thumbs_down / self.feedback if self.feedback else None


def summary(questions: Sequence[QuestionRecord], feedback: Sequence[FeedbackRecord]) -> Summary:
    outcomes: Counter[str] = Counter(q.outcome for q in questions)
    latest = latest_per_answer(feedback)
    readers = {q.reader for q in questions if q.reader}
    timings = sorted(q.ms_total for q in questions if q.ms_total is not None)
    times = sorted(q.created_at for q in questions)
    return Summary(
        questions=len(questions),
        readers=len(readers) if readers else None,
        outcomes={o: outcomes[o] for o in OUTCOMES},
        traffic={t: sum(q.traffic == t for q in questions) for t in ("reader", "agent")},
        modes=dict(Counter(q.mode for q in questions).most_common()),
        feedback=len(latest),
        thumbs_down=sum(f.rating == "down" for f in latest),
        median_ms_total=timings[len(timings) // 2] if timings else None,
        first=times[0].isoformat() if times else None,
        last=times[-1].isoformat() if times else None,
    )


@dataclass(frozen=True)
class SearchSummary:
    """The search box: searches the readers settled on, and how they ended."""

    searches: int
    opened: int  # a result was opened
    asked: int  # the query was asked to the chat instead
    no_results: int
    unopened: list[TopQuestion]  # the most searched queries that ended with no result opened

    @property
    def open_rate(self) -> float | None:
        return self.opened / self.searches if self.searches else None


def search_summary(searches: Sequence[QuestionRecord], limit: int = TOP) -> SearchSummary:
    """``searches``: the records of the search box (``QuestionRecord.is_search``)."""
    plain = [q for q in searches if q.mode == SEARCH_MODE]
    unopened = [q for q in plain if not q.cited]
    return SearchSummary(
        searches=len(searches),
        opened=sum(bool(q.cited) for q in plain),
        asked=sum(q.mode == SEARCH_ASKED for q in searches),
        no_results=sum(q.outcome == "not_covered" for q in plain),
        unopened=top_questions(unopened, limit),
    )
