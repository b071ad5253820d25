"""The whole report from the log's records: tables, gap clusters, and its JSON, CSV and export forms."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from bookwise.insights.records import FeedbackRecord, LogFilter, QuestionRecord
from bookwise.insights.report import aggregate as agg
from bookwise.insights.report.gaps import (
    GAP_SIMILARITY,
    LOW_EVIDENCE,
    Embed,
    GapCluster,
    Search,
    UnknownNames,
    gap_clusters,
    gap_questions,
)

GAPS_SHOWN = 30


class Log(Protocol):
    """What the report reads from the store (``bookwise.insights.store.Store`` has both)."""

    def questions(self, log_filter: LogFilter) -> list[QuestionRecord]: ...

    def feedback(self, log_filter: LogFilter) -> list[FeedbackRecord]: ...


@dataclass(frozen=True)
class Report:
    generated_at: datetime
    log_filter: LogFilter
    summary: agg.Summary
    days: list[agg.Day]
    top_questions: list[agg.TopQuestion]
    cited_sections: list[agg.Cited]
    cited_pages: list[agg.Cited]
    highlight_pages: list[agg.ReadingPage]
    page_feedback: list[agg.PageFeedback]
    gaps: list[GapCluster]
    gap_questions: int  # answers (and searches of the search box) counted as gaps, before clustering
    similarity: float = GAP_SIMILARITY
    site_url: str = ""  # the site's address: relative page links are joined to it
    searches: agg.SearchSummary | None = None  # the search box's searches (None: the log has none)


def build_report(
    questions: Sequence[QuestionRecord],
    feedback: Sequence[FeedbackRecord],
    log_filter: LogFilter | None = None,
    *,
    embed: Embed,
    search: Search | None = None,
    similarity: float = GAP_SIMILARITY,
    low_evidence: float = LOW_EVIDENCE,
    now: datetime | None = None,
    site_url: str = "",
    unknown_names: UnknownNames | None = None,
) -> Report:
    """``embed`` is the index's embedder (``embed_documents``); ``search`` finds the closest sections;
    ``unknown_names`` the names in a question the book never mentions."""
    log_filter = log_filter or LogFilter()
    chosen, kept = agg.select(questions, feedback, log_filter)
    gaps = gap_questions(chosen, kept, low_evidence=low_evidence)
    # The search box's searches are gaps when left with no result opened; the answers' tables are
    # about answers.
    searches = [q for q in chosen if q.is_search]
    answers = [q for q in chosen if not q.is_search]
    return Report(
        generated_at=now or datetime.now(UTC),
        log_filter=log_filter,
        summary=agg.summary(answers, kept),
        days=agg.per_day(answers, log_filter),
        top_questions=agg.top_questions(answers),
        cited_sections=agg.cited_sections(answers),
        cited_pages=agg.cited_pages(answers),
        highlight_pages=agg.highlight_pages(answers),
        page_feedback=agg.page_feedback(answers, kept),
        gaps=gap_clusters(
            gaps, embed, search, threshold=similarity, limit=GAPS_SHOWN, unknown_names=unknown_names
        ),
        gap_questions=len(gaps),
        similarity=similarity,
        site_url=site_url,
        searches=agg.search_summary(searches) if searches else None,
    )


def report_from_log(log: Log, log_filter: LogFilter, *, embed: Embed, search: Search | None) -> Report:
    return build_report(
        log.questions(log_filter), log.feedback(log_filter), log_filter, embed=embed, search=search
    )


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "isoformat"):  # date
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def report_dict(report: Report) -> dict[str, Any]:
    """The report as plain JSON values (the `--json` output)."""
    data: dict[str, Any] = _plain(asdict(report))
    s = report.summary
    data["summary"] |= {"feedback_rate": s.feedback_rate, "down_rate": s.down_rate}
    if report.searches is not None:
        data["searches"]["open_rate"] = report.searches.open_rate
    for row, page in zip(data["page_feedback"], report.page_feedback, strict=True):
        row |= {"feedback_rate": page.feedback_rate, "down_rate": page.down_rate}
    for row, reading in zip(data["highlight_pages"], report.highlight_pages, strict=True):
        row["total"] = reading.total
    return data


def report_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False)


CSV_COLUMNS = [
    "created_at", "question", "mode", "outcome", "traffic", "page_url", "version", "locale",
    "evidence", "cited", "ms_total", "rating", "reason", "comment",
]  # fmt: skip


def report_csv(
    questions: Sequence[QuestionRecord], feedback: Sequence[FeedbackRecord], log_filter: LogFilter
) -> str:
    """The covered log, one answer a row with its feedback (for a spreadsheet; no reader hash)."""
    chosen, kept = agg.select(questions, feedback, log_filter)
    votes = {f.request_id: f for f in agg.latest_per_answer(kept)}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for q in sorted(chosen, key=lambda q: q.created_at):
        vote = votes.get(q.request_id)
        evidence = "" if q.evidence is None else f"{q.evidence:.3f}"
        ms_total = "" if q.ms_total is None else f"{q.ms_total:.0f}"
        cited = " ".join(c.url for c in q.cited)
        rating, reason, comment = (vote.rating, vote.reason or "", vote.comment) if vote else ("", "", "")
        text = [q.question, q.mode, q.outcome, q.traffic, q.page_url or "", q.version or "", q.locale or ""]
        writer.writerow(
            [q.created_at.isoformat(), *map(_cell, text), evidence, _cell(cited), ms_total]
            + [_cell(rating), _cell(reason), _cell(comment)]
        )
    return out.getvalue()


def _cell(text: str) -> str:
    """A text cell a spreadsheet will not run: one starting with = + - @, a tab or a carriage return
    is a formula to some, and every text cell can hold a reader's input (question, page, version,
    locale, comment), so every one goes through here."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def export_questions(
    questions: Sequence[QuestionRecord], feedback: Sequence[FeedbackRecord], log_filter: LogFilter
) -> list[dict[str, Any]]:
    """Thumbs-down and not-covered questions as `bookwise eval` questions.jsonl rows, to be labelled.

    A not-covered question is written as ``unanswerable`` (true until the book covers it: then give
    it gold sections and a type). A voted-down answer's question is written ``factoid`` with no gold,
    which `bookwise eval` refuses until an author adds the gold sections: an unlabelled row cannot
    slip into the CI gate. Duplicates (same words) are written once.
    """
    chosen, kept = agg.select(questions, feedback, log_filter)
    chosen = [q for q in chosen if not q.is_search]  # a typed search is no question to label
    rows: dict[str, dict[str, Any]] = {}
    for gap in sorted(gap_questions(chosen, kept, low_evidence=0.0), key=lambda g: g.created_at):
        key = agg.normalize(gap.question)
        row = rows.get(key)
        if row is None:
            digest = hashlib.sha256(key.encode()).hexdigest()[:10]
            row = rows[key] = {
                "id": f"insights-{digest}",
                "question": gap.question.strip(),
                "type": "unanswerable",
                "gold": [],
                "insights": {"asked": 0, "not_covered": 0, "thumbs_down": 0, "pages": []},
            }
        seen = row["insights"]
        seen["asked"] += 1
        for reason in gap.reasons:
            seen[reason] = seen.get(reason, 0) + 1
        page = agg.page_of(gap.page_url)
        if page and page not in seen["pages"]:
            seen["pages"].append(page)
    for row in rows.values():
        if row["insights"]["thumbs_down"]:
            row["type"] = "factoid"  # answered but voted down: needs its gold sections
            row["insights"]["todo"] = "add the gold sections (doc_path, heading) or set type unanswerable"
    return sorted(rows.values(), key=lambda r: (-r["insights"]["asked"], r["id"]))


def export_jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
