"""Fabricated question-log records for the report's tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bookwise.insights.records import CitedSection, FeedbackRecord, QuestionRecord

DAY0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SITE = "https://book.example"


def question(text: str, day: int = 0, n: int = 0, **fields: Any) -> QuestionRecord:
    values: dict[str, Any] = {
        "created_at": DAY0 + timedelta(days=day, minutes=n),
        "request_id": fields.pop("request_id", f"r-{day}-{n}-{abs(hash(text)) % 10**8}"),
        "question": text,
        "mode": "normal",
        "outcome": "answered",
        "evidence": 0.9,
    }
    return QuestionRecord(**(values | fields))


def cite(page: str, anchor: str | None = None, title: str = "") -> CitedSection:
    url = f"{SITE}{page}" + (f"#{anchor}" if anchor else "")
    return CitedSection(url=url, heading_id=anchor, title=title or (anchor or page))


def vote(q: QuestionRecord, rating: str = "down", minutes: int = 1, **fields: Any) -> FeedbackRecord:
    values: dict[str, Any] = {
        "created_at": q.created_at + timedelta(minutes=minutes),
        "request_id": q.request_id,
        "rating": rating,
        "question": q.question,
        "page_url": q.page_url,
    }
    return FeedbackRecord(**(values | fields))
